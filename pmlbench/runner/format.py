"""The on-disk format of run directories and the result store, written and read only here.

A run directory (the output directory of one run, or of one job of a multirun)::

    results.csv                tidy rows, one per split x metric; written last, so its
                               presence marks a complete run (its rows:
                               pmlbench.runner.outputs.tidy_records)
    run.json                   resolved config, seeds, versions, git commit, per-split summaries
    units.json                 each unit's key and status: computed, cached, failed,
                               not_applicable or timed_out
    dry_run.json               what a job's units would do, written only by a dry run
    predictions/split_<i>.npz  split i's arrays, when the run asked for ``save_predictions``
    error.txt                  the traceback of a multirun job that failed outside any unit
    .hydra/                    Hydra's own record of the job (written by Hydra)

A multirun's sweep directory also holds ``.pmlbench_sweep.json`` (the number of jobs and the
start time), from which each job prints the sweep's progress.

A result store (pmlbench.runner.store) holds per unit ``<key>.json`` (a finished unit),
``<key>.npz`` (its predictions), ``<key>.failed.json`` (a unit that raised),
``<key>.na.json`` (a unit its method declared not applicable) and ``<key>.timeout.json`` (a
unit stopped at ``unit_timeout``).

Columns of results.csv: dataset, noise, ``noise_<p>`` per noise parameter (none for natural
candidate labels), method, ``param_<p>`` per method parameter (a list, or the grid of a tuned
parameter, as JSON text: ``param_lambda2`` = ``[1,10,100,1000]``), seed, split, metric,
value, higher_is_better, convention, bipartition, tuned (the values the split chose:
``lambda2=100``), oracle, n_train, n_test, n_degenerate, fit_seconds, predict_seconds, and
the split's training-side measures (``disambiguation_auc``, ``disambiguation_precision``)
for methods that expose ``disambiguation_scores_``. Text cells are written as CSV cells that
act on nothing (pmlbench.core.safe_text.csv_cell). :func:`parameter_columns` builds the
prefixed columns from a plugin's config node; :func:`parameter_name` and
:func:`parse_prefixed` read them back.

JSON files go through :func:`to_json` / :func:`from_json`, arrays through :func:`save_npz` /
:func:`load_npz` (never pickled).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePath
from typing import Any

import numpy as np

from pmlbench.core.atomic import atomic_write_text
from pmlbench.runner.status import Status

# run directory
RESULTS_FILE = "results.csv"
RUN_RECORD_FILE = "run.json"
UNITS_FILE = "units.json"
PREDICTIONS_DIR = "predictions"
ERROR_FILE = "error.txt"
DRY_RUN_FILE = "dry_run.json"
HYDRA_DIR = ".hydra"
# sweep directory
SWEEP_PROGRESS_FILE = ".pmlbench_sweep.json"
# result store
STORE_RECORD_SUFFIX = ".json"
STORE_ARRAYS_SUFFIX = ".npz"
# the one table from the outcome of a unit that did not finish to the file recording it
STORE_FAILURE_SUFFIX = ".failed.json"
STORE_NOT_APPLICABLE_SUFFIX = ".na.json"
STORE_TIMEOUT_SUFFIX = ".timeout.json"
OUTCOME_SUFFIXES: dict[Status, str] = {
    Status.FAILED: STORE_FAILURE_SUFFIX,
    Status.TIMED_OUT: STORE_TIMEOUT_SUFFIX,
    Status.NOT_APPLICABLE: STORE_NOT_APPLICABLE_SUFFIX,
}
# every store file that ends in .json but is not a finished unit's record
STORE_OUTCOME_SUFFIXES = tuple(OUTCOME_SUFFIXES.values())

# results.csv columns
NOISE_PREFIX = "noise_"
PARAM_PREFIX = "param_"

# The versions of run.json and of store records list the loaded BLAS/LAPACK libraries
# (``blas``) sorted, joined by this separator; older records list them in load order.
LIBRARY_SEPARATOR = "; "

# JSON indentation: run.json has always used two spaces, store records and units.json one
RUN_RECORD_INDENT = 2
STORE_INDENT = 1


def predictions_path(run_dir: str | Path, split: int) -> Path:
    """Where a run directory keeps the arrays of split ``split``."""
    return Path(run_dir) / PREDICTIONS_DIR / f"split_{split}.npz"


def store_record_path(root: str | Path, key: str) -> Path:
    """The file that marks unit ``key`` done in the store at ``root``."""
    return Path(root) / f"{key}{STORE_RECORD_SUFFIX}"


def store_arrays_path(root: str | Path, key: str) -> Path:
    """The predictions of unit ``key`` in the store at ``root``."""
    return Path(root) / f"{key}{STORE_ARRAYS_SUFFIX}"


def store_outcome_path(root: str | Path, key: str, status: Status) -> Path:
    """The file recording that unit ``key`` ended as ``status`` (failed, not applicable or
    timed out) in the store at ``root``."""
    return Path(root) / f"{key}{OUTCOME_SUFFIXES[Status(status)]}"


def is_temporary(path: Path) -> bool:
    """Whether ``path`` is a hidden file, such as an atomic write still under way."""
    return path.name.startswith(".")


def store_record_files(root: Path) -> list[Path]:
    """The finished-unit files of a store, in key order."""
    return sorted(
        p
        for p in root.glob(f"*{STORE_RECORD_SUFFIX}")
        if not p.name.endswith(STORE_OUTCOME_SUFFIXES) and not is_temporary(p)
    )


def _suffixed_files(root: Path, suffix: str) -> list[tuple[str, Path]]:
    return [
        (p.name[: -len(suffix)], p) for p in sorted(root.glob(f"*{suffix}")) if not is_temporary(p)
    ]


def store_outcome_files(root: Path, status: Status) -> list[tuple[str, Path]]:
    """(key, path) of every file of a store recording the outcome ``status``, in key
    order."""
    return _suffixed_files(root, OUTCOME_SUFFIXES[Status(status)])


def is_store_dir(path: Path) -> bool:
    """Whether ``path`` is a result store: a directory of per-unit JSON files (a run
    directory's own JSON files do not count)."""
    run_files = {RUN_RECORD_FILE, UNITS_FILE, DRY_RUN_FILE}
    return path.is_dir() and any(
        p.name not in run_files and not is_temporary(p)
        for p in path.glob(f"*{STORE_RECORD_SUFFIX}")
    )


def _encode_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, PurePath):
        return str(value)
    raise TypeError(
        f"cannot write a {type(value).__module__}.{type(value).__qualname__} to a pmlbench "
        "JSON file; convert it to numbers, strings, lists or dicts first"
    )


# How a NaN or infinite number is written: strict JSON has no such numbers, so each becomes
# an object {NONFINITE_KEY: "NaN" | "Infinity" | "-Infinity"} that from_json reads back.
NONFINITE_KEY = "$nonfinite"
_NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _strict(value: Any) -> Any:
    """``value`` with every non-finite float (numpy's too) replaced by its marker object."""
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(v) for v in value]
    if isinstance(value, np.ndarray):
        return _strict(value.tolist()) if value.dtype.kind in "fc" else value.tolist()
    if isinstance(value, (float, np.floating)) and not math.isfinite(value):
        return {
            NONFINITE_KEY: "NaN" if math.isnan(value) else f"{'-' if value < 0 else ''}Infinity"
        }
    return value


def _read_nonfinite(pairs: list[tuple[str, Any]]) -> Any:
    if len(pairs) == 1 and pairs[0][0] == NONFINITE_KEY and pairs[0][1] in _NONFINITE:
        return _NONFINITE[pairs[0][1]]
    return dict(pairs)


def to_json(data: Any, *, indent: int = STORE_INDENT) -> str:
    """Strict JSON text of ``data``: numpy scalars become Python numbers, arrays lists, paths
    strings, and NaN or infinite numbers objects ``{"$nonfinite": "NaN"}`` (JSON has no
    such numbers; other tools' parsers refuse Python's ``NaN``), read back by
    :func:`from_json`.

    Raises:
        TypeError: for any other object that JSON cannot represent, naming its type.
    """
    return json.dumps(_strict(data), indent=indent, default=_encode_default, allow_nan=False)


def from_json(text: str) -> Any:
    """The data :func:`to_json` wrote (arrays come back as lists, non-finite numbers as
    floats; files from before strict JSON, with bare ``NaN``, are read too).

    Raises:
        ValueError: the text is not JSON, or nests too deeply to read.
    """
    try:
        return json.loads(text, object_pairs_hook=_read_nonfinite)
    except RecursionError:
        raise ValueError("nested too deeply to be a pmlbench file") from None


def save_npz(path: str | Path, arrays: Mapping[str, np.ndarray]) -> None:
    """Write named arrays to ``path`` (compressed, the name kept as given: no ``.npz`` added).

    Raises:
        TypeError: for an array of Python objects, which could only be stored pickled.
    """
    for name, array in arrays.items():
        if np.asarray(array).dtype.hasobject:
            raise TypeError(f"array {name!r} holds Python objects; npz files are never pickled")
    named: dict[str, Any] = dict(arrays)
    with open(path, "wb") as handle:
        np.savez_compressed(handle, **named)


def load_npz(path: str | Path) -> dict[str, np.ndarray]:
    """The named arrays of an npz file, read without unpickling anything."""
    with np.load(path, allow_pickle=False) as data:
        return {name: data[name] for name in data.files}


def write_units(run_dir: str | Path, entries: list[dict[str, Any]]) -> Path:
    """Write a run's units.json (atomically): one entry (key, split, status, ...) per unit."""
    return atomic_write_text(Path(run_dir) / UNITS_FILE, to_json({"units": entries}))


def read_units(run_dir: str | Path) -> list[dict[str, Any]]:
    """The unit entries of a run's units.json.

    Raises:
        OSError: the file cannot be read (e.g. the run has not written it yet).
        ValueError: the file is not a units.json.
    """
    data = from_json((Path(run_dir) / UNITS_FILE).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("units"), list):
        raise ValueError(f"{Path(run_dir) / UNITS_FILE} holds no list of units")
    return data["units"]


# What :func:`parameter_columns` gives: every column, or one kind of them.
ALL_COLUMNS = "all"
SCALAR_COLUMNS = "scalar"
TEXT_COLUMNS = "text"


def parameter_columns(
    node: Mapping[str, Any],
    prefix: str,
    grid: Mapping[str, Any] | None = None,
    *,
    kind: str = ALL_COLUMNS,
) -> dict[str, Any]:
    """The results.csv columns of a plugin's config node, in the node's order: ``<prefix><p>``
    per parameter and ``<prefix><p>.<q>`` per entry of a nested mapping (the external
    method's ``params``), so that a sweep over any of them gives each configuration a label
    of its own; ``name`` is no column.

    A scalar parameter's cell holds its value; a list-valued one's the list as JSON text
    (:func:`list_text`: ``+method.params.ks=[1,20]`` -> ``param_params.ks`` = ``[1,20]``).
    A parameter tuned over a grid (an entry of ``grid``, the ``tune.grid`` node, that is a
    list; a null entry tunes nothing) holds the grid as JSON text (``param_lambda2`` =
    ``[1,10,100,1000]``), never the constructor value, which no tuned fit uses: the value
    each split chose is in the ``tuned`` column. A grid entry for a parameter the node does
    not list comes last.

    ``kind`` selects: :data:`ALL_COLUMNS`; :data:`SCALAR_COLUMNS`, the cells holding a
    scalar (without ``grid``: the columns results.csv had before grids and lists were
    written, which older store records and results.csv files hold); :data:`TEXT_COLUMNS`,
    the cells holding JSON text (lists and grids).
    """
    if kind not in (ALL_COLUMNS, SCALAR_COLUMNS, TEXT_COLUMNS):
        raise ValueError(
            f"kind={kind!r}; use one of {ALL_COLUMNS!r}, {SCALAR_COLUMNS!r}, {TEXT_COLUMNS!r}"
        )
    tuned = {
        str(name): values
        for name, values in (grid or {}).items()
        if isinstance(values, (list, tuple)) and len(values) > 0
    }
    cells: list[tuple[str, Any, bool]] = []
    for name, value in node.items():
        if name == "name":
            continue
        if name in tuned:
            cells.append((f"{prefix}{name}", list_text(tuned.pop(name)), True))
        else:
            cells.extend(_cells(f"{prefix}{name}", value))
    cells += [(f"{prefix}{name}", list_text(values), True) for name, values in tuned.items()]
    return {
        column: value
        for column, value, is_text in cells
        if kind == ALL_COLUMNS or is_text == (kind == TEXT_COLUMNS)
    }


def _cells(column: str, value: Any) -> list[tuple[str, Any, bool]]:
    """(column, cell, whether the cell is JSON text) of one parameter, nested ones too."""
    if isinstance(value, Mapping):
        return [cell for name, inner in value.items() for cell in _cells(f"{column}.{name}", inner)]
    if isinstance(value, (list, tuple)):
        return [(column, list_text(value), True)]
    if isinstance(value, (int, float, str, bool)) or value is None:
        return [(column, value, False)]
    return []


def list_text(values: Iterable[Any]) -> str:
    """A list as one results.csv cell: JSON text on one line (``[1,10,100]``), integral
    numbers written as integers, as a unit's key reads them (pmlbench.runner.units), so that
    ``[1.0, 10.0]`` and ``[1, 10]`` (one unit) read the same; an object JSON cannot hold is
    shown as Python writes it."""
    values = list(values)
    try:
        return "".join(to_json(_integral_as_int(values), indent=0).split("\n"))
    except TypeError:
        return str(values)


def _integral_as_int(value: Any) -> Any:
    """``value`` with every finite integral float (numpy's too) made an int, nested ones too
    (as pmlbench.runner.units writes a unit's description)."""
    if isinstance(value, Mapping):
        return {k: _integral_as_int(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_integral_as_int(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


def parameter_name(column: str, prefix: str) -> str | None:
    """The parameter a prefixed column holds (``param_k`` -> ``k``); None for other columns."""
    return column[len(prefix) :] if column.startswith(prefix) else None


def columns_with_prefix(columns: Iterable[str], *prefixes: str) -> list[str]:
    """The columns built by :func:`parameter_columns` with any of ``prefixes``, in the given
    order."""
    return [c for c in columns if any(parameter_name(c, p) is not None for p in prefixes)]


def parse_prefixed(row: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """The parameters held in a row's ``<prefix><p>`` columns, by parameter name."""
    return {
        name: value
        for column, value in row.items()
        if (name := parameter_name(column, prefix)) is not None
    }
