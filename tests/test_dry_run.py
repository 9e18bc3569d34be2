"""``dry_run=true``: count a sweep's done, failed, n/a, timed-out and missing units and estimate
the CPU time left, computing nothing, loading no dataset and writing nothing to the store or
the cache."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import asdict
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from pmlbench.runner.costmodel import CostModel, Work, unit_signature
from pmlbench.runner.dryrun import (
    Estimator,
    JobPlan,
    PlannedUnit,
    TimingIndex,
    UnitEstimate,
    duration,
    job_estimate,
    read_job_plans,
    summary_line,
)
from pmlbench.runner.format import read_units, store_record_path
from pmlbench.runner.store import ResultStore, iter_records
from pmlbench.runner.units import canonical_json, content_key
from tests.helpers import NOT_YET_RECORDED, plugin_env

SWEEP = [
    "-m",
    "method=mlknn",
    "dataset=guarded",
    "protocol.n_splits=2",
    "noise.rate=0.5,1.0",
    "method.k=5,10",
    "quiet=true",
]


def run(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pmlbench",
            *args,
            f"results_store={tmp_path / 'store'}",
            f"cache_dir={tmp_path / 'cache'}",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=600,
    )


def snapshot(*roots: Path) -> dict[str, bytes]:
    return {
        str(p): p.read_bytes() for root in roots for p in sorted(root.rglob("*")) if p.is_file()
    }


def describe(unit: dict) -> tuple:
    return (unit["noise"]["rate"], unit["method"]["k"], unit["split"])


def test_dry_run_of_a_half_finished_sweep_counts_exactly_and_computes_nothing(tmp_path):
    marks = tmp_path / "marks"
    env = plugin_env(tmp_path / "plugins", GUARDED_MARKS=str(marks))
    first = run(tmp_path, env, *SWEEP, f"hydra.sweep.dir={tmp_path / 'first'}")
    assert first.returncode == 0, first.stdout + first.stderr
    store = ResultStore(tmp_path / "store")
    records = sorted(iter_records(store.root), key=lambda r: r["key"])
    assert len(records) == 8 and len(list(marks.iterdir())) == 4  # one load per job
    deleted = records[:3]
    for record in deleted:
        store.record_path(record["key"]).unlink()
    kept_cpu = [r["run"]["cpu_seconds"] for r in records[3:]]

    before = snapshot(store.root, tmp_path / "cache")
    forbid = {**env, "GUARDED_FORBID": "1"}
    dry = run(tmp_path, forbid, *SWEEP, "dry_run=true", f"hydra.sweep.dir={tmp_path / 'dry'}")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert snapshot(store.root, tmp_path / "cache") == before, "the dry run wrote somewhere"
    assert len(list(marks.iterdir())) == 4, "the dry run loaded the dataset"
    assert "error" not in dry.stdout + dry.stderr
    assert not list((tmp_path / "dry").rglob("units.json"))
    assert not list((tmp_path / "dry").rglob("results.csv"))

    lines = [ln for ln in dry.stdout.splitlines() if ln.startswith("dry run: ")]
    jobs, (summary,) = lines[:-1], lines[-1:]
    assert len(jobs) == 4 and all(": 2 units: " in ln for ln in jobs)
    estimate = duration(sum(kept_cpu) / len(kept_cpu) * 3)
    assert summary == (
        "dry run: 8 units: 5 done, 0 failed, 0 n/a, 0 timed out, 3 missing; "
        f"estimated {estimate} CPU for the 3 to compute (from 5 stored timings); 4 jobs"
    )
    planned = [u for plan in read_job_plans(tmp_path / "dry") for u in plan.units]
    missing = {u.key for u in planned if u.state == "missing"}
    assert missing == {r["key"] for r in deleted}
    assert {u.key for u in planned if u.state == "done"} == {r["key"] for r in records[3:]}

    # every kind of earlier outcome, and a limit that the timed-out unit already reached
    failed, refused, stopped = deleted
    common = {"schema": 1, "config": {}, "run": {}}
    store.save_outcome({**common, "key": failed["key"], "status": "failed",
                        "unit": failed["unit"], "error": "ValueError: boom"})  # fmt: skip
    store.save_outcome({**common, "key": refused["key"], "status": "not_applicable",
                               "unit": refused["unit"], "reason": "capped"})  # fmt: skip
    store.save_outcome({**common, "key": stopped["key"], "status": "timed_out",
                        "unit": stopped["unit"], "error": "timed out after 5.1 s",
                        "unit_timeout": 5, "elapsed_seconds": 5.1})  # fmt: skip
    before = snapshot(store.root, tmp_path / "cache")
    again = run(
        tmp_path, forbid, *SWEEP, "dry_run=true", "unit_timeout=5",
        f"hydra.sweep.dir={tmp_path / 'dry2'}",
    )  # fmt: skip
    assert again.returncode == 0, again.stdout + again.stderr
    assert snapshot(store.root, tmp_path / "cache") == before
    assert again.stdout.splitlines()[-1] == (
        "dry run: 8 units: 5 done, 1 failed, 1 n/a, 1 timed out, 0 missing; "
        f"estimated {duration(sum(kept_cpu) / len(kept_cpu))} CPU for the 1 to compute "
        "(from 5 stored timings); 4 jobs"
    )

    # a single run's dry run, recomputing: every unit of the job counts
    single = run(
        tmp_path, forbid, *SWEEP[1:4], f"noise.rate={stopped['unit']['noise']['rate']}",
        f"method.k={stopped['unit']['method']['k']}", "recompute=true", "dry_run=true",
        f"hydra.run.dir={tmp_path / 'single'}",
    )  # fmt: skip
    assert single.returncode == 0, single.stdout + single.stderr
    job_line, total = single.stdout.splitlines()[-2:]
    assert job_line.startswith("dry run: mlknn on guarded: 2 units: ")
    assert "1 timed out (split " in job_line
    assert job_line.endswith("; all to compute (recompute=true)")
    assert total.startswith("dry run: 2 units: ") and "for the 2 to compute" in total
    assert len(list(marks.iterdir())) == 4

    # and the real run does what the dry run said: retries the failed unit only
    real = run(tmp_path, env, *SWEEP, "unit_timeout=5", f"hydra.sweep.dir={tmp_path / 'real'}")
    assert real.returncode == 0, real.stdout + real.stderr
    statuses = {
        u["key"]: u["status"]
        for job in (tmp_path / "real").glob("*/units.json")
        for u in read_units(job.parent)
    }
    assert statuses[failed["key"]] == "computed"
    assert statuses[refused["key"]] == "not_applicable"
    assert statuses[stopped["key"]] == "timed_out"
    assert sorted(statuses.values()).count("cached") == 5
    assert store_record_path(store.root, failed["key"]).is_file()


def unit(key: str, method: str, dataset: str, state: str = "missing", **extra) -> PlannedUnit:
    name = json.loads(dataset)["name"]
    return PlannedUnit(
        key, 0, state, state in ("missing", "failed"), method, dataset, name, **extra
    )


def record(method: str, dataset: str, cpu: float, n: int, d: int, labels: int, **tuned) -> dict:
    return {
        "unit": {"method": {"name": method}, "dataset": {"name": dataset}, "tune": tuned},
        "dataset": {"name": dataset, "n": n, "d": d, "l": labels},
        "split": {"n_train": n // 2},
        "run": {"cpu_seconds": cpu},
    }


HOLDOUT = {"cv": 5, "procedure": "holdout", "grid": {"k": [1, 2, 3, 4]}}
MODEL = {  # m: 1e-3 s per training instance per fit, kappa 0.5; bundled dataset a
    "sources": [{"name": "old.tar.xz", "sha256": "ab" * 32}],
    "methods": {"m": {"source": "old.tar.xz", "coefficients": [math.log(1e-3), 1, 0, 0],
                      "kappa": 0.5, "dataset_factors": {"a": math.log(2)}}},
    "datasets": {"a": {"n": 100, "d": 10, "q": 5}},
}  # fmt: skip


def test_estimates_come_from_the_same_pair_scaled_by_fits_else_from_the_cost_model():
    a, b, c = (canonical_json({"name": x}) for x in ("a", "b", "c"))
    timings = TimingIndex.from_records(
        [
            record("m", "a", 10.0, 100, 10, 5),  # untuned
            record("m", "a", 20.0, 100, 10, 5, **HOLDOUT),  # tuned: 1 + 0.5 x 4 x 0.8 fits
            record("other", "b", 1.0, 1000, 10, 10),
        ]
    )
    assert timings.n_timings == 3 and timings.dims[b] == (1000, 10, 10)
    assert timings.estimate("m", a) == pytest.approx(15.0)  # as recorded
    tuned = Work.of(HOLDOUT)
    assert timings.estimate("m", a, Work(), 0.5) == pytest.approx((10 + 20 / 2.6) / 2)
    assert timings.estimate("m", a, tuned, 0.5) == pytest.approx((10 * 2.6 + 20) / 2)
    assert timings.estimate("m", b) is None and timings.estimate("new", a) is None

    model = CostModel(MODEL)
    work = {"work": asdict(tuned), "test_size": 0.5}
    units = [
        unit("1", "m", a, **work),  # stored pair: 23 s
        unit("2", "m", b, **work),  # the model, b's size from the store: 500 rows x 2.6 fits
        unit("3", "m", c, **work),  # c's size: nobody knows
        unit("4", "new", b, **work),  # no model of new: the median known method, kappa 1
        unit("5", "m", a, "done"),
    ]
    line = summary_line(units, timings, model)
    assert line == (
        "dry run: 5 units: 1 done, 0 failed, 0 n/a, 0 timed out, 4 missing; "
        "estimated 26 s CPU for 3 of the 4 to compute, 1 unknown "
        "(23 s for 1 from 3 stored timings; 1.3 s for 1 from the cost model fitted to "
        "old.tar.xz sha256 abababab; 2.1 s for 1 of method new, which the cost model does "
        "not know, as the median known method; no recorded size of dataset c)"
    )
    # a dataset of the model's own: its factor; a timed-out unit counts what it ran
    estimator = Estimator(TimingIndex(), model)
    known = unit("6", "m", a, **work)
    assert estimator(known) == UnitEstimate(pytest.approx(2 * 50 * 2.6e-3), "model")
    assert estimator(unit("7", "m", a, elapsed_seconds=9.0, **work)).seconds == 9.0
    # the fallback rule scaled to the method's own stored timings on other datasets
    own = TimingIndex.from_records([record("new", "b", 5.0, 1000, 10, 10)])  # 10x the rule
    assert Estimator(own, model)(unit("8", "new", a, **work)).seconds == pytest.approx(
        10 * 50 * 1e-3 * 4.2
    )
    assert "scaled to the stored timings of new" in summary_line(
        [unit("8", "new", a, **work)], own, model
    )
    assert summary_line([unit("4", "new", b, **work)], timings, None).endswith(
        "CPU time for the 1 to compute unknown (no stored timing or cost model of method new)"
    )
    assert summary_line([unit("5", "m", a, "done")] * 2, timings) == (
        "dry run: 1 unit: 1 done, 0 failed, 0 n/a, 0 timed out, 0 missing; nothing to compute"
    )
    plan = JobPlan("m on a", None, [unit("1", "m", a), unit("5", "m", a, "done")])
    plan.units[1].split = 1
    assert plan.line() == "dry run: m on a: 2 units: 1 done, 1 missing (split 0)"
    assert json.loads(json.dumps(plan.units[0].__dict__))["state"] == "missing"


def test_a_unit_declined_before_is_expected_to_decline_again_at_no_cost(tmp_path):
    """A unit whose key is new (other code) but that the store, or the cost model's sources,
    hold declined under the same signature counts 0 s and is named apart; finished since, or
    already declined under its own key, it is not."""
    a = canonical_json({"name": "a"})
    old_unit = {"method": {"name": "m", "cap": 4}, "dataset": {"name": "a"}, "split": 0,
                "metrics": [], "code": {"pmlbench": "old"}}  # fmt: skip
    store = ResultStore(tmp_path / "store")
    store.save_outcome({"schema": 1, "key": "k-old", "status": "not_applicable",
                        "unit": old_unit, "reason": "m refuses a (method.cap = 4)",
                        "config": {}})  # fmt: skip
    signature = unit_signature({**old_unit, "code": {"pmlbench": "new"}, "split": 3})
    timings = TimingIndex.from_stores([store.root])
    assert timings.declined == {signature: str(store.root)}
    model = CostModel({**MODEL, "declined": [{"signature": "s-model", "source": "old.tar.xz"}]})
    work = {"work": asdict(Work.of(HOLDOUT)), "test_size": 0.5}
    units = [
        unit("new-key", "m", a, signature=signature, **work),
        unit("other", "m", a, signature="s-model", **work),
        unit("fresh", "m", a, signature="s-other", **work),
        unit("k-old", "m", a, "not_applicable", signature=signature),  # its own outcome
    ]
    estimator = Estimator(timings, model)
    assert estimator(units[0]) == UnitEstimate(0.0, "declined", str(store.root))
    assert estimator(units[1]) == UnitEstimate(0.0, "declined", "old.tar.xz")
    assert estimator(units[2]).source == "model"
    line = summary_line(units, timings, model)
    fresh = duration(estimator(units[2]).seconds)
    assert line == (
        "dry run: 4 units: 0 done, 0 failed, 1 n/a, 0 timed out, 3 missing; "
        f"estimated {fresh} CPU for the 3 to compute ({fresh} for 1 from the cost model fitted "
        "to old.tar.xz sha256 abababab; 2 expected to decline up front at no cost, as the "
        f"same units of method m did in {store.root} and old.tar.xz)"
    )
    assert summary_line(units[:1], timings, model).endswith(
        f"estimated 0.0 s CPU for the 1 to compute (1 expected to decline up front at no "
        f"cost, as the same units of method m did in {store.root})"
    )
    assert job_estimate(units, estimator) == pytest.approx(estimator(units[2]).seconds)
    # the same unit finished since (the cap lifted): no longer expected to decline
    done = {**old_unit, "split": 1, "metrics": []}
    store.save({"schema": 1, "key": content_key(done), "status": "done", "unit": done,
                "records": [], "split": {"index": 1, "values": {}}, "noise": "uniform",
                "dataset": {"name": "a", "n": 10, "d": 2, "l": 5},
                "run": {"cpu_seconds": 1.0}})  # fmt: skip
    assert TimingIndex.from_stores([store.root]).declined == {}


def test_an_empty_store_dry_run_estimates_every_method_builtin_or_not(tmp_path):
    """From an empty store every unit gets a number: the built-in methods from their cost
    models, a plugin's (picky) by the fallback rule; and the tuning counts as the protocol
    runs it (holdout: one fold of the grid)."""
    builtin = sorted(
        ep.name
        for ep in entry_points(group="pmlbench.methods")
        if ep.value.startswith("pmlbench.methods.") and ep.name != "external"
    )
    sweep = tmp_path / "sweep"
    result = subprocess.run(
        [sys.executable, "-m", "pmlbench", "-m", f"method={','.join([*builtin, 'picky'])}",
         "dataset=emotions", "protocol.n_splits=1", "dry_run=true", "quiet=true",
         f"results_store={tmp_path / 'store'}", f"cache_dir={tmp_path / 'cache'}",
         f"hydra.sweep.dir={sweep}"],
        capture_output=True, text=True, cwd=tmp_path, timeout=600,
        env=plugin_env(tmp_path / "plugins"),
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    summary = result.stdout.splitlines()[-1]
    n = len(builtin) + 1
    assert summary.startswith(f"dry run: {n} units: 0 done") and "unknown" not in summary
    modelled = [m for m in builtin if m not in NOT_YET_RECORDED]
    assert f"for {len(modelled)} from the cost model fitted to " in summary
    unknown = sorted(["picky", *NOT_YET_RECORDED])
    label = "method" if len(unknown) == 1 else "methods"
    assert (
        f"for {len(unknown)} of {label} {', '.join(unknown)}, which the cost model does not know"
        in summary
    )
    units = {u.method: u for plan in read_job_plans(sweep) for u in plan.units}
    assert sorted(units) == sorted([*builtin, "picky"])
    model = CostModel.load()
    estimator = Estimator(TimingIndex(), model)
    for method, u in units.items():
        work = Work(**u.work)
        if method != "picky":  # the built-in methods tune their default grids
            assert work.tuned and work.scored_folds == 1 and work.fold_share == 0.8, method
        found = estimator(u)
        assert found.seconds is not None and math.isfinite(found.seconds), method
        fallback = method == "picky" or method in NOT_YET_RECORDED
        assert found.source == ("fallback" if fallback else "model"), method
        # emotions: 593 instances, ceil(593 / 2) = 297 of them the test part of a split
        assert found.seconds == pytest.approx(
            model.estimate(method, 593 - 297, 72, 6, work, "emotions").seconds
        )
