"""Unit keys, the result store, resume in-process, the shared-work cache and thread limits."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from threadpoolctl import threadpool_info

from pmlbench.api import compose_config
from pmlbench.core import workcache as cache
from pmlbench.errors import PmlbenchError
from pmlbench.methods.mlknn import MLkNN
from pmlbench.protocol.experiment import ExperimentSpec
from pmlbench.runner.outputs import tidy_records
from pmlbench.runner.run import UnitsFailed, run_config, spec_from_config
from pmlbench.runner.status import Status
from pmlbench.runner.store import (
    ResultStore,
    iter_outcomes,
    iter_records,
    load_records,
    load_unfinished,
)
from pmlbench.runner.threads import limit_threads, threads_for_job
from pmlbench.runner.units import unit_description, unit_key, unit_keys

BASE = dict(
    dataset={"name": "genbase"},
    noise={"name": "uniform", "rate": 1.0, "rounding": "half_up"},
    method={"name": "mlknn", "k": 10, "s": 1.0},
    tune={"grid": {"k": None, "s": None}, "cv": 5, "scoring": "average_precision", "oracle": False},
    bipartition={"rule": "method", "threshold": 0.5, "allow_empty": True},
    metrics=["hamming_loss", "average_precision"],
    seed=0,
)


def spec(**changes) -> ExperimentSpec:
    return ExperimentSpec(**{**BASE, **changes})


def test_key_ignores_argument_order_and_spelling():
    reordered = spec(
        method={"s": 1, "k": 10, "name": "mlknn"},  # other order, 1 for 1.0
        noise={"rounding": "half_up", "rate": 1, "name": "uniform"},
        tune={"oracle": True, "grid": {"s": None}},  # no grid: the other options do nothing
        metrics=["average_precision", "hamming_loss"],
        bipartition={
            "allow_empty": True,
            "threshold": 0.9,
            "rule": "method",
            "objective": "micro_f1",
        },  # options the method's own rule does not read
    )
    assert unit_key(reordered, 3) == unit_key(spec(), 3)
    tuned = {"grid": {"k": [5, 10]}, "cv": 5, "scoring": "average_precision", "oracle": False}
    assert unit_key(spec(tune={**tuned, "n_jobs": 2}), 0) == unit_key(
        spec(tune={**tuned, "n_jobs": None}), 0
    )
    # the number of splits and output options do not change what a split is
    assert unit_key(spec(n_splits=2, save_predictions=True), 1) == unit_key(spec(), 1)
    assert unit_keys(spec(n_splits=3)) == [unit_key(spec(), s) for s in range(3)]


@pytest.mark.parametrize(
    "change",
    [
        {"noise": {"name": "uniform", "rate": 1.5, "rounding": "half_up"}},
        {"method": {"name": "mlknn", "k": 11, "s": 1.0}},
        {"dataset": {"name": "medical"}},
        {"seed": 1},
        {"test_size": 0.4},
        {"metric_convention": "sklearn"},
        {"metrics": ["hamming_loss"]},
        {"tune": {"grid": {"k": [5, 10]}, "cv": 5}},
        {"bipartition": {"rule": "threshold", "threshold": 0.5, "allow_empty": True}},
        {"bipartition": {"rule": "method", "threshold": 0.5, "allow_empty": False}},
    ],
)
def test_key_changes_with_what_the_unit_computes(change):
    assert unit_key(spec(**change), 0) != unit_key(spec(), 0)
    assert unit_key(spec(), 0) != unit_key(spec(), 1)


def test_key_keeps_what_learned_bipartition_rules_read():
    def key(**node):
        return unit_key(
            spec(
                bipartition={
                    "rule": "global",
                    "threshold": 0.5,
                    "allow_empty": True,
                    "objective": "micro_f1",
                    "training_scores": "cv",
                    "cv": 5,
                    **node,
                }
            ),
            0,
        )

    assert len({key(), key(objective="hamming_loss"), key(cv=3), key(threshold=0.4)}) == 4
    assert key(training_scores="train", cv=3) == key(training_scores="train", cv=5)


def test_key_covers_the_code():
    description = unit_description(spec(), 0)
    code = description["code"]
    assert code["plugins"] == {} and code["pmlbench"]  # built-in plugins: code.pmlbench
    assert set(code["libraries"]) == {"numpy", "scipy", "scikit-learn"}
    assert description["files"] == {}  # no config string names a file
    assert "code" not in unit_description(spec(), 0, fingerprints=False)


def test_store_write_is_atomic_and_temp_files_are_ignored(tmp_path):
    store = ResultStore(tmp_path)
    record = {"key": "k1", "status": "done", "records": [{"metric": "m", "value": 0.5}]}
    assert store.load("k1") is None
    store.save(record)
    # a writer killed mid-write leaves only its temporary file: simulate one in a subprocess
    code = (
        "import os, sys; from pmlbench.core.atomic import atomic_write\n"
        "def half(p):\n"
        '    p.write_text(\'{"key": "k2", "status": "do\')\n'
        "    os._exit(9)\n"
        f"atomic_write({str(tmp_path / 'k2.json')!r}, half)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code])
    assert proc.returncode == 9
    leftovers = list(tmp_path.glob(".k2.json.*.tmp"))
    assert len(leftovers) == 1 and leftovers[0].read_text().startswith('{"key": "k2"')
    assert not store.is_done("k2") and store.load("k2") is None
    # a record without a unit description is damaged, for a run and for readers alike
    assert store.load("k1") is None and "k1.json" in str(next(iter(store.damaged)))
    assert list(iter_records(tmp_path, damaged=[])) == []
    assert load_records(tmp_path, damaged=[]).empty


def test_failure_is_listed_until_the_unit_succeeds(tmp_path):
    store = ResultStore(tmp_path)
    unit = {
        "dataset": {"name": "genbase"},
        "noise": {"name": "uniform", "rate": 1.0},
        "method": {"name": "mlknn", "k": 3},
        "seed": 0,
        "split": 1,
    }
    store.save_outcome(
        {
            "key": "k",
            "status": "failed",
            "unit": unit,
            "error": "boom",
            "traceback": "Traceback ... boom",
        }
    )
    failures = load_unfinished(tmp_path)
    assert failures.loc[
        0, ["dataset", "method", "param_k", "noise_rate", "split", "error"]
    ].tolist() == ["genbase", "mlknn", 3, 1.0, 1, "boom"]
    store.save({"key": "k", "status": "done", "records": []})
    assert list(iter_outcomes(tmp_path, Status.FAILED)) == []
    assert not store.outcome_path("k", Status.FAILED).exists()
    with pytest.raises(PmlbenchError, match="does not exist"):
        list(iter_records(tmp_path / "missing"))


@pytest.fixture(scope="module")
def genbase_config():
    return compose_config(["method=mlknn", "dataset=genbase", "protocol.n_splits=2", "quiet=true"])


def test_rerun_reuses_stored_units_with_identical_results(tmp_path, genbase_config):
    store = ResultStore(tmp_path / "store")
    first = run_config(genbase_config, tmp_path / "a", quiet=True, store=store)
    second = run_config(genbase_config, tmp_path / "b", quiet=True, store=store)
    statuses = [
        [u["status"] for u in json.loads((tmp_path / d / "units.json").read_text())["units"]]
        for d in ("a", "b")
    ]
    assert statuses == [["computed", "computed"], ["cached", "cached"]]
    pd.testing.assert_frame_equal(
        pd.read_csv(tmp_path / "a" / "results.csv"), pd.read_csv(tmp_path / "b" / "results.csv")
    )
    pd.testing.assert_frame_equal(tidy_records(first), tidy_records(second))
    stored = load_records(tmp_path / "store").drop(columns="unit_key")
    # beyond results.csv's columns: the grid searched, the parameters a tie decided, the
    # unit's CPU time and the scalar diagnostics (runner.store.unit_details)
    extra = ("tuning_grid", "tuning_tied", "cpu_seconds")
    details = [c for c in stored.columns if c.startswith("diag_") or c in extra]
    assert (stored["cpu_seconds"] > 0).all()
    assert set(stored["tuning_grid"].map(json.loads).map(str)) == {str({"k": [5, 10, 15, 20]})}
    assert set(stored["tuning_tied"].map(json.loads).map(tuple)) <= {(), ("k",)}
    stored = stored.drop(columns=details)
    pd.testing.assert_frame_equal(
        stored.sort_values(["split", "metric"]).reset_index(drop=True),
        tidy_records(first).sort_values(["split", "metric"]).reset_index(drop=True),
    )
    run_config(genbase_config, tmp_path / "c", quiet=True, store=store, recompute=True)
    units = json.loads((tmp_path / "c" / "units.json").read_text())["units"]
    assert [u["status"] for u in units] == ["computed", "computed"]


def test_failing_split_is_recorded_and_the_others_run(tmp_path, genbase_config, monkeypatch):
    calls = {"n": 0}
    original = MLkNN.fit

    def fit_failing_first(self, X, Y):
        calls["n"] += 1
        if calls["n"] == 1:
            raise ValueError("synthetic failure in split 0")
        return original(self, X, Y)

    monkeypatch.setattr(MLkNN, "fit", fit_failing_first)
    store = ResultStore(tmp_path / "store")
    with pytest.raises(UnitsFailed, match="1 of 2 units failed; first: ValueError: synthetic"):
        run_config(genbase_config, tmp_path / "run", quiet=True, store=store)
    results = pd.read_csv(tmp_path / "run" / "results.csv")
    assert results["split"].unique().tolist() == [1]
    (failure,) = iter_outcomes(tmp_path / "store", Status.FAILED)
    assert failure["unit"]["split"] == 0 and "synthetic failure" in failure["traceback"]
    assert "Traceback" in failure["traceback"]
    keys = unit_keys(spec_from_config(genbase_config))
    assert failure["key"] == keys[0] and ResultStore(tmp_path / "store").is_done(keys[1])
    # the failed unit is not done: a rerun computes it and only it
    monkeypatch.setattr(MLkNN, "fit", original)
    run_config(genbase_config, tmp_path / "rerun", quiet=True, store=store)
    units = json.loads((tmp_path / "rerun" / "units.json").read_text())["units"]
    assert [u["status"] for u in units] == ["computed", "cached"]
    assert list(iter_outcomes(tmp_path / "store", Status.FAILED)) == []


def test_without_a_store_errors_propagate(tmp_path, genbase_config):
    with pytest.raises(PmlbenchError, match="neighbours requested"):
        run_config(
            {
                **genbase_config,
                "method": {"name": "mlknn", "k": 10_000, "s": 1.0},
                "tune": {"grid": {}},
            },
            tmp_path,
            quiet=True,
        )


def test_cached_array_hits_misses_and_keys(tmp_path):
    X = np.random.default_rng(0).random((20, 4))
    calls = []

    def compute():
        calls.append(1)
        return np.argsort(X, axis=1), sp.random(20, 20, density=0.2, format="csr", random_state=0)

    with cache.using_cache_dir(None):
        cache.cached_array("t", {"X": X}, compute)
        cache.cached_array("t", {"X": X}, compute)
    assert len(calls) == 2  # off unless a directory is set
    with cache.using_cache_dir(tmp_path):
        first = cache.cached_array("t", {"X": X, "k": 3}, compute)
        again = cache.cached_array("t", {"k": 3, "X": X.copy()}, compute)
        assert len(calls) == 3
        np.testing.assert_array_equal(first[0], again[0])
        assert (first[1] != again[1]).nnz == 0 and isinstance(again, tuple)
        X2 = X.copy()
        X2[0, 0] += 1e-12
        cache.cached_array("t", {"X": X2, "k": 3}, compute)
        cache.cached_array("t", {"X": X, "k": 4}, compute)
        cache.cached_array("t", {"X": sp.csr_matrix(X), "k": 3}, compute)
        assert len(calls) == 6


def test_cached_array_is_safe_when_writers_race(tmp_path):
    X = np.arange(12.0).reshape(3, 4)
    barrier = threading.Barrier(8)

    def compute():
        barrier.wait(timeout=10)  # all writers compute at once, then race to rename
        return X * 2

    with cache.using_cache_dir(tmp_path), ThreadPoolExecutor(8) as pool:
        values = list(pool.map(lambda _: cache.cached_array("race", {"X": X}, compute), range(8)))
        assert all(np.array_equal(v, X * 2) for v in values)
        entries = list((tmp_path / "race").rglob("*.npz"))
        assert len(entries) == 1 and not list((tmp_path / "race").rglob("*.tmp"))
        assert np.array_equal(cache.cached_array("race", {"X": X}, lambda: None), X * 2)


def test_threads_per_job():
    # the launcher's default comes from pmlbench.hydra_app.launchers (tests/test_hydra_app.py)
    assert threads_for_job(None, 4) == 4 and threads_for_job(None) is None
    assert threads_for_job(3, 4) == 3
    for bad in (0, -1, "two", True):
        with pytest.raises(PmlbenchError, match="threads_per_job"):
            threads_for_job(bad)
    with limit_threads(1):
        assert all(pool["num_threads"] == 1 for pool in threadpool_info())


def test_methods_share_the_cached_knn_graph(tmp_path):
    from pmlbench.core.checks import check_features
    from pmlbench.datasets.bundled import genbase
    from pmlbench.methods.particle.credible import Stage1Params, propagation_matrix
    from pmlbench.numerics.enrichment import label_enrichment

    data = genbase()
    X, Y = check_features(data.X[:120]), data.Y[:120]
    with cache.using_cache_dir(tmp_path):
        before = cache.stats.copy()
        MLkNN(k=10).fit(X, Y)
        first, _ = label_enrichment(X, Y, k=10)
        again, _ = label_enrichment(X, Y, k=10)
        propagation_matrix(X, Stage1Params(k=10))
        hits = cache.stats - before
    assert hits["knn_graph:miss"] == 1 and hits["knn_graph:hit"] == 3
    assert hits["nnls_weights:miss"] == 1 and hits["nnls_weights:hit"] == 2
    np.testing.assert_array_equal(first, again)
    with cache.using_cache_dir(None):
        np.testing.assert_allclose(label_enrichment(X, Y, k=10)[0], first)


def test_load_records_keeps_the_newest_record_of_a_unit(tmp_path):
    from pmlbench.runner.units import content_key

    store = ResultStore(tmp_path)
    unit = {"schema": 2, "dataset": {"name": "genbase"}, "metrics": ["m"], "split": 0}
    for code, schema, files, when, value, split in (
        ("a", 1, {}, 1.0, 0.1, 0),
        ("b", 2, {"dataset.path": {"x": "1"}}, 2.0, 0.2, 0),  # other code, files and schema
        ("a", 2, {}, 1.0, 0.3, 1),
    ):
        description = {**unit, "schema": schema, "split": split}
        description.update(code={"plugins": {"p": code}}, files=files)
        store.save(
            {
                "key": content_key(description),
                "status": "done",
                "unit": description,
                "run": {"unix_time": when},
                "records": [{"metric": "m", "split": split, "value": value}],
                "split": {"index": split, "values": {"m": value}},
                "dataset": {"name": "genbase"},
                "noise": "uniform",
            }
        )
    assert sorted(load_records(tmp_path)["value"]) == [0.2, 0.3]
    assert sorted(load_records(tmp_path, latest=False)["value"]) == [0.1, 0.2, 0.3]


def test_a_plugin_that_fails_to_import_keeps_its_key(monkeypatch):
    """Its failure record must carry the key a later successful run stores under: keys are
    computed without importing any plugin."""
    from pmlbench.errors import PluginError
    from pmlbench.plugins import registry
    from pmlbench.runner.units import plugin_fingerprint

    working = plugin_fingerprint("method", "pml_ni")
    key = unit_key(spec(method={"name": "pml_ni"}), 0)

    def broken_load(self):
        raise PluginError(f"{self.label} failed to import (ImportError: simulated)")

    monkeypatch.setattr(registry.PluginInfo, "load", broken_load)
    assert working is not None
    assert plugin_fingerprint("method", "pml_ni") == working
    assert unit_key(spec(method={"name": "pml_ni"}), 0) == key


def test_a_fifo_named_like_a_record_is_damaged_not_a_hang(tmp_path, genbase_config):
    """A FIFO named ``<key>.json`` blocked both the report and the run that would reuse it:
    store files are opened only when they are regular files."""
    import os

    from pmlbench.runner.store import iter_damaged

    store = ResultStore(tmp_path / "store")
    run_config(genbase_config, tmp_path / "a", quiet=True, store=store)
    record = sorted((tmp_path / "store").glob("*.json"))[0]
    record.unlink()
    os.mkfifo(record)
    outcome = tmp_path / "store" / f"{record.stem}.failed.json"
    os.mkfifo(outcome)
    damaged = list(iter_damaged(tmp_path / "store"))
    assert [(d.path, d.problem) for d in damaged] == [(record, "not a regular file (a FIFO)")]
    run_config(genbase_config, tmp_path / "b", quiet=True, store=store)
    units = json.loads((tmp_path / "b" / "units.json").read_text())["units"]
    assert sorted(u["status"] for u in units) == ["cached", "computed"]
    assert record.is_file()  # replaced by the recomputed unit


def test_a_results_store_that_is_a_file_is_refused_before_any_work(tmp_path):
    """``results_store`` pointing at a regular file computed every unit, then stopped with
    'file exists'; it now stops first, in one line naming the key."""
    target = tmp_path / "notes.txt"
    target.write_text("mine")
    with pytest.raises(PmlbenchError, match=r"^results_store='.*notes\.txt' is a file, not a"):
        ResultStore(target)
    assert target.read_text() == "mine"


def test_plugins_that_change_their_output_between_runs_are_not_reused(
    tmp_path, monkeypatch, capsys
):
    """A dataset plugin returning other data on each call, or a noise model drawing outside
    the generator it is given, had its first draw reused from the store: a run draws the
    inputs again, compares their digests with the stored ones, and recomputes on a mismatch,
    naming the plugin once."""
    from pmlbench.datasets import bundled
    from pmlbench.noise import uniform

    config = compose_config(
        ["method=mlknn", "tune.grid=null", "dataset=genbase", "protocol.n_splits=2"]
    )
    store = ResultStore(tmp_path / "store")

    def statuses(run: str) -> list[str]:
        run_config(config, tmp_path / run, quiet=True, store=store)
        return [
            u["status"] for u in json.loads((tmp_path / run / "units.json").read_text())["units"]
        ]

    assert statuses("first") == ["computed", "computed"]
    assert statuses("again") == ["cached", "cached"]
    assert "not deterministic" not in capsys.readouterr().err

    drawn = uniform.uniform_noise

    def sloppy(Y, rng, **params):  # draws from a generator of its own as well
        Y_cand = drawn(Y, rng, **params)
        Y_cand[np.random.default_rng().integers(Y.shape[0]), :] = 1
        return Y_cand

    monkeypatch.setattr(uniform, "uniform_noise", sloppy)
    assert statuses("noise") == ["computed", "computed"]
    err = capsys.readouterr().err
    assert err.count("noise plugin 'uniform' drew other candidate labels") == 1
    monkeypatch.setattr(uniform, "uniform_noise", drawn)

    loaded = bundled.genbase

    def drifting():
        data = loaded()
        X = data.X.copy()
        X.data = X.data * (1 + np.random.default_rng().random())
        return type(data)(X=X, Y=data.Y, name=data.name, label_names=data.label_names)

    monkeypatch.setattr(bundled, "genbase", drifting)
    assert statuses("data") == ["computed", "computed"]
    assert capsys.readouterr().err.count("dataset plugin 'genbase' returned other data") == 1
