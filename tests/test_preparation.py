"""One preparation per unit: a run looks each of its plugins up once, keys its units from
that prepared form and runs from it (pmlbench.protocol.experiment.prepare,
pmlbench.runner.units.describe_units, pmlbench.protocol.experiment.run_prepared)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from pmlbench.api import compose_config
from pmlbench.cli.main import main as cli_main
from pmlbench.metrics.builtin import PAPER_METRICS
from pmlbench.plugins import registry
from pmlbench.protocol import experiment
from pmlbench.runner import dryrun
from pmlbench.runner import run as run_module
from pmlbench.runner.run import run_config, spec_from_config
from pmlbench.runner.store import ResultStore
from pmlbench.runner.units import unit_keys

# untuned, with ML-kNN's own bipartition rule: see the last test for the tuned case
SMALL = ["method=mlknn", "dataset=genbase", "protocol.n_splits=2", "quiet=true", "tune.grid.k=null"]
# the plugins of one such ML-kNN unit on genbase
PLUGINS = Counter(
    [("dataset", "genbase"), ("noise", "uniform"), ("method", "mlknn")]
    + [("metric", name) for name in PAPER_METRICS]
)


class Counts:
    """Registry look-ups and preparations, and the look-ups made while a unit ran."""

    def __init__(self) -> None:
        self.lookups: Counter[tuple[str, str]] = Counter()
        self.in_units: Counter[tuple[str, str]] = Counter()
        self.preparations = 0
        self.units = 0
        self._in_unit = False

    def per_run(self) -> None:
        self.lookups.clear()
        self.in_units.clear()
        self.preparations = self.units = 0


@pytest.fixture
def counts(monkeypatch) -> Counts:
    counted = Counts()
    get, prepare, run_split = registry.get, experiment.prepare, experiment.run_split

    def counting_get(kind, name):
        counted.lookups[kind, name] += 1
        if counted._in_unit:
            counted.in_units[kind, name] += 1
        return get(kind, name)

    def counting_prepare(spec):
        counted.preparations += 1
        return prepare(spec)

    def counting_run_split(*args, **kwargs):
        counted.units += 1
        counted._in_unit = True
        try:
            return run_split(*args, **kwargs)
        finally:
            counted._in_unit = False

    monkeypatch.setattr(registry, "get", counting_get)
    for module in (experiment, run_module, dryrun):
        monkeypatch.setattr(module, "prepare", counting_prepare)
    monkeypatch.setattr(experiment, "run_split", counting_run_split)
    return counted


def test_a_run_prepares_once_and_looks_each_plugin_up_once(tmp_path, counts):
    config = compose_config(SMALL)
    store = ResultStore(tmp_path / "store")
    counts.per_run()
    run_config(config, tmp_path / "a", quiet=True, store=store)
    assert counts.units == 2
    assert counts.preparations == 1
    assert counts.lookups == PLUGINS  # once per run, whatever the number of units
    assert not counts.in_units

    # the keys computed from the prepared form are those the registry gives for the spec
    units = json.loads((tmp_path / "a" / "units.json").read_text())["units"]
    assert [u["key"] for u in units] == unit_keys(spec_from_config(config))

    counts.per_run()  # every unit in the store: reused, still one preparation
    run_config(config, tmp_path / "b", quiet=True, store=store)
    assert counts.units == 0
    assert (counts.preparations, counts.lookups) == (1, PLUGINS)

    counts.per_run()  # a dry run prepares as the run does
    plan = dryrun.plan_job(config, tmp_path / "plan", store=store)
    assert [u.state for u in plan.units] == ["done", "done"]
    assert (counts.preparations, counts.lookups) == (1, PLUGINS)


def test_a_sweep_prepares_each_job_once(tmp_path, counts, monkeypatch):
    """Two jobs through Hydra's basic launcher, in this process (units too, so that the
    look-ups made while a unit runs are counted)."""
    per_job: list[tuple[int, Counter, Counter, int]] = []
    run = run_module.run_config

    def counting_run_config(*args, **kwargs):
        counts.per_run()
        try:
            return run(*args, **kwargs)
        finally:
            per_job.append(
                (counts.preparations, Counter(counts.lookups), counts.in_units, counts.units)
            )

    monkeypatch.setattr("pmlbench.hydra_app.task.run_config", counting_run_config)
    monkeypatch.setattr(run_module, "isolation_available", lambda: False)
    monkeypatch.chdir(tmp_path)
    code = cli_main(
        [
            "-m",
            *SMALL,
            "seed=0,1",
            "cache_dir=null",
            f"results_store={tmp_path / 'store'}",
            f"hydra.sweep.dir={tmp_path / 'sweep'}",
        ]
    )
    assert code == 0
    assert per_job == [(1, PLUGINS, Counter(), 2)] * 2
    done = sorted(Path(tmp_path / "store").glob("*.json"))
    assert len(done) == 4


def test_a_tuned_run_with_a_learned_rule_looks_nothing_up_per_unit(tmp_path, counts):
    """The tuning score and a learned rule's objective come from the preparation too, for
    every split and inner fold."""
    tuned = ["tune.grid.k=[5,10]", "tune.cv=2", "bipartition.rule=global"]
    config = compose_config([*SMALL, *tuned, "bipartition.training_scores=train"])
    counts.per_run()
    run_config(config, tmp_path / "a", quiet=True)
    assert counts.preparations == 1
    assert not counts.in_units
    assert counts.lookups == PLUGINS
