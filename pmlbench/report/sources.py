"""Finding and reading results: every results.csv under run or sweep directories.

A run directory holds ``results.csv`` once the run finished (it is written last). A
directory with a run record (``run.json`` or Hydra's ``.hydra/``) but no results.csv is an
incomplete run; a ``failed.json`` marks a unit that raised. Both are reported, never hidden.

Result stores: a directory that :func:`store_reader` recognises is read through the store's
public API instead of being walked for results.csv files. This is the single place that
knows about stores.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from pmlbench.errors import PmlbenchError

RESULTS_FILE = "results.csv"
FAILURE_FILE = "failed.json"
RUN_MARKERS = ("run.json", ".hydra")
REQUIRED_COLUMNS = ("dataset", "noise", "method", "seed", "split", "metric", "value",
                    "higher_is_better")
FAILURE_COLUMNS = ["path", "unit", "error"]


@dataclass
class LoadedResults:
    """Every result row found, where it came from, and what did not finish.

    Attributes:
        records: the concatenated results.csv rows plus a ``source`` column (file path).
        files: the results.csv files read.
        failures: one row per failed unit (path, unit, error).
        incomplete: run directories with a run record but no results.csv.
    """

    records: pd.DataFrame
    files: list[Path] = field(default_factory=list)
    failures: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=FAILURE_COLUMNS))
    incomplete: list[Path] = field(default_factory=list)


StoreReader = Callable[[Path], "LoadedResults | None"]


def store_reader() -> StoreReader | None:
    """The result store's reader, when this installation has one.

    A store module ``pmlbench.store`` that defines ``read_results(path) -> LoadedResults |
    None`` (None: the path is not a store) plugs in here; without it every directory is
    walked for results.csv files.
    """
    try:
        module = importlib.import_module("pmlbench.store")
    except ImportError:
        return None
    reader = getattr(module, "read_results", None)
    return reader if callable(reader) else None


def read_results_file(path: Path) -> pd.DataFrame:
    """One results.csv, checked for the columns a report needs."""
    try:
        frame = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise PmlbenchError(f"{path} is empty; delete it or rerun that run") from None
    except (OSError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise PmlbenchError(f"cannot read {path}: {exc}; delete or regenerate it") from None
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise PmlbenchError(f"{path} lacks the columns {missing}; it is not a pmlbench "
                            "results.csv (rerun with this pmlbench version)")
    frame["source"] = str(path)
    return frame


def read_failure(path: Path) -> dict[str, str]:
    """One failure record: which unit failed and the last line of its error."""
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        return {"path": str(path), "unit": path.parent.name, "error": f"unreadable: {exc}"}
    if not isinstance(record, dict):
        record = {"error": str(record)}
    unit = record.get("unit") or record.get("key")
    if not isinstance(unit, str):
        parts = [f"{k}={record[k]}" for k in ("dataset", "noise", "method", "seed", "split")
                 if k in record]
        unit = ", ".join(parts) if parts else path.parent.name
    error = next((record[k] for k in ("error", "message", "exception", "traceback")
                  if record.get(k)), "no error message recorded")
    lines = [line for line in str(error).strip().splitlines() if line.strip()]
    return {"path": str(path), "unit": unit, "error": lines[-1] if lines else str(error)}


def _walk(root: Path) -> LoadedResults:
    files = sorted(root.rglob(RESULTS_FILE)) if root.is_dir() else [root]
    failures = [read_failure(p) for p in sorted(root.rglob(FAILURE_FILE))] if root.is_dir() else []
    incomplete = []
    if root.is_dir():
        for marker in RUN_MARKERS:
            for found in root.rglob(marker):
                run_dir = found.parent
                if not (run_dir / RESULTS_FILE).exists() and not (run_dir / FAILURE_FILE).exists():
                    incomplete.append(run_dir)
    frames = [read_results_file(p) for p in files]
    return LoadedResults(
        records=pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(),
        files=files, failures=pd.DataFrame(failures, columns=FAILURE_COLUMNS),
        incomplete=sorted(set(incomplete)),
    )


def load_results(paths: Iterable[str | Path]) -> LoadedResults:
    """Read every result under ``paths`` (run dirs, multirun dirs, results.csv files, stores)."""
    parts: list[LoadedResults] = []
    reader = store_reader()
    paths = [Path(p) for p in paths]
    if not paths:
        raise PmlbenchError("no result directory given; pass run or multirun directories")
    for path in paths:
        if not path.exists():
            raise PmlbenchError(f"{path} does not exist; pass a run or multirun directory")
        loaded = reader(path) if reader is not None else None
        parts.append(loaded if loaded is not None else _walk(path))
    frames = [p.records for p in parts if len(p.records)]
    if not frames:
        raise PmlbenchError(f"no {RESULTS_FILE} found under {', '.join(map(str, paths))}; "
                            "point pmlbench report at a run or multirun output directory")
    failures = [p.failures for p in parts if len(p.failures)]
    return LoadedResults(
        records=pd.concat(frames, ignore_index=True),
        files=[f for p in parts for f in p.files],
        failures=(pd.concat(failures, ignore_index=True) if failures
                  else pd.DataFrame(columns=FAILURE_COLUMNS)),
        incomplete=[d for p in parts for d in p.incomplete],
    )
