"""The result store: one file per finished unit of work, keyed by the unit's content key.

Layout of a store directory (config key ``results_store``, default ``outputs/store``; file
names and encodings in pmlbench.runner.format)::

    <key>.json          a finished unit: its description, tidy records and metadata
    <key>.npz           its predictions, when the run asked for ``save_predictions``
    <key>.failed.json   a unit that raised: the error and its traceback
    <key>.na.json       a unit its method declared not applicable (pmlbench.errors.NotApplicable)
    <key>.timeout.json  a unit stopped at ``unit_timeout``: the limit and the elapsed seconds

Every file is written to a temporary file beside it and renamed into place
(pmlbench.core.atomic), so a process killed at any moment leaves either the complete file or
none; readers skip the temporary files (``.<name>.<random>.tmp``). A unit is done when its
``<key>.json`` exists. A unit has at most one outcome file (failed, n/a or timed out):
writing one removes the others, and all are removed when the unit later succeeds. A run
retries failed units, never retries n/a ones (unless ``recompute=true``; a changed method
changes the key), and retries timed-out ones only with ``recompute=true``, without a
``unit_timeout`` or with one above the recorded elapsed time (pmlbench.runner.run).

A record is used only when it parses and agrees with its key: the description it holds
hashes to the key it is stored under, and its rows hold that unit's split and each of its
metrics once (:func:`record_problem`); stored predictions must match the digest their
record holds. Anything else is *damaged*: a run warns, naming the file, recomputes the unit
and replaces the file; readers list damaged files (:func:`iter_damaged`,
:func:`load_damaged`) and read the rest.

Readers for reports: :func:`iter_records` / :func:`load_records` (finished units),
:func:`iter_outcomes` (the units that ended as one unfinished outcome: failed, not
applicable, timed out; pmlbench.runner.status) and :func:`load_unfinished` (all three in
one frame with a ``status`` column). The outcome files are written with
:meth:`ResultStore.save_outcome` and read with :meth:`ResultStore.load_outcome`, through
the one table from outcome to file (pmlbench.runner.format.OUTCOME_SUFFIXES).
"""

from __future__ import annotations

import math
import os
import socket
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pmlbench.core.atomic import atomic_write, atomic_write_text
from pmlbench.core.console import print_warning
from pmlbench.core.digest import content_digest
from pmlbench.core.regular_files import RECORD_LIMIT, UnreadableFile, read_text
from pmlbench.datasets.bundled import CITATIONS
from pmlbench.errors import PmlbenchError
from pmlbench.protocol.experiment import NATURAL_NOISE
from pmlbench.protocol.tuning import SCORE_TIE_RTOL
from pmlbench.runner.format import (
    NOISE_PREFIX,
    PARAM_PREFIX,
    STORE_RECORD_SUFFIX,
    TEXT_COLUMNS,
    from_json,
    load_npz,
    parameter_columns,
    save_npz,
    store_arrays_path,
    store_outcome_files,
    store_outcome_path,
    store_record_files,
    store_record_path,
    to_json,
)
from pmlbench.runner.result_rows import (
    configured_columns,
    describe_value,
    direction_problem,
    identity_problem,
    row_problem,
    split_columns,
    tuning_problem,
)
from pmlbench.runner.status import OUTCOMES, Status
from pmlbench.runner.units import content_key


def run_metadata(run_dir: str | Path | None = None) -> dict[str, Any]:
    """Who wrote a store entry, where, when and by which command.

    The command is kept in the entry itself, not only in its run directory's run.json: a
    job stopped before writing run.json, or a store read without its run directories,
    still names the command that computed each unit.
    """
    return {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "unix_time": time.time(),
        "run_dir": None if run_dir is None else str(run_dir),
        "command": list(sys.argv),
    }


class ResultStore:
    """A directory of unit records, safe for concurrent writers of distinct or equal keys."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        if self.root.exists() and not self.root.is_dir():
            raise PmlbenchError(
                f"results_store={str(self.root)!r} is a file, not a directory; set "
                "results_store to a directory (created when missing), or null for no store"
            )
        self.damaged: dict[Path, str] = {}  # damaged files met by this instance (warned once)

    def __repr__(self) -> str:
        return f"ResultStore({str(self.root)!r})"

    def record_path(self, key: str) -> Path:
        return store_record_path(self.root, key)

    def arrays_path(self, key: str) -> Path:
        return store_arrays_path(self.root, key)

    def outcome_path(self, key: str, status: Status) -> Path:
        """The file recording that unit ``key`` ended as ``status`` (an unfinished outcome:
        failed, not applicable, timed out; pmlbench.runner.format.OUTCOME_SUFFIXES)."""
        return store_outcome_path(self.root, key, status)

    def outcome_paths(self, key: str) -> list[Path]:
        """The files of a unit that did not finish, one per outcome."""
        return [self.outcome_path(key, status) for status in OUTCOMES]

    def is_done(self, key: str) -> bool:
        return self.record_path(key).is_file()

    def load(self, key: str, directions: Mapping[str, bool] | None = None) -> dict[str, Any] | None:
        """The finished unit's record, or None when the unit is not done or its file is
        damaged (:func:`record_problem`; a warning names the file, which the unit's
        recomputation replaces). ``directions``: each metric's higher_is_better, as the
        run has looked them up (else the registry is asked)."""
        path = self.record_path(key)
        record, problem = load_record(path, key, strict=True, directions=directions)
        if problem is not None:
            self._warn_damaged(path, problem)
            return None
        return record

    def load_arrays(self, key: str, digest: str | None = None) -> dict[str, np.ndarray] | None:
        """The unit's stored predictions, or None when absent, unreadable or (given the
        ``arrays_digest`` of its record) not the arrays the record was written with."""
        path = self.arrays_path(key)
        if not path.is_file():
            return None
        try:
            arrays = load_npz(path)
        except Exception as exc:  # BadZipFile, bad CRC, EOFError, ...: recompute and replace
            self._warn_damaged(path, f"unreadable ({type(exc).__name__}: {exc})")
            return None
        if digest is not None and arrays_digest(arrays) != digest:
            self._warn_damaged(path, "its arrays do not match the digest in the unit's record")
            return None
        return arrays

    def _warn_damaged(self, path: Path, problem: str) -> None:
        if path not in self.damaged:
            print_warning(
                f"damaged store file {path}: {problem}; recomputing the unit and replacing it"
            )
        self.damaged[path] = problem

    def save(self, record: dict[str, Any], arrays: dict[str, np.ndarray] | None = None) -> Path:
        """Write a finished unit (arrays first: the JSON record marks the unit done). With
        arrays, the record gets their digest (``arrays_digest``), checked when they are read."""
        key = record["key"]
        if arrays:
            atomic_write(self.arrays_path(key), lambda p: save_npz(p, arrays))
            record = {**record, "arrays_digest": arrays_digest(arrays)}
        path = atomic_write_text(self.record_path(key), to_json(record))
        for outcome in self.outcome_paths(key):
            outcome.unlink(missing_ok=True)
        return path

    def save_outcome(self, record: dict[str, Any]) -> Path:
        """Record a unit that did not finish, in the file of its ``status`` (failed, not
        applicable, timed out), and remove its other outcome files."""
        path = self.outcome_path(record["key"], _outcome(record.get("status")))
        written = atomic_write_text(path, to_json(record))
        for other in self.outcome_paths(record["key"]):
            if other != path:
                other.unlink(missing_ok=True)
        return written

    def load_outcome(self, key: str, status: Status) -> dict[str, Any] | None:
        """The record of an unfinished unit that ended as ``status``, or None (also when
        the unit has finished since)."""
        return None if self.is_done(key) else _read_json(self.outcome_path(key, status))


def _read_json(path: Path) -> dict[str, Any] | None:
    """An outcome file's record; None when absent or damaged (not a regular file, not JSON,
    not a mapping with a unit description and the key its name says): treated as absent,
    the unit is rerun and the file replaced."""
    try:
        record = from_json(read_text(path, RECORD_LIMIT))
    except (OSError, ValueError):  # absent, not a regular file, too large, not JSON
        return None
    if (
        not isinstance(record, dict)
        or not isinstance(record.get("unit"), dict)
        or not path.name.startswith(f"{record.get('key')}.")
    ):
        return None
    return record


def arrays_digest(arrays: dict[str, Any]) -> str:
    """The content digest of a unit's named arrays, as stored in its record."""
    return content_digest({name: np.asarray(value) for name, value in arrays.items()})


@dataclass(frozen=True)
class Damaged:
    """A store file that cannot be used: where it is and what is wrong with it."""

    path: Path
    problem: str


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _describe(value: Any) -> str:
    kind = {list: "a JSON list", str: "a JSON string", type(None): "null"}.get(type(value))
    return kind or f"a JSON {type(value).__name__}"


# An integer no float can hold: a hand-edited 10**400 in a record's run details or
# diagnostics (its CPU seconds, a count) would overflow every reader that computes with it
# (the rows' numbers are checked one by one, pmlbench.runner.result_rows.row_problem).
_FLOAT_RANGE = 2**1024


def _number_beyond_floats(value: Any, where: str = "") -> str | None:
    """Where in a record an integer beyond float range sits (None: nowhere)."""
    kind = type(value)
    if kind is int:
        return (where or "it") if abs(value) >= _FLOAT_RANGE else None
    if kind is dict:
        items: Any = value.items()
    elif kind is list:
        items = enumerate(value)
    else:
        return None  # floats, text, booleans, null
    for name, inner in items:
        if type(inner) in (dict, list, int):
            found = _number_beyond_floats(inner, f"{where}.{name}" if where else str(name))
            if found is not None:
                return found
    return None


def record_problem(
    record: Any,
    key: str,
    *,
    strict: bool = False,
    directions: Mapping[str, bool] | None = None,
) -> str | None:
    """What makes a finished-unit record stored under ``key`` unusable (None: nothing).

    The record must be a mapping with status ``done`` and key ``key``; a unit description
    written by pmlbench (one with a ``schema``, or any with ``strict``) must hash to ``key``
    (pmlbench.runner.units.content_key), so it is the unit that was asked for; its rows must
    be those of that unit's split with each of its metrics exactly once, each a value the
    metric can take with counts and seconds a run can have written
    (pmlbench.runner.result_rows.row_problem), identified as that unit
    (:func:`_identity_problem`); its tuning scores must be values of its scoring metric
    (pmlbench.runner.result_rows.tuning_problem); no number in it may lie beyond float
    range; with ``strict``
    (a run about to reuse the record) the per-split details must agree too.
    """
    if not isinstance(record, dict):
        return f"holds {_describe(record)}, not a unit record"
    if record.get("status") != "done":
        return f"its status is {describe_value(record.get('status'))}, not 'done'"
    if record.get("key") != key:
        return f"holds the record of unit {describe_value(record.get('key'))}"
    unit = record.get("unit")
    if strict or (isinstance(unit, dict) and "schema" in unit):
        if not isinstance(unit, dict):
            return "holds no unit description"
        try:
            matches = content_key(unit) == key
        except (PmlbenchError, TypeError, ValueError, OverflowError):
            matches = False
        if not matches:
            return "its unit description does not match its key"
    unit = unit if isinstance(unit, dict) else {}
    rows = record.get("records")
    if not isinstance(rows, list) or not all(
        isinstance(r, dict) and isinstance(r.get("metric"), str) for r in rows
    ):
        return "its result rows are malformed"
    split: dict[str, Any] = record["split"] if isinstance(record.get("split"), dict) else {}
    for part, value in (
        ("run", record.get("run")),
        ("split.diagnostics", split.get("diagnostics")),
    ):
        beyond = _number_beyond_floats(value, part)
        if beyond is not None:
            return f"its {beyond} is an integer beyond the range of any float"
    problem = tuning_problem(split.get("tuning"))
    if problem is not None:
        return problem
    for r in rows:
        problem = row_problem(r)
        if problem is not None:
            return problem
    cpu = (
        (record.get("run") or {}).get("cpu_seconds")
        if isinstance(record.get("run"), dict)
        else None
    )
    if cpu is not None and not (_is_number(cpu) and math.isfinite(cpu) and cpu >= 0):
        return f"its run.cpu_seconds is {describe_value(cpu)}"
    if "split" in unit and any(r.get("split", unit["split"]) != unit["split"] for r in rows):
        return f"its rows are not those of split {unit['split']}"
    metrics = unit.get("metrics")
    found = Counter(r["metric"] for r in rows)
    if isinstance(metrics, list) and found != Counter(metrics):
        return f"its rows hold the metrics {sorted(found.elements())}, not {sorted(metrics)}"
    if unit:
        problem = _identity_problem(record, unit, rows, directions)
        if problem is not None:
            return problem
    if strict:
        return _split_problem(record, unit, found)
    return None


def _identity_problem(
    record: dict[str, Any],
    unit: dict[str, Any],
    rows: list[dict[str, Any]],
    directions: Mapping[str, bool] | None = None,
) -> str | None:
    """A row whose identifying fields (method and its parameters, seed, noise model and its
    parameters, dataset, metric convention and direction, and the split's bipartition rule,
    tuned values, sizes and timings) are not those of the unit the key describes and of its
    split details: an edited record would otherwise show one unit's numbers under another
    method, dataset, noise level or direction."""
    method: dict[str, Any] = unit["method"] if isinstance(unit.get("method"), dict) else {}
    noise: dict[str, Any] = unit["noise"] if isinstance(unit.get("noise"), dict) else {}
    natural = record.get("noise") == NATURAL_NOISE
    expected: dict[str, Any] = {}
    if "name" in method:
        expected["method"] = method["name"]
    if "seed" in unit:
        expected["seed"] = unit["seed"]
    if "name" in noise and not natural:
        expected["noise"] = noise["name"]
    if "metric_convention" in unit:
        expected["convention"] = unit["metric_convention"]
    summary = record.get("dataset")
    if isinstance(summary, dict) and "name" in summary:
        expected["dataset"] = summary["name"]
    dataset: dict[str, Any] = unit["dataset"] if isinstance(unit.get("dataset"), dict) else {}
    named = _dataset_name(dataset)
    if named is not None and expected.get("dataset", named) != named:
        return (
            f"its dataset summary names {describe_value(expected['dataset'])}, not "
            f"{describe_value(named)}"
        )
    expected.update(split_columns(record.get("split")))
    # the parameter columns as written now, else as before grids and lists were written
    # (an older record: unit_details shows its grids and lists from its description)
    described = {"tune": unit.get("tune")}
    described.update({k: v for k, v in (("method", method), ("noise", noise)) if "name" in v})
    first = None
    for legacy in (False, True):
        columns = configured_columns(described, natural, legacy=legacy)
        problem = _rows_problem(rows, {**expected, **columns}, directions)
        if problem is None:
            return None
        first = first or problem
    return first


def _rows_problem(
    rows: list[dict[str, Any]],
    expected: dict[str, Any],
    directions: Mapping[str, bool] | None,
) -> str | None:
    """The first row that does not hold ``expected`` or its metric's direction."""
    for row in rows:
        problem = identity_problem(row, expected)
        if problem is None:
            problem = direction_problem(row, directions)
        if problem is not None:
            return problem
    return None


def _dataset_name(dataset: dict[str, Any]) -> str | None:
    """The name a unit's dataset has in results, when its description fixes it: a bundled
    dataset's own, a file's ``display_name`` or file stem (pmlbench.datasets.files); None
    for a dataset plugin, which names its data itself (a run checks that name when it loads
    the data, pmlbench.runner.run)."""
    name = dataset.get("name")
    if name in CITATIONS:
        return name
    if name == "file" and isinstance(dataset.get("path"), str):
        shown = dataset.get("display_name")
        return (
            shown if isinstance(shown, str) and shown else Path(dataset["path"]).expanduser().stem
        )
    return None


def _split_problem(record: dict[str, Any], unit: dict[str, Any], found: Counter) -> str | None:
    """What is wrong with the per-split details and summaries a run rebuilds its results from."""
    split = record.get("split")
    if not isinstance(split, dict) or split.get("index") != unit.get("split"):
        return f"its split details are not those of split {unit.get('split')}"
    values = split.get("values")
    if not isinstance(values, dict) or set(values) != set(found):
        return "its split details do not hold the unit's metrics"
    rows = {r["metric"]: r["value"] for r in record["records"]}
    for name, value in values.items():
        if not _is_number(value) or not (
            value == rows[name] or (math.isnan(value) and math.isnan(rows[name]))
        ):
            return f"its split details and rows disagree on {name}"
    if not isinstance(record.get("dataset"), dict) or not isinstance(record.get("noise"), str):
        return "it lacks the dataset summary or the noise model's name"
    return None


def load_record(
    path: Path,
    key: str,
    *,
    strict: bool = False,
    directions: Mapping[str, bool] | None = None,
) -> tuple[dict[str, Any] | None, str | None]:
    """(record, problem) of the finished-unit file at ``path``: (None, None) when there is no
    file, (None, problem) when it is damaged (:func:`record_problem`)."""
    if not path.exists() and not path.is_symlink():
        return None, None
    try:
        # a FIFO or device named like a record would block the reader or never end, and a
        # sparse file of a terabyte would fill the memory: regular files within a limit only
        text = read_text(path, RECORD_LIMIT)
    except FileNotFoundError:
        return (None, "a link to a file that does not exist") if path.is_symlink() else (None, None)
    except UnreadableFile as exc:
        return None, str(exc)
    except OSError as exc:
        return None, f"unreadable ({exc.strerror or exc})"
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 text ({exc.reason} at byte {exc.start})"
    try:
        record = from_json(text)
    except ValueError as exc:
        return None, f"not valid JSON ({exc})"
    problem = record_problem(record, key, strict=strict, directions=directions)
    return (None, problem) if problem is not None else (record, None)


def _check_dir(store_dir: str | Path) -> Path:
    root = Path(store_dir)
    if not root.is_dir():
        raise PmlbenchError(
            f"result store {str(root)!r} does not exist; run a sweep first or "
            "pass the directory set as results_store"
        )
    return root


def _record_key(path: Path) -> str:
    return path.name[: -len(STORE_RECORD_SUFFIX)]


def iter_records(
    store_dir: str | Path, damaged: list[Damaged] | None = None
) -> Iterator[dict[str, Any]]:
    """Every finished unit record of a store (key order). Keys: key, unit, records (tidy rows),
    split (per-split details), dataset, noise, config, run.

    Damaged files (:func:`record_problem`) are appended to ``damaged``, or, without it,
    named in a warning each; they are never passed over silently.
    """
    root = _check_dir(store_dir)
    for path in store_record_files(root):
        # as strictly as a run reuses a record: a report never shows what a run would redo
        record, problem = load_record(path, _record_key(path), strict=True)
        if problem is not None:
            if damaged is None:
                print_warning(f"damaged store file {path}: {problem}; left out")
            else:
                damaged.append(Damaged(path, problem))
        elif record is not None:
            yield record


def iter_damaged(store_dir: str | Path) -> Iterator[Damaged]:
    """Every finished-unit file of a store that cannot be used, with what is wrong with it."""
    damaged: list[Damaged] = []
    for _ in iter_records(store_dir, damaged):
        yield from damaged
        damaged.clear()
    yield from damaged


def load_damaged(store_dir: str | Path) -> pd.DataFrame:
    """One row (path, problem) per damaged finished-unit file of a store."""
    return pd.DataFrame(
        [{"path": str(d.path), "problem": d.problem} for d in iter_damaged(store_dir)],
        columns=["path", "problem"],
    )


def _iter_outcomes(root: Path, files: list[tuple[str, Path]]) -> Iterator[dict[str, Any]]:
    for key, path in files:
        if load_record(store_record_path(root, key), key)[0] is not None:
            continue  # a later attempt succeeded (a damaged record does not count)
        record = _read_json(path)
        if record is not None:
            yield record


def iter_outcomes(store_dir: str | Path, status: Status) -> Iterator[dict[str, Any]]:
    """Every unit whose store file records the outcome ``status`` and that has not finished
    since. Keys: key, status, unit, config, run, and by outcome: ``failed``: error (one
    line), error_type, traceback; ``not_applicable``: reason (one line: the cap and the
    option that lifts it), error_type; ``timed_out``: error (one line), unit_timeout and
    elapsed_seconds (seconds)."""
    root = _check_dir(store_dir)
    yield from _iter_outcomes(root, store_outcome_files(root, _outcome(status)))


def _outcome(status: Any) -> Status:
    """``status`` as an unfinished outcome (a ValueError for anything else)."""
    try:
        outcome = Status(status)
    except ValueError:
        outcome = None
    if outcome not in OUTCOMES:
        raise ValueError(
            f"{status!r} is no outcome of an unfinished unit; use one of "
            f"{[str(o) for o in OUTCOMES]}"
        )
    return outcome


def latest_records(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Unit records without those superseded by a newer record of the same unit computed by
    other code or from other file contents, or under an older key schema (the descriptions
    differ only in ``code``, ``files`` or ``schema``)."""
    newest: dict[str, dict[str, Any]] = {}
    for record in records:
        unit = {
            k: v
            for k, v in (record.get("unit") or {}).items()
            if k not in ("code", "files", "schema")
        }
        same = content_key(unit)
        held = newest.get(same)
        if held is None or _written(record) > _written(held):
            newest[same] = record
    return sorted(newest.values(), key=lambda r: r["key"])


def _written(record: dict[str, Any]) -> float:
    return float(record.get("run", {}).get("unix_time", 0.0))


def load_records(
    store_dir: str | Path, latest: bool = True, damaged: list[Damaged] | None = None
) -> pd.DataFrame:
    """The tidy records (results.csv columns plus ``unit_key``) of every finished unit.

    With ``latest`` (the default), a unit computed again after its code or input files
    changed contributes only its newest record. Damaged files are appended to ``damaged``
    (a warning each without it, see :func:`iter_records`).
    """
    records: Iterable[dict[str, Any]] = iter_records(store_dir, damaged)
    if latest:
        records = latest_records(records)
    rows = [
        {**row, "unit_key": record["key"], **unit_details(record)}
        for record in records
        for row in record.get("records", [])
    ]
    return pd.DataFrame(rows)


TUNING_GRID_COLUMN = "tuning_grid"
TUNING_TIED_COLUMN = "tuning_tied"
CPU_SECONDS_COLUMN = "cpu_seconds"
DIAGNOSTIC_PREFIX = "diag_"


def unit_details(record: dict[str, Any]) -> dict[str, Any]:
    """What a store record holds beyond its results.csv rows, as columns: the tuning grid
    the unit searched (``tuning_grid``: JSON text, each tuned parameter's values in grid
    order; absent for an untuned unit), the tuned parameters whose selected value only tied
    with its neighbour in the grid (``tuning_tied``: JSON list, :func:`tied_parameters`),
    the unit's CPU seconds (``cpu_seconds``: noise,
    tuning, fit, predict and metrics, in its process and every process working for it),
    the method's scalar diagnostics (``diag_<name>``, e.g. PML-NI's ``diag_nnz_V``), and
    the parameter columns holding JSON text (each tuned parameter's grid, each list-valued
    parameter; pmlbench.runner.result_rows.configured_columns) from the unit's description:
    the rows of a record written before these were hold a tuned parameter's configured
    value and no list, and are shown as a run writes results.csv now."""
    split = record.get("split") or {}
    details: dict[str, Any] = {}
    tuning = split.get("tuning") or {}
    points = tuning.get("grid") or []
    if isinstance(points, list) and points and all(isinstance(p, dict) for p in points):
        values = _grid_values(points)
        details[TUNING_GRID_COLUMN] = _one_line_json(dict(sorted(values.items())))
        details[TUNING_TIED_COLUMN] = _one_line_json(tied_parameters(tuning))
    cpu = (record.get("run") or {}).get("cpu_seconds")
    if isinstance(cpu, (int, float)) and not isinstance(cpu, bool):
        details[CPU_SECONDS_COLUMN] = float(cpu)
    unit = record.get("unit")
    if isinstance(unit, dict):
        natural = record.get("noise") == NATURAL_NOISE
        details.update(configured_columns(unit, natural, kind=TEXT_COLUMNS))
    diagnostics = split.get("diagnostics") or {}
    if isinstance(diagnostics, dict):
        for name, value in diagnostics.items():
            if isinstance(value, (bool, int, float, str)):
                details[f"{DIAGNOSTIC_PREFIX}{name}"] = value
    return details


def _grid_values(points: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Each parameter's distinct values over the grid's points, in grid order."""
    values: dict[str, list[Any]] = {}
    for point in points:
        for name, value in point.items():
            if value not in values.setdefault(str(name), []):
                values[str(name)].append(value)
    return values


def _one_line_json(value: Any) -> str:
    return "".join(to_json(value, indent=0).split("\n"))


def _adjacent(values: list[Any], value: Any) -> list[Any]:
    """The values next to ``value`` in ascending order (none when the values are not all
    numbers: categories have no neighbours)."""
    if not all(_is_number(v) for v in values) or value not in values:
        return []
    ordered = sorted(values)
    at = ordered.index(value)
    return ordered[max(at - 1, 0) : at] + ordered[at + 1 : at + 2]


def _tie(score: Any, best: Any) -> bool:
    """Whether two mean selection scores are a tie, as the selection counts ties
    (pmlbench.protocol.tuning.best_index)."""
    if not (_is_number(score) and _is_number(best)):
        return False
    return abs(score - best) <= SCORE_TIE_RTOL * max(abs(best), 1.0)


def tied_parameters(tuning: dict[str, Any]) -> list[str]:
    """The tuned parameters whose selected value scored exactly as well as a value next to
    it in the grid (every other parameter as selected): a selection decided by the
    tie-break, not by a better score (a tied neighbour comes later in grid order: the first
    tied point wins). Empty when the record lacks the scores."""
    points, scores = tuning.get("grid"), tuning.get("mean_scores")
    best = tuning.get("best_index")
    if (
        not isinstance(points, list)
        or not isinstance(scores, list)
        or len(points) != len(scores)
        or not isinstance(best, int)
        or not 0 <= best < len(points)
        or not all(isinstance(p, dict) for p in points)
    ):
        return []
    chosen = points[best]
    tied = []
    for name, values in _grid_values(points).items():
        for neighbour in _adjacent(values, chosen.get(name)):
            other = {**chosen, name: neighbour}
            pairs = zip(points, scores, strict=True)
            if any(p == other and _tie(s, scores[best]) for p, s in pairs):
                tied.append(name)
                break
    return sorted(tied)


def _unit_row(record: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """The identifying columns of a unit record (as in results.csv) plus ``extra``."""
    unit = record.get("unit", {})
    noise, method = unit.get("noise", {}), unit.get("method", {})
    grid = (unit.get("tune") or {}).get("grid")
    return {
        "dataset": unit.get("dataset", {}).get("name"),
        "noise": noise.get("name"),
        **parameter_columns(noise, NOISE_PREFIX),
        "method": method.get("name"),
        **parameter_columns(method, PARAM_PREFIX, grid),
        "seed": unit.get("seed"),
        "split": unit.get("split"),
        **extra,
    }


def load_unfinished(store_dir: str | Path) -> pd.DataFrame:
    """One row per unit that did not finish, whatever the reason (failed, timed out, not
    applicable, in that order): dataset, noise and its prefixed parameter columns, method
    and its prefixed parameter columns (as in results.csv), seed, split, status, error (the
    one-line error, timeout or reason), path (its store file), unit_key, and where the
    outcome has them traceback (failed), unit_timeout and elapsed_seconds (timed out)."""
    root = _check_dir(store_dir)
    rows = []
    for status in OUTCOMES:
        for record in iter_outcomes(root, status):
            key = record.get("key", "")
            extra = {
                name: record[name]
                for name in ("traceback", "unit_timeout", "elapsed_seconds")
                if name in record
            }
            rows.append(
                _unit_row(
                    record,
                    status=str(status),
                    error=record.get("reason" if status == Status.NOT_APPLICABLE else "error"),
                    path=str(store_outcome_path(root, key, status)),
                    unit_key=key,
                    **extra,
                )
            )
    return pd.DataFrame(rows)
