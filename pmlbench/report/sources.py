"""Finding and reading results: every results.csv under run or sweep directories.

A run directory holds ``results.csv`` once the run finished (it is written last). Units
(splits) that raised, timed out or were not applicable are listed in the run's ``units.json``
(status "failed", "timed_out", "not_applicable"); a directory
with a run record (``run.json`` or Hydra's ``.hydra/``) but neither results nor a unit list
is an incomplete run, unless it holds a dry run's plan (``dry_run.json``): a dry run computes
nothing, so its directory is no run at all. Failures and incomplete runs are reported, never hidden.

Result stores (pmlbench.runner.store: one ``<key>.json`` per finished unit, ``<key>.failed.json``
per failed one, ``<key>.timeout.json`` / ``<key>.na.json`` per timed-out / not applicable one)
are read through the store's public API (``load_records``, ``load_unfinished``) when a given
directory is one. This is the single place of the report that
knows about stores. File names and columns are those of pmlbench.runner.format.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from pmlbench.core.console import print_warning
from pmlbench.core.regular_files import RECORD_LIMIT, TABLE_LIMIT, read_text
from pmlbench.core.safe_text import from_csv_cell, visible
from pmlbench.errors import PmlbenchError
from pmlbench.protocol.experiment import NATURAL_NOISE
from pmlbench.runner.format import (
    DRY_RUN_FILE,
    HYDRA_DIR,
    NOISE_PREFIX,
    PARAM_PREFIX,
    RESULTS_FILE,
    RUN_RECORD_FILE,
    TEXT_COLUMNS,
    UNITS_FILE,
    columns_with_prefix,
    from_json,
    is_store_dir,
    store_record_path,
)
from pmlbench.runner.result_rows import (
    configured_columns,
    describe_value,
    direction_problem,
    identity_problem,
    is_number,
    row_problem,
    split_columns,
)
from pmlbench.runner.status import OUTCOMES, Status

RUN_MARKERS = (RUN_RECORD_FILE, HYDRA_DIR)
REQUIRED_COLUMNS = (
    "dataset",
    "noise",
    "method",
    "seed",
    "split",
    "metric",
    "value",
    "higher_is_better",
)
FAILURE_COLUMNS = ["path", "unit", "error", "status"]
# units.json statuses of units that produced no results, listed with the failures
UNFINISHED_STATUSES = tuple(str(status) for status in OUTCOMES)  # as units.json spells them


@dataclass
class LoadedResults:
    """Every result row found, where it came from, and what did not finish.

    Attributes:
        records: the concatenated results.csv rows plus a ``source`` column (file path).
        files: the results.csv files read.
        failures: one row per unit without results (path, unit, error, status): status
            "failed", "timed_out" or "not_applicable" (error is then the reason); a
            store's units also carry their dataset, noise, method, parameter, seed, split
            and unit_key columns.
        incomplete: run directories with a run record but no results.csv.
    """

    records: pd.DataFrame
    files: list[Path] = field(default_factory=list)
    failures: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=FAILURE_COLUMNS))
    incomplete: list[Path] = field(default_factory=list)


def read_store(path: Path) -> LoadedResults | None:
    """Finished and failed units of a result store (None when ``path`` holds no units).

    Damaged unit files (pmlbench.runner.store.record_problem) are left out of the results,
    named in a warning each and listed with the failures, status ``damaged``.
    """
    from pmlbench.runner.store import Damaged, load_records, load_unfinished

    damaged: list[Damaged] = []
    records, failed = load_records(path, damaged=damaged), load_unfinished(path)
    if records.empty and failed.empty and not damaged:
        return None
    if not records.empty:
        records["source"] = [str(store_record_path(path, k)) for k in records["unit_key"]]
    failures = pd.DataFrame(
        {
            "path": [str(p) for p in failed.get("path", [])],
            "unit": [_describe_unit(row) for row in failed.to_dict(orient="records")],
            "error": [str(e) for e in failed.get("error", [])],
            "status": [str(s) for s in failed.get("status", [])],
        },
        columns=FAILURE_COLUMNS,
    )
    # the unit's own columns (dataset, noise, method, their parameters, seed, split), so that
    # a table can place it in its cell (the leaderboard's "n/a")
    for column in failed.columns:
        if column not in failures.columns:
            failures[column] = failed[column].to_numpy()
    if damaged:
        rows = _damaged_rows(damaged)
        failures = rows if failures.empty else pd.concat([failures, rows], ignore_index=True)
    return LoadedResults(
        records=records, files=[path] if not records.empty else [], failures=failures
    )


def _damaged_rows(damaged: list) -> pd.DataFrame:
    """One failure row (status ``damaged``) per damaged store file, each named in a warning."""
    rows = []
    for item in damaged:
        advice = "left out; rerunning its job recomputes and replaces it"
        print_warning(f"damaged store file {item.path}: {item.problem}; {advice}")
        rows.append(
            {
                "path": str(item.path),
                "unit": f"store file {Path(item.path).name}",
                "error": f"damaged: {item.problem} ({advice})",
                "status": str(Status.DAMAGED),
            }
        )
    return pd.DataFrame(rows)


def _describe_unit(row: dict) -> str:
    params = ", ".join(
        f"{column}={row[column]}"
        for column in columns_with_prefix(row, NOISE_PREFIX, PARAM_PREFIX)
        if row[column] is not None and row[column] == row[column]  # NaN: not set for this unit
    )
    text = f"{row.get('method')} on {row.get('dataset')} ({row.get('noise')}"
    return (
        text
        + (f", {params}" if params else "")
        + f"), seed {row.get('seed')}, split {row.get('split')}"
    )


def read_results_file(path: Path) -> pd.DataFrame:
    """One results.csv, checked for the columns a report needs."""
    try:
        # a FIFO or device named results.csv would block the report or never end
        frame = pd.read_csv(io.StringIO(read_text(path, TABLE_LIMIT)))
    except pd.errors.EmptyDataError:
        raise PmlbenchError(f"{path} is empty; delete it or rerun that run") from None
    except (OSError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise PmlbenchError(f"cannot read {path}: {exc}; delete or regenerate it") from None
    # text a spreadsheet would run as a formula was written with an apostrophe before it
    # (pmlbench.core.safe_text.csv_cell): read back as it was given
    for column in frame.columns:
        if frame[column].dtype == object or pd.api.types.is_string_dtype(frame[column]):
            frame[column] = frame[column].map(from_csv_cell)
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise PmlbenchError(
            f"{path} lacks the columns {missing}; it is not a pmlbench "
            "results.csv (rerun with this pmlbench version)"
        )
    frame["source"] = str(path)
    return frame


def read_unit_log(run_dir: Path) -> list[dict[str, str]]:
    """Units listed in a run's units.json that failed, timed out or were not applicable."""
    path = run_dir / UNITS_FILE
    try:
        entries = _read_units(run_dir)
    except (OSError, ValueError) as exc:
        return [
            {
                "path": str(path),
                "unit": run_dir.name,
                "error": f"unreadable: {exc}",
                "status": str(Status.FAILED),
            }
        ]
    return [
        {
            "path": str(path),
            "unit": f"{run_dir.name}, split {e.get('split')}",
            "error": str(e.get("error") or e.get("reason") or "no error message recorded"),
            "status": str(e["status"]),
        }
        for e in entries
        if isinstance(e, dict) and e.get("status") in UNFINISHED_STATUSES
    ]


def _read_units(run_dir: Path) -> list[Any]:
    """The entries of a run's units.json (pmlbench.runner.format.read_units), read only when
    it is a regular file within the size of a record: a FIFO would block the report.

    Raises:
        OSError: the file is absent, not a regular file or too large.
        ValueError: the file is not a units.json.
    """
    path = run_dir / UNITS_FILE
    data = from_json(read_text(path, RECORD_LIMIT))
    if not isinstance(data, dict) or not isinstance(data.get("units"), list):
        raise ValueError(f"{path} holds no list of units")
    return data["units"]


@dataclass
class RunExpectations:
    """What the run.json beside a results.csv says its rows hold (empty when there is no
    readable run.json: its rows are then not compared).

    Attributes:
        common: the columns of every row: dataset, noise and its parameters, method and its
            parameters (a tuned one's grid), seed, convention.
        legacy: ``common`` as results.csv had it before grids and lists were written (a tuned
            parameter's configured value; pmlbench.runner.result_rows.configured_columns).
        texts: the parameter columns holding JSON text (grids and lists), which the rows of
            an older results.csv are given.
        by_split: by split, the columns of that split (sizes, timings, bipartition rule,
            tuned values).
    """

    common: dict[str, Any] = field(default_factory=dict)
    legacy: dict[str, Any] = field(default_factory=dict)
    texts: dict[str, Any] = field(default_factory=dict)
    by_split: dict[int, dict[str, Any]] = field(default_factory=dict)


def _run_expectations(run_dir: Path) -> RunExpectations:
    """What the run.json in ``run_dir`` says its results.csv holds (:class:`RunExpectations`)."""
    try:
        record = from_json(read_text(run_dir / RUN_RECORD_FILE, RECORD_LIMIT))
    except (OSError, ValueError):
        return RunExpectations()
    if not isinstance(record, dict) or not isinstance(record.get("config"), dict):
        return RunExpectations()
    config = record["config"]
    common: dict[str, Any] = {}
    summary = record.get("dataset")
    if isinstance(summary, dict) and "name" in summary:
        common["dataset"] = summary["name"]
    described: dict[str, Any] = {}
    if isinstance(record.get("noise"), str):
        common["noise"] = record["noise"]
        described["noise"] = config.get("noise")
    method = config.get("method")
    if isinstance(method, dict) and "name" in method:
        common["method"] = method["name"]
        described.update(method=method, tune=config.get("tune"))
    natural = record.get("noise") == NATURAL_NOISE
    for column, key in (("seed", "seed"), ("convention", "metric_convention")):
        if key in config:
            common[column] = config[key]
    by_split: dict[int, dict[str, Any]] = {}
    for split in record.get("splits") or []:
        if not isinstance(split, dict) or not isinstance(split.get("split"), int):
            continue
        by_split[split["split"]] = split_columns(split)
    return RunExpectations(
        common={**common, **configured_columns(described, natural)},
        legacy={**common, **configured_columns(described, natural, legacy=True)},
        texts=configured_columns(described, natural, kind=TEXT_COLUMNS),
        by_split=by_split,
    )


def _rows_problem(
    rows: list[dict[str, Any]], expected: RunExpectations, legacy: bool
) -> str | None:
    """The first row's problem (``line <n>: ...``; None: none has one): a value, count or
    timing no run can have written (pmlbench.runner.result_rows.row_problem), or identifying
    columns that are not those ``expected`` (with ``legacy``: its older form) says."""
    common = expected.legacy if legacy else expected.common
    beside = f"the {RUN_RECORD_FILE} beside it"
    for line, row in enumerate(rows, start=2):
        problem = (
            row_problem(row) or identity_problem(row, common, beside) or direction_problem(row)
        )
        split: Any = row.get("split")
        if problem is None and expected.by_split:
            index = int(split) if is_number(split) and float(split).is_integer() else None
            if index not in expected.by_split:
                problem = f"its split {describe_value(split)} is none of those {beside} lists"
            else:
                problem = identity_problem(row, expected.by_split[index], beside)
        if problem is not None:
            return f"line {line}: {problem}"
    return None


def results_problem(frame: pd.DataFrame, path: Path) -> str | None:
    """What makes the rows of one results.csv unusable (None: nothing): a row whose value,
    counts or timings no run can have written (pmlbench.runner.result_rows.row_problem), or
    whose identifying columns are not those the run.json beside it records (an edited file
    would show one run's numbers under another dataset, noise level or method). A file
    written before grids and lists were (a tuned parameter's configured value in its column)
    passes when it holds what run.json says in that form."""
    return _checked(frame, path)[1]


def _checked(frame: pd.DataFrame, path: Path) -> tuple[pd.DataFrame, str | None]:
    """(the rows of one results.csv as a report reads them, their problem: see
    :func:`results_problem`). The rows of a file that passes get the parameter columns
    holding JSON text from its run.json (a tuned parameter's grid, a list), so that an older
    results.csv reads as one written now."""
    expected = _run_expectations(path.parent)
    rows = frame.drop(columns="source").to_dict("records")
    problem = _rows_problem(rows, expected, legacy=False)
    if problem is not None and _rows_problem(rows, expected, legacy=True) is None:
        problem = None
    if problem is None and expected.texts:
        frame = frame.assign(**expected.texts)
    return frame, problem


def _walk(root: Path) -> LoadedResults:
    files = sorted(root.rglob(RESULTS_FILE)) if root.is_dir() else [root]
    failures, incomplete = [], []
    if root.is_dir():
        failures = [f for p in sorted(root.rglob(UNITS_FILE)) for f in read_unit_log(p.parent)]
        for marker in RUN_MARKERS:
            for found in root.rglob(marker):
                run_dir = found.parent
                # a dry run's directory (its plan, dry_run.json) never held a run
                finished = (RESULTS_FILE, UNITS_FILE, DRY_RUN_FILE)
                if not any((run_dir / name).exists() for name in finished):
                    incomplete.append(run_dir)
    frames, read = [], []
    for path in files:
        frame, problem = _checked(read_results_file(path), path)
        if problem is None:
            frames.append(frame)
            read.append(path)
            continue
        # left out, as a damaged store record is: the report goes on with the others
        advice = "left out; rerun that run (or delete the file)"
        print_warning(f"damaged {RESULTS_FILE} {path}: {problem}; {advice}")
        failures.append(
            {
                "path": str(path),
                "unit": f"{path.parent.name} ({RESULTS_FILE})",
                "error": f"damaged: {problem} ({advice})",
                "status": str(Status.DAMAGED),
            }
        )
    return LoadedResults(
        records=pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(),
        files=read,
        failures=pd.DataFrame(failures, columns=FAILURE_COLUMNS),
        incomplete=sorted(set(incomplete)),
    )


# results.csv columns that differ between two runs of the same unit (it was timed again)
TIMING_COLUMNS = ("fit_seconds", "predict_seconds")


def _run_unit_keys(results_file: Path) -> dict[int, str]:
    """Split -> unit key, from the units.json beside a run's results.csv (empty when absent
    or unreadable: the rows are then identified by their columns)."""
    try:
        entries = _read_units(results_file.parent)
    except (OSError, ValueError):
        return {}
    return {
        int(e["split"]): str(e["key"])
        for e in entries
        if isinstance(e, dict) and isinstance(e.get("split"), int) and e.get("key")
    }


def one_row_per_unit(records: pd.DataFrame) -> pd.DataFrame:
    """``records`` with every (unit, metric) once: the first row read is kept.

    A unit is read more than once when a sweep was rerun (into the same or another
    directory: the rerun's run directories list the same units, reused from the store) or
    when a store is read beside the run directories it filled. A unit is its key: a store
    row's ``unit_key``, a run directory's from its units.json (by split). Rows without a
    recorded key (a results.csv without units.json) are the same unit when every column but
    the timings and ``source`` agrees. Adds no column; ``records`` needs ``source``.
    """
    if records.empty:
        return records
    keys = (
        records["unit_key"].astype(object)
        if "unit_key" in records.columns
        else pd.Series(None, index=records.index, dtype=object)
    )
    keys = keys.where(keys.notna(), None)
    missing = keys.isna()
    if missing.any() and "source" in records.columns:
        by_file: dict[str, dict[int, str]] = {}
        for index, source, split in zip(
            records.index[missing],
            records.loc[missing, "source"],
            records.loc[missing, "split"],
            strict=True,
        ):
            source = str(source)
            if source not in by_file:
                path = Path(source)
                by_file[source] = _run_unit_keys(path) if path.name == RESULTS_FILE else {}
            try:
                keys.loc[index] = by_file[source].get(int(split))
            except (TypeError, ValueError):
                continue
    identity = [c for c in records.columns if c not in (*TIMING_COLUMNS, "source", "unit_key")]
    # one text per row: its unit key and metric, or (no key known) its identifying columns
    texts = [records[c].map(str) for c in identity]
    fallback = texts[0].str.cat(texts[1:], sep="\x1f")
    marks = [
        f"key\x1f{key}\x1f{metric}" if key is not None else f"row\x1f{row}"
        for key, metric, row in zip(keys, records["metric"].astype(str), fallback, strict=True)
    ]
    return records[~pd.Series(marks, index=records.index).duplicated()]


def load_results(paths: Iterable[str | Path]) -> LoadedResults:
    """Read every result under ``paths``: run dirs, multirun dirs (searched recursively for
    results.csv), single results.csv files, and result-store directories."""
    parts: list[LoadedResults] = []
    directories = [Path(p) for p in paths]
    if not directories:
        raise PmlbenchError("no result directory given; pass run or multirun directories")
    for path in directories:
        if not path.exists():
            raise PmlbenchError(f"{path} does not exist; pass a run or multirun directory")
        loaded = read_store(path) if is_store_dir(path) else None
        parts.append(loaded if loaded is not None else _walk(path))
    frames = [p.records for p in parts if len(p.records)]
    failures = [p.failures for p in parts if len(p.failures)]
    where = ", ".join(map(str, directories))
    if not frames and failures:
        unfinished = pd.concat(failures, ignore_index=True)
        first = visible(str(unfinished.iloc[0].get("error", "")))
        raise PmlbenchError(
            f"no finished unit under {where}, only {len(unfinished)} without results "
            f"(failed, timed out, n/a or damaged; first: {first}); fix the cause and rerun "
            "the sweep, which computes only these"
        )
    if not frames:
        raise PmlbenchError(
            f"no {RESULTS_FILE} found under {where}; "
            "point pmlbench report at a run or multirun output directory"
        )
    return LoadedResults(
        records=_shown(pd.concat(frames, ignore_index=True)),
        files=[f for p in parts for f in p.files],
        failures=_shown(
            pd.concat(failures, ignore_index=True)
            if failures
            else pd.DataFrame(columns=FAILURE_COLUMNS)
        ),
        incomplete=[d for p in parts for d in p.incomplete],
    )


def _shown(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with hidden characters in its text escaped (pmlbench.core.safe_text.visible:
    controls, bidirectional and other format characters): names, errors and tracebacks come
    from programs, files and store records, and go to the terminal, Markdown, CSV, LaTeX and
    HTML, where an escape sequence must not act and a U+202E must not reorder a line. Each
    writer escapes what its format needs on top. Tracebacks keep their newlines; every other
    text is one line."""
    for column in frame.columns:
        if frame[column].dtype == object or pd.api.types.is_string_dtype(frame[column]):
            keep = column == "traceback"
            frame[column] = frame[column].map(
                lambda v, keep=keep: visible(v, keep_newlines=keep) if isinstance(v, str) else v
            )
    return frame
