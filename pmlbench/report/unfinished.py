"""Units without results (failed, timed out, not applicable), placed in a report's cells:
the dataset, noise level and method label under which their results would appear."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from pmlbench.protocol.experiment import NATURAL_NOISE
from pmlbench.report.prepare import Prepared, format_value, is_missing
from pmlbench.runner.format import NOISE_PREFIX, PARAM_PREFIX, columns_with_prefix
from pmlbench.runner.status import Status

STATUS_NOT_APPLICABLE = str(Status.NOT_APPLICABLE)
UNFINISHED_COLUMNS = ["dataset", "level", "method", "split", "status", "error", "unit", "file"]


def _params_key(row: dict[str, Any], prefix: str) -> tuple[tuple[str, str], ...]:
    """The set parameters of a row under ``prefix`` (noise_ or param_), as comparable text."""
    return tuple(
        (column, format_value(row[column]))
        for column in sorted(columns_with_prefix(row, prefix))
        if not is_missing(row[column])
    )


def _matches(value: Any, wanted: str) -> bool:
    try:
        number = format_value(float(wanted))
    except ValueError:
        number = wanted
    return format_value(value) == number or str(value) == wanted


def _where_keeps(row: dict[str, Any], where: Mapping[str, str | Sequence[str]]) -> bool:
    """``--where`` applied to a unit without results (columns it lacks do not filter it;
    several values of one column keep any of them)."""
    for column, given in where.items():
        if column not in row:
            continue
        value = row[column]
        if not any(
            _matches(value, wanted) for wanted in ([given] if isinstance(given, str) else given)
        ):
            return False
    return True


def unfinished_where(
    failures: pd.DataFrame, where: Mapping[str, str | Sequence[str]]
) -> pd.DataFrame:
    """The units of ``failures`` that ``--where`` keeps."""
    if not where or failures.empty:
        return failures
    return failures[[_where_keeps(row, where) for row in failures.to_dict("records")]]


def place_unfinished(prepared: Prepared, failures: pd.DataFrame) -> pd.DataFrame:
    """Every unit without results (``failures`` of the loader, already narrowed by
    :func:`unfinished_where`), placed in the report's cells
    where its columns allow: dataset, level and method label as in Table 2 (None when it
    cannot be placed, e.g. a damaged store file), split, status, error (or reason), the
    unit's description and its file's name.

    A unit that did not finish records the noise config it was run with; on a dataset whose
    results all have natural candidates its level is ``natural``, as its results would be.
    """
    records = prepared.records
    levels: dict[tuple, str] = {}
    labels: dict[tuple, str] = {}
    names: dict[str, set[str]] = {}
    for row in records.drop_duplicates(["dataset", "level", "method"]).to_dict("records"):
        levels.setdefault((str(row["noise"]), _params_key(row, NOISE_PREFIX)), row["level"])
        labels.setdefault((str(row["method_name"]), _params_key(row, PARAM_PREFIX)), row["method"])
        names.setdefault(str(row["method_name"]), set()).add(str(row["method"]))
    natural = set(records.loc[records["level"] == NATURAL_NOISE, "dataset"]) - set(
        records.loc[records["level"] != NATURAL_NOISE, "dataset"]
    )
    rows = []
    for row in failures.to_dict("records"):
        dataset = None if is_missing(row.get("dataset")) else str(row["dataset"])
        method = None if is_missing(row.get("method")) else str(row["method"])
        level = label = None
        if dataset is not None and method is not None:
            noise = str(row.get("noise"))
            params = _params_key(row, NOISE_PREFIX)
            level = (
                NATURAL_NOISE
                if dataset in natural
                else levels.get(
                    (noise, params),
                    f"{noise}({', '.join(f'{k[len(NOISE_PREFIX) :]}={v}' for k, v in params)})",
                )
            )
            label = labels.get((method, _params_key(row, PARAM_PREFIX)))
            if label is None:
                known = names.get(method, set())
                label = next(iter(known)) if len(known) == 1 else method
        split = row.get("split")
        rows.append(
            {
                "dataset": dataset,
                "level": level,
                "method": label,
                "split": None if is_missing(split) else int(split),
                "status": str(row.get("status") or Status.FAILED),
                "error": str(row.get("error", "")),
                "unit": str(row.get("unit", "")),
                "file": Path(str(row.get("path", ""))).name,
            }
        )
    return pd.DataFrame(rows, columns=UNFINISHED_COLUMNS)


def empty_unfinished() -> pd.DataFrame:
    """No units without results, in :func:`place_unfinished`'s columns."""
    return pd.DataFrame(columns=UNFINISHED_COLUMNS)


def declined_cells(placed: pd.DataFrame) -> frozenset[tuple[str, str, str]]:
    """(method, dataset, level) of every placed unit its method declined (not applicable)."""
    declined = placed[placed["status"] == STATUS_NOT_APPLICABLE].dropna(
        subset=["dataset", "level", "method"]
    )
    return frozenset(zip(declined["method"], declined["dataset"], declined["level"], strict=True))


__all__ = [
    "STATUS_NOT_APPLICABLE",
    "UNFINISHED_COLUMNS",
    "declined_cells",
    "empty_unfinished",
    "place_unfinished",
]
