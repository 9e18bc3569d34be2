"""results.csv's parameter columns (issue 35 item 7): a tuned parameter's column holds the
grid it was tuned over, never the constructor value its fit did not use, in every place
that column appears (a run's results.csv, the rows a store gives a report, the report's
configuration labels); one walk of a config node builds every parameter column; the file
is written once, CSV-safe; older store records and results.csv files still read."""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import pandas as pd
import pytest

from pmlbench.api import compose_config
from pmlbench.errors import PmlbenchError
from pmlbench.plugins.loading import load_metrics
from pmlbench.protocol.experiment import ExperimentResult, ExperimentSpec, SplitResult
from pmlbench.report import ReportOptions, build_report
from pmlbench.report.sources import load_results
from pmlbench.runner import format as fmt
from pmlbench.runner import outputs
from pmlbench.runner.run import run_config
from pmlbench.runner.store import ResultStore, iter_damaged, load_records, load_unfinished
from tests.helpers import run_rows, write_run

ROOT = Path(__file__).resolve().parents[1]
# the authors'-defaults suite, written before grids went into the parameter columns
ARCHIVE = ROOT / "docs" / "leaderboard-defaults-results.tar.xz"
FORMULA = '=HYPERLINK("http://127.0.0.1:9","x")'


# ------------------------------------------------------------------ one column walker


def test_one_walk_gives_scalars_lists_and_grids_in_node_order():
    node = {
        "name": "external",
        "lam": 1.0,
        "params": {"ks": [1.0, 20], "tag": "a", "deep": {"x": [True, None]}},
        "k": 10,
        "s": 1.0,
        "kernel": None,
    }
    grid = {"k": [5, 10.0], "s": None, "extra": ["a", "b"]}
    columns = fmt.parameter_columns(node, fmt.PARAM_PREFIX, grid)
    assert columns == {
        "param_lam": 1.0,
        "param_params.ks": "[1,20]",  # integral numbers as integers, as the unit key has them
        "param_params.tag": "a",
        "param_params.deep.x": "[true,null]",
        "param_k": "[5,10]",  # tuned: the grid, not the constructor's 10
        "param_s": 1.0,  # a null grid entry tunes nothing
        "param_kernel": None,
        "param_extra": '["a","b"]',  # a grid entry the node does not list comes last
    }
    assert list(columns)[:5] == [
        "param_lam",
        "param_params.ks",
        "param_params.tag",
        "param_params.deep.x",
        "param_k",
    ]
    scalars = fmt.parameter_columns(node, fmt.PARAM_PREFIX, grid, kind=fmt.SCALAR_COLUMNS)
    texts = fmt.parameter_columns(node, fmt.PARAM_PREFIX, grid, kind=fmt.TEXT_COLUMNS)
    assert {**scalars, **texts} == columns and not set(scalars) & set(texts)
    assert set(texts) == {"param_params.ks", "param_params.deep.x", "param_k", "param_extra"}
    # without a grid, scalars only: the columns results.csv had before lists and grids
    assert fmt.parameter_columns(node, fmt.PARAM_PREFIX, kind=fmt.SCALAR_COLUMNS)["param_k"] == 10
    with pytest.raises(ValueError, match="kind='lists'"):
        fmt.parameter_columns(node, fmt.PARAM_PREFIX, kind="lists")


def test_the_result_rows_module_has_no_column_walker_of_its_own():
    """list_columns (lists) and prefixed_columns (scalars) walked the same node twice."""
    from pmlbench.runner import result_rows

    assert not hasattr(result_rows, "list_columns")
    assert not hasattr(fmt, "prefixed_columns")


# ------------------------------------------------------------------ a run's results.csv


@pytest.fixture(scope="module")
def tuned_run(tmp_path_factory) -> Path:
    """ML-kNN on genbase, one split, k and s tuned over small grids, with a store."""
    root = tmp_path_factory.mktemp("tuned_run")
    config = compose_config(
        [
            "method=mlknn",
            "dataset=genbase",
            "protocol.n_splits=1",
            "tune.grid.k=[3,5]",
            "tune.grid.s=[0.5,1.0]",
        ]
    )
    run_config(config, root / "sweep" / "0_mlknn", quiet=True, store=ResultStore(root / "store"))
    return root


def test_a_tuned_parameter_s_column_holds_its_grid_and_tuned_each_split_s_choice(tuned_run):
    table = pd.read_csv(tuned_run / "sweep" / "0_mlknn" / "results.csv")
    assert set(table["param_k"]) == {"[3,5]"}  # not ML-kNN's default k=10
    assert set(table["param_s"]) == {"[0.5,1]"}
    (tuned,) = set(table["tuned"])
    chosen = dict(part.split("=") for part in tuned.split(";"))
    assert int(chosen["k"]) in (3, 5) and float(chosen["s"]) in (0.5, 1.0)


def test_the_store_s_rows_and_the_run_s_results_csv_agree(tuned_run):
    stored = load_records(tuned_run / "store")
    assert set(stored["param_k"]) == {"[3,5]"} and set(stored["param_s"]) == {"[0.5,1]"}
    read = load_results([tuned_run / "sweep"])
    assert not len(read.failures)  # not damaged: the rows hold what run.json says
    assert set(read.records["param_k"]) == {"[3,5]"}


def test_an_unfinished_unit_shows_the_grid_too(tmp_path, tuned_run):
    record = json.loads(next((tuned_run / "store").glob("*.json")).read_text())
    store = ResultStore(tmp_path)
    store.save_outcome({**record, "key": "f" * 32, "status": "failed", "error": "boom"})
    (row,) = load_unfinished(tmp_path).to_dict("records")
    assert row["param_k"] == "[3,5]" and row["param_s"] == "[0.5,1]"


# ------------------------------------------------------------------ older files still read


def _legacy(rows: list[dict], unit: dict) -> list[dict]:
    """Rows as results.csv and store records held them before grids and lists were written:
    a tuned parameter's column holds the method node's (constructor) value."""
    method = unit["method"]
    return [{**row, "param_k": method["k"], "param_s": method["s"]} for row in rows]


def test_an_older_store_record_reads_with_its_grid_and_an_edited_one_is_damaged(
    tmp_path, tuned_run
):
    store = shutil.copytree(tuned_run / "store", tmp_path / "store")
    (path,) = [p for p in store.glob("*.json") if p.name.count(".") == 1]
    record = json.loads(path.read_text())
    path.write_text(json.dumps({**record, "records": _legacy(record["records"], record["unit"])}))
    assert list(iter_damaged(store)) == []
    stored = load_records(store)
    assert set(stored["param_k"]) == {"[3,5]"} and set(stored["param_s"]) == {"[0.5,1]"}
    edited = [{**row, "param_k": 7} for row in record["records"]]
    path.write_text(json.dumps({**record, "records": edited}))
    (damaged,) = iter_damaged(store)
    assert "param_k=7" in damaged.problem and "'[3,5]'" in damaged.problem


def test_an_older_results_csv_reads_with_its_grid(tmp_path, tuned_run):
    run = shutil.copytree(tuned_run / "sweep" / "0_mlknn", tmp_path / "run")
    unit = {"method": json.loads((run / "run.json").read_text())["config"]["method"]}
    rows = pd.read_csv(run / "results.csv").to_dict("records")
    pd.DataFrame(_legacy(rows, unit)).to_csv(run / "results.csv", index=False)
    read = load_results([run])
    assert not len(read.failures)
    assert set(read.records["param_k"]) == {"[3,5]"}
    pd.DataFrame([{**r, "param_k": 7} for r in rows]).to_csv(run / "results.csv", index=False)
    with pytest.raises(PmlbenchError, match="no finished unit"):
        load_results([run])  # its only results.csv is damaged: left out


def _archived(method: str) -> tuple[str, dict]:
    """The first finished unit of ``method`` in the leaderboard archive (records written
    before grids were written into the parameter columns)."""
    with tarfile.open(ARCHIVE, "r:xz") as tar:
        for member in tar:
            if member.name.count(".") != 1:
                continue
            record = json.loads(tar.extractfile(member).read())
            if record["unit"]["method"]["name"] == method:
                return Path(member.name).name, record
    raise AssertionError(f"no {method} unit in {ARCHIVE}")


def test_a_record_of_the_leaderboard_archive_reads_with_its_grid(tmp_path):
    name, record = _archived("pml3er")
    grid = record["unit"]["tune"]["grid"]["lambda2"]
    assert {row["param_lambda2"] for row in record["records"]} == {
        record["unit"]["method"]["lambda2"]
    }  # written with the constructor's value
    (tmp_path / name).write_text(json.dumps(record))
    assert list(iter_damaged(tmp_path)) == []
    stored = load_records(tmp_path)
    assert set(stored["param_lambda2"]) == {fmt.list_text(grid)}


# ------------------------------------------------------------------ written once, CSV-safe


def _hostile_result() -> ExperimentResult:
    spec = ExperimentSpec(
        dataset={"name": "genbase"},
        noise={"name": "uniform", "rate": 1.0},
        method={"name": "external", "params": {"ks": [1, 20], "tag": FORMULA}},
        metrics=["average_precision"],
    )
    split = SplitResult(
        index=0,
        values={"average_precision": 0.9},
        fit_seconds=1.0,
        predict_seconds=0.1,
        n_train=10,
        n_test=10,
        n_degenerate=0,
        bipartition="method's predict",
        seeds={},
    )
    metrics = load_metrics(spec.metrics)
    return ExperimentResult(spec, {"name": FORMULA}, "uniform", [split], metrics)


def test_write_results_alone_writes_the_csv_safe_file(tmp_path):
    outputs.write_results(_hostile_result(), {}, tmp_path)
    table = pd.read_csv(tmp_path / fmt.RESULTS_FILE, dtype=str)
    assert (table["dataset"] == "'" + FORMULA).all()  # a spreadsheet shows it as text
    assert (table["param_params.tag"] == "'" + FORMULA).all()
    assert (table["param_params.ks"] == "[1,20]").all()


def test_a_run_writes_results_csv_once(tmp_path, monkeypatch):
    """The run wrote results.csv, then wrote it again CSV-safe with its list columns."""
    from pmlbench.datasets.bundled import DATA_DIR

    shutil.copy(DATA_DIR / "genbase.npz", tmp_path / "g.npz")
    written = []
    original = pd.DataFrame.to_csv

    def counting(frame, path=None, *args, **kwargs):
        if path is not None and Path(path).name.startswith(f".{fmt.RESULTS_FILE}"):
            written.append(path)
        return original(frame, path, *args, **kwargs)

    monkeypatch.setattr(pd.DataFrame, "to_csv", counting)
    config = compose_config(
        [
            "method=mlknn",
            "dataset=file",
            f"dataset.path={tmp_path / 'g.npz'}",
            f"dataset.display_name='{FORMULA}'",
            "protocol.n_splits=1",
            "tune.grid=null",
        ]
    )
    run_config(config, tmp_path / "run", quiet=True)
    assert len(written) == 1
    table = pd.read_csv(tmp_path / "run" / fmt.RESULTS_FILE, dtype=str)
    assert (table["dataset"] == "'" + FORMULA).all()


# ------------------------------------------------------------------ configuration labels


def _pml3er_rows(dataset: str, grid: str, tuned: str) -> list[dict]:
    rows = run_rows(dataset, 1.0, "pml3er", [(0.6, 0.1)] * 2)
    for row in rows:
        row.update(param_lambda2=grid, tuned=tuned, bipartition="score >= 0.5, top label if empty")
    return rows


def test_labels_tell_grids_apart_and_name_the_default_grid_by_the_method(tmp_path):
    for dataset in ("d1", "d2"):
        write_run(
            tmp_path, f"default_{dataset}", _pml3er_rows(dataset, "[1,10,100,1000]", "lambda2=100")
        )
        write_run(tmp_path, f"narrow_{dataset}", _pml3er_rows(dataset, "[1.0,10.0]", "lambda2=10"))
        write_run(tmp_path, f"mlknn_{dataset}", run_rows(dataset, 1.0, "mlknn", [(0.5, 0.2)] * 2))
    report = build_report([tmp_path], ReportOptions(reference="pml3er", plots=False))
    assert report.prepared.methods == ["pml3er", "mlknn", "pml3er[lambda2=[1,10]]"]
