"""The result store: one file per finished unit of work, keyed by the unit's content key.

Layout of a store directory (config key ``results_store``, default ``outputs/store``; file
names and encodings in pmlbench.runner.format)::

    <key>.json          a finished unit: its description, tidy records and metadata
    <key>.npz           its predictions, when the run asked for ``save_predictions``
    <key>.failed.json   a unit that raised: the error and its traceback

Every file is written to a temporary file beside it and renamed into place
(pmlbench.core.atomic), so a process killed at any moment leaves either the complete file or
none; readers skip the temporary files (``.<name>.<random>.tmp``). A unit is done when its
``<key>.json`` exists; a failure file is removed when the unit later succeeds.

Readers for reports: :func:`iter_records` / :func:`load_records` (finished units) and
:func:`iter_failures` / :func:`load_failures` (failed ones).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pmlbench.core.atomic import atomic_write, atomic_write_text
from pmlbench.errors import PmlbenchError
from pmlbench.runner.format import (
    NOISE_PREFIX,
    PARAM_PREFIX,
    from_json,
    load_npz,
    prefixed_columns,
    save_npz,
    store_arrays_path,
    store_failure_files,
    store_failure_path,
    store_record_files,
    store_record_path,
    to_json,
)


def run_metadata(run_dir: str | Path | None = None) -> dict[str, Any]:
    """Who wrote a store entry, where and when."""
    return {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "unix_time": time.time(),
        "run_dir": None if run_dir is None else str(run_dir),
    }


class ResultStore:
    """A directory of unit records, safe for concurrent writers of distinct or equal keys."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"ResultStore({str(self.root)!r})"

    def record_path(self, key: str) -> Path:
        return store_record_path(self.root, key)

    def failure_path(self, key: str) -> Path:
        return store_failure_path(self.root, key)

    def arrays_path(self, key: str) -> Path:
        return store_arrays_path(self.root, key)

    def is_done(self, key: str) -> bool:
        return self.record_path(key).is_file()

    def load(self, key: str) -> dict[str, Any] | None:
        """The finished unit's record, or None when the unit is not done."""
        return _read_json(self.record_path(key))

    def load_arrays(self, key: str) -> dict[str, np.ndarray] | None:
        path = self.arrays_path(key)
        if not path.is_file():
            return None
        try:
            return load_npz(path)
        except (OSError, ValueError):
            return None

    def save(self, record: dict[str, Any], arrays: dict[str, np.ndarray] | None = None) -> Path:
        """Write a finished unit (arrays first: the JSON record marks the unit done)."""
        key = record["key"]
        if arrays:
            atomic_write(self.arrays_path(key), lambda p: save_npz(p, arrays))
        path = atomic_write_text(self.record_path(key), to_json(record))
        self.failure_path(key).unlink(missing_ok=True)
        return path

    def save_failure(self, record: dict[str, Any]) -> Path:
        return atomic_write_text(self.failure_path(record["key"]), to_json(record))


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return from_json(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return None  # unreadable: treated as absent, the unit is rerun and the file replaced


def _check_dir(store_dir: str | Path) -> Path:
    root = Path(store_dir)
    if not root.is_dir():
        raise PmlbenchError(
            f"result store {str(root)!r} does not exist; run a sweep first or "
            "pass the directory set as results_store"
        )
    return root


def iter_records(store_dir: str | Path) -> Iterator[dict[str, Any]]:
    """Every finished unit record of a store (key order). Keys: key, unit, records (tidy rows),
    split (per-split details), dataset, noise, config, run."""
    root = _check_dir(store_dir)
    for path in store_record_files(root):
        record = _read_json(path)
        if record is not None and record.get("status") == "done":
            yield record


def iter_failures(store_dir: str | Path) -> Iterator[dict[str, Any]]:
    """Every unit that failed and has not succeeded since. Keys: key, unit, dataset, noise,
    method, split, seed, error (one line), traceback, config, run."""
    root = _check_dir(store_dir)
    for key, path in store_failure_files(root):
        if store_record_path(root, key).is_file():
            continue  # a later attempt succeeded
        record = _read_json(path)
        if record is not None:
            yield record


def latest_records(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Unit records without those superseded by a newer record of the same unit computed by
    other code (the unit keys differ only in the plugins' source fingerprints)."""
    from pmlbench.runner.units import content_key

    newest: dict[str, dict[str, Any]] = {}
    for record in records:
        unit = {k: v for k, v in record.get("unit", {}).items() if k != "code"}
        same = content_key(unit)
        held = newest.get(same)
        if held is None or _written(record) > _written(held):
            newest[same] = record
    return sorted(newest.values(), key=lambda r: r["key"])


def _written(record: dict[str, Any]) -> float:
    return float(record.get("run", {}).get("unix_time", 0.0))


def load_records(store_dir: str | Path, latest: bool = True) -> pd.DataFrame:
    """The tidy records (results.csv columns plus ``unit_key``) of every finished unit.

    With ``latest`` (the default), a unit computed again after its method's code changed
    contributes only its newest record.
    """
    records: Iterable[dict[str, Any]] = iter_records(store_dir)
    if latest:
        records = latest_records(records)
    rows = [
        {**row, "unit_key": record["key"]}
        for record in records
        for row in record.get("records", [])
    ]
    return pd.DataFrame(rows)


def load_failures(store_dir: str | Path) -> pd.DataFrame:
    """One row per failed unit: dataset, noise and its prefixed parameter columns, method and
    its prefixed parameter columns (as in results.csv), seed, split, error, unit_key,
    traceback."""
    rows = []
    for failure in iter_failures(store_dir):
        unit = failure.get("unit", {})
        noise, method = unit.get("noise", {}), unit.get("method", {})
        rows.append(
            {
                "dataset": unit.get("dataset", {}).get("name"),
                "noise": noise.get("name"),
                **prefixed_columns(noise, NOISE_PREFIX),
                "method": method.get("name"),
                **prefixed_columns(method, PARAM_PREFIX),
                "seed": unit.get("seed"),
                "split": unit.get("split"),
                "error": failure.get("error"),
                "unit_key": failure.get("key"),
                "traceback": failure.get("traceback"),
            }
        )
    return pd.DataFrame(rows)
