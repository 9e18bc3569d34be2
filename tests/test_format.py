"""The on-disk format (pmlbench.runner.format): encodings, columns, and that it is the only
place naming the files and column prefixes."""

from __future__ import annotations

import ast
import csv
from pathlib import Path

import numpy as np
import pytest

from pmlbench.plugins.loading import load_metrics
from pmlbench.protocol.experiment import (
    NATURAL_NOISE,
    ExperimentResult,
    ExperimentSpec,
    SplitResult,
)
from pmlbench.runner import format as fmt
from pmlbench.runner.outputs import tidy_records
from pmlbench.runner.status import Status

PACKAGE = Path(__file__).resolve().parents[1] / "pmlbench"
GOLDEN = Path(__file__).resolve().parent / "golden"
FORMAT_MODULE = PACKAGE / "runner" / "format.py"


def test_json_round_trip_turns_numpy_values_into_plain_python():
    data = {
        "int": np.int64(3),
        "float": np.float32(0.5),
        "bool": np.bool_(True),
        "matrix": np.arange(6, dtype=np.int32).reshape(2, 3),
        "path": Path("outputs") / "store",
        "nested": [{"value": np.float64(1.25)}, None, "text"],
    }
    back = fmt.from_json(fmt.to_json(data))
    assert back == {
        "int": 3,
        "float": 0.5,
        "bool": True,
        "matrix": [[0, 1, 2], [3, 4, 5]],
        "path": str(Path("outputs") / "store"),
        "nested": [{"value": 1.25}, None, "text"],
    }
    assert type(back["int"]) is int and type(back["bool"]) is bool
    # the run record keeps its wider indentation, the store and units.json one space
    assert fmt.to_json({"a": 1}, indent=fmt.RUN_RECORD_INDENT) == '{\n  "a": 1\n}'
    assert fmt.to_json({"a": 1}) == '{\n "a": 1\n}'


@pytest.mark.parametrize("value", [object(), {1, 2}, complex(1, 2), b"bytes"])
def test_json_refuses_objects_it_cannot_represent(value):
    with pytest.raises(TypeError, match=type(value).__qualname__):
        fmt.to_json({"diagnostics": {"x": value}})


def test_npz_round_trip_without_pickles(tmp_path):
    arrays = {"scores": np.linspace(0, 1, 6).reshape(2, 3), "y_pred": np.eye(2, dtype=bool)}
    path = tmp_path / "no_suffix_added"
    fmt.save_npz(path, arrays)
    assert path.is_file()
    loaded = fmt.load_npz(path)
    assert loaded.keys() == arrays.keys()
    for name, array in arrays.items():
        np.testing.assert_array_equal(loaded[name], array)
        assert loaded[name].dtype == array.dtype
    with pytest.raises(TypeError, match="'bad'"):
        fmt.save_npz(tmp_path / "objects.npz", {"bad": np.array([{"a": 1}], dtype=object)})
    pickled = tmp_path / "pickled.npz"
    np.savez(pickled, bad=np.array([{"a": 1}], dtype=object))  # a file someone else wrote
    with pytest.raises(ValueError):
        fmt.load_npz(pickled)


def test_parameter_columns_round_trip():
    node = {"name": "mlknn", "k": 10, "s": 1.0, "grid": [1, 2], "metric": "cosine", "x": None}
    columns = fmt.parameter_columns(node, fmt.PARAM_PREFIX)
    # node order; a list is JSON text
    assert columns == {
        "param_k": 10,
        "param_s": 1.0,
        "param_grid": "[1,2]",
        "param_metric": "cosine",
        "param_x": None,
    }
    assert list(columns) == ["param_k", "param_s", "param_grid", "param_metric", "param_x"]
    row = {"dataset": "genbase", "noise_rate": 1.0, **columns, "seed": 0}
    assert fmt.parse_prefixed(row, fmt.PARAM_PREFIX) == {
        "k": 10,
        "s": 1.0,
        "grid": "[1,2]",
        "metric": "cosine",
        "x": None,
    }
    assert fmt.parse_prefixed(row, fmt.NOISE_PREFIX) == {"rate": 1.0}
    assert fmt.columns_with_prefix(row, fmt.NOISE_PREFIX, fmt.PARAM_PREFIX) == [
        "noise_rate",
        *columns,
    ]
    assert fmt.parameter_name("param_k", fmt.PARAM_PREFIX) == "k"
    assert fmt.parameter_name("seed", fmt.PARAM_PREFIX) is None


def _result(noise_name: str) -> ExperimentResult:
    spec = ExperimentSpec(
        dataset={"name": "genbase"},
        noise={"name": "uniform", "rate": 1.0, "rounding": "half_up"},
        method={"name": "mlknn", "k": 10, "s": 1.0},
        metrics=["average_precision", "hamming_loss"],
    )
    split = SplitResult(
        index=0,
        values={"average_precision": 0.9, "hamming_loss": 0.1},
        fit_seconds=1.0,
        predict_seconds=0.1,
        n_train=331,
        n_test=331,
        n_degenerate=0,
        bipartition="method's predict",
        seeds={},
        tuned={"s": 1.0, "k": 5},
    )
    metrics = load_metrics(spec.metrics)
    return ExperimentResult(spec, {"name": "genbase"}, noise_name, [split], metrics)


def test_tidy_records_have_the_results_csv_columns_in_order():
    with open(GOLDEN / "run_mlknn_genbase_uniform_rate1.csv", newline="") as handle:
        golden_columns = next(csv.reader(handle))
    records = tidy_records(_result("uniform"))
    assert list(records.columns) == [*golden_columns, "fit_seconds", "predict_seconds"]
    assert records["tuned"].tolist() == ["k=5;s=1.0"] * 2
    assert records["higher_is_better"].tolist() == [True, False]
    natural = tidy_records(_result(NATURAL_NOISE))
    assert not fmt.columns_with_prefix(natural.columns, fmt.NOISE_PREFIX)


def test_units_json_round_trip_and_bad_files(tmp_path):
    entries = [{"key": "k", "split": 0, "status": "computed", "cpu_seconds": np.float64(1.5)}]
    fmt.write_units(tmp_path, entries)
    assert fmt.read_units(tmp_path) == [{**entries[0], "cpu_seconds": 1.5}]
    (tmp_path / fmt.UNITS_FILE).write_text('{"jobs": []}')
    with pytest.raises(ValueError, match="no list of units"):
        fmt.read_units(tmp_path)
    with pytest.raises(OSError):
        fmt.read_units(tmp_path / "missing")


def test_store_files_and_store_detection(tmp_path):
    for name in ("b.json", "a.json", "a.failed.json", ".c.json.x1.tmp", ".d.json"):
        (tmp_path / name).write_text("{}")
    assert [p.name for p in fmt.store_record_files(tmp_path)] == ["a.json", "b.json"]
    assert fmt.store_outcome_files(tmp_path, Status.FAILED) == [("a", tmp_path / "a.failed.json")]
    assert fmt.is_store_dir(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    for name in (fmt.RUN_RECORD_FILE, fmt.UNITS_FILE, fmt.SWEEP_PROGRESS_FILE):
        (run_dir / name).write_text("{}")
    assert not fmt.is_store_dir(run_dir)
    assert fmt.predictions_path(run_dir, 3) == run_dir / "predictions" / "split_3.npz"


FILE_NAMES = {
    fmt.RESULTS_FILE,
    fmt.RUN_RECORD_FILE,
    fmt.UNITS_FILE,
    fmt.PREDICTIONS_DIR,
    fmt.ERROR_FILE,
    fmt.SWEEP_PROGRESS_FILE,
    fmt.STORE_FAILURE_SUFFIX,
    fmt.STORE_FAILURE_SUFFIX.lstrip("."),
}
COLUMN_PREFIXES = {fmt.NOISE_PREFIX, fmt.PARAM_PREFIX}
# Strings that look like the format's but belong to another format.
OTHER_FORMATS = {
    # the external-command adapter's train file (docs/plugins.md), a layer below the runner
    ("methods/external.py", fmt.PARAM_PREFIX),
    # the file name of the noise-curve figure, noise_<metric>.svg
    ("report/plots.py", fmt.NOISE_PREFIX),
}


def _string_literals(tree: ast.AST) -> list[ast.Constant]:
    """Every string constant of a module (f-string parts included) except docstrings."""
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


def test_only_the_format_module_names_files_and_column_prefixes():
    """A file name used as a path (alone or as the last part of a glob), or a column prefix
    used to build or parse a column, outside runner/format.py bypasses the format module.
    Messages that mention a file in a sentence are fine."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == FORMAT_MODULE:
            continue
        relative = path.relative_to(PACKAGE).as_posix()
        for node in _string_literals(ast.parse(path.read_text(encoding="utf-8"))):
            if node.value.rsplit("/", 1)[-1] in FILE_NAMES:
                found.append(f"{relative}:{node.lineno}: {node.value!r}")
            elif node.value in COLUMN_PREFIXES and (relative, node.value) not in OTHER_FORMATS:
                found.append(f"{relative}:{node.lineno}: {node.value!r}")
    assert not found, "use pmlbench.runner.format instead:\n" + "\n".join(found)


ENCODING_CALLS = {"dumps", "loads", "dump", "load", "savez", "savez_compressed"}
READING_CALLS = {"loads", "load"}


@pytest.mark.parametrize(
    ("package", "calls"),
    # the runner writes and reads run directories and stores; the report only reads them (it
    # may encode its own outputs, e.g. JSON embedded in the HTML report)
    [("runner", ENCODING_CALLS), ("report", READING_CALLS)],
)
def test_only_the_format_module_encodes_files(package, calls):
    """JSON and npz encoding of run directories and stores go through the format module
    (units.py hashes canonical JSON into keys; it writes no file)."""
    found = []
    for path in sorted((PACKAGE / package).rglob("*.py")):
        if path in (FORMAT_MODULE, PACKAGE / "runner" / "units.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in calls
                and isinstance(node.value, ast.Name)
                and node.value.id in {"json", "np", "numpy"}
            ):
                found.append(
                    f"{path.relative_to(PACKAGE)}:{node.lineno}: {node.value.id}.{node.attr}"
                )
    assert not found, "use pmlbench.runner.format instead:\n" + "\n".join(found)


def test_run_records_carry_the_checkout_commit():
    """run.json's git_commit names this checkout's HEAD (it silently became None once when the
    module moved one package deeper)."""
    import re
    import subprocess
    from pathlib import Path

    from pmlbench.runner.outputs import git_commit

    root = Path(__file__).resolve().parents[1]
    if not (root / ".git").exists():
        pytest.skip("not a git checkout")
    head = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    commit = git_commit()
    assert commit is not None and re.fullmatch(r"[0-9a-f]{40}(-dirty)?", commit)
    assert commit.split("-")[0] == head


def test_every_unfinished_outcome_has_one_store_file():
    from pmlbench.runner.status import OUTCOMES

    assert tuple(fmt.OUTCOME_SUFFIXES) == OUTCOMES
    assert len(set(fmt.OUTCOME_SUFFIXES.values())) == len(OUTCOMES)
    assert set(fmt.STORE_OUTCOME_SUFFIXES) == set(fmt.OUTCOME_SUFFIXES.values())
