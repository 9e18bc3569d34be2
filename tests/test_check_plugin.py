"""Deliberately broken plugins, installed as a real distribution, are each flagged by name.

A tiny ``pmlbench-broken`` distribution (a module and a .dist-info folder) is put on
sys.path, so its entry points are found by importlib.metadata exactly like an installed
package's, both in this process and in a ``pmlbench`` subprocess. Every broken plugin is
caught the same way by pmlbench.testing (by name and by object), by ``pmlbench
check-plugin`` and, where a run can see it, by a normal run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import unittest
from pathlib import Path

import pytest

from pmlbench import testing
from pmlbench.cli.commands.check_plugin import main
from pmlbench.errors import PluginError, PmlbenchError
from pmlbench.plugin import Interval
from pmlbench.plugins import registry
from pmlbench.protocol.experiment import ExperimentSpec, run_experiment
from pmlbench.testing import PluginCheckError, plugin_checks, run_checks

DIST = "pmlbench-broken"

MODULE = """
import numpy as np
from sklearn.base import BaseEstimator
from pmlbench.plugin import Interval, Metric


class _Base(BaseEstimator):
    parameter_constraints = {"k": [Interval(int, 1, None)]}

    def __init__(self, k: int = 3):
        self.k = k

    def fit(self, X, Y):
        self.l_ = Y.shape[1]
        return self

    def decision_function(self, X):
        return np.tile(np.linspace(0, 1, self.l_), (X.shape[0], 1))

    def predict(self, X):
        return (self.decision_function(X) >= 0.5).astype(int)


class NoFit(_Base):
    fit = None


class BadShape(_Base):
    def decision_function(self, X):
        return np.zeros((X.shape[0], self.l_ + 1))


class NanScores(_Base):
    def decision_function(self, X):
        scores = super().decision_function(X)
        scores[0, 0] = np.nan
        return scores


class NotBinary(_Base):
    def predict(self, X):
        return self.decision_function(X)


class WritesTestFeatures(_Base):
    def decision_function(self, X):
        X[0, 0] = 1.0  # as a run hands it: read-only
        return super().decision_function(X)


class Unclonable(_Base):
    def __init__(self, k: int = 3):
        self.kk = k


class Nondeterministic(_Base):
    def decision_function(self, X):
        return np.random.default_rng().random((X.shape[0], self.l_))


class Crashes(_Base):
    def fit(self, X, Y):
        raise ValueError("shapes (3,4) and (5,6) not aligned")


class DenseOnly(_Base):
    def fit(self, X, Y):
        if not isinstance(X, np.ndarray):
            raise TypeError("expected an ndarray")
        return super().fit(X, Y)


def drop_true(Y_true, rng, rate: float = 1.0):
    Y = Y_true.copy()
    Y[:, 0] = 0
    return Y


def in_place(Y_true, rng):
    Y_true[:] = 1
    return Y_true


def no_direction(Y_true, Y_pred, scores):
    return float((Y_true == Y_pred).mean())


inverted = Metric("inverted", no_direction, higher_is_better=False, needs="bipartition")


def bad_dataset(n: int = 10):
    return {"X": np.zeros((n, 2))}
"""

NO_DIRECTION_MODULE = """
from pmlbench.plugin import Metric

undirected = Metric("undirected", lambda Y_true, Y_pred, scores: 0.0,
                    higher_is_better=None, needs="scores")
"""

ENTRY_POINTS = {
    "pmlbench.methods": {
        "nofit": "broken_pml:NoFit",
        "badshape": "broken_pml:BadShape",
        "nanscores": "broken_pml:NanScores",
        "notbinary": "broken_pml:NotBinary",
        "unclonable": "broken_pml:Unclonable",
        "nondeterministic": "broken_pml:Nondeterministic",
        "crashes": "broken_pml:Crashes",
        "denseonly": "broken_pml:DenseOnly",
        "writestest": "broken_pml:WritesTestFeatures",
        "importfail": "broken_pml_missing_module:Method",
    },
    "pmlbench.noise": {"droptrue": "broken_pml:drop_true", "inplace": "broken_pml:in_place"},
    "pmlbench.metrics": {
        "nodirection": "broken_pml:no_direction",
        "inverted": "broken_pml:inverted",
        "undirected": "broken_pml_nodir:undirected",
    },
    "pmlbench.datasets": {"baddataset": "broken_pml:bad_dataset"},
}

# (kind, name, what the message must say)
VIOLATIONS = [
    ("method", "nofit", "has no fit()"),
    ("method", "badshape", "scores of shape (30, 6), expected (30, 5)"),
    ("method", "nanscores", "NaN or infinite scores"),
    ("method", "notbinary", "predicted values other than 0/1"),
    ("method", "unclonable", "cannot be cloned by scikit-learn"),
    ("method", "nondeterministic", "different scores for the same data"),
    ("method", "crashes", "failed in fit (ValueError: shapes"),
    ("method", "denseonly", "failed in fit (TypeError: expected an ndarray"),
    ("method", "writestest", "tried to change an array it was handed while predicting"),
    ("method", "importfail", "failed to import (ModuleNotFoundError"),
    ("noise", "droptrue", "dropped true labels"),
    ("noise", "inplace", "modified the ground truth in place"),
    ("metric", "nodirection", "declares no direction"),
    ("metric", "undirected", "has no direction"),
    ("metric", "inverted", "direction (higher_is_better=False) looks wrong"),
    ("dataset", "baddataset", "not a pmlbench Dataset"),
]


@pytest.fixture(scope="module")
def broken_dist(tmp_path_factory) -> Path:
    """Put the ``pmlbench-broken`` distribution on sys.path for the tests of this module."""
    root = tmp_path_factory.mktemp("broken_dist")
    (root / "broken_pml.py").write_text(MODULE)
    (root / "broken_pml_nodir.py").write_text(NO_DIRECTION_MODULE)
    info = root / "pmlbench_broken-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {DIST}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "".join(
            f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n"
            for group, eps in ENTRY_POINTS.items()
        )
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(root))
        registry.plugins.cache_clear()
        yield root
    registry.plugins.cache_clear()
    for module in ("broken_pml", "broken_pml_nodir"):
        sys.modules.pop(module, None)


IDS = [v[1] for v in VIOLATIONS]


def _assert_flagged(failed_details: list[str], kind: str, name: str, message: str) -> None:
    assert failed_details, f"{name} passed every check"
    assert any(message in d for d in failed_details), failed_details
    label = f"{kind} plugin {name!r}"
    assert all(label in d and DIST in d for d in failed_details)


@pytest.mark.parametrize(("kind", "name", "message"), VIOLATIONS, ids=IDS)
def test_run_checks_flags_each_broken_plugin(broken_dist, kind, name, message):
    report = run_checks(kind, name)
    _assert_flagged([c.detail for c in report.failed], kind, name, message)


@pytest.mark.parametrize(("kind", "name", "message"), VIOLATIONS, ids=IDS)
def test_testing_check_functions_raise_for_each_broken_plugin(broken_dist, kind, name, message):
    """pmlbench.testing.check_method & co., by registered name and by the object itself."""
    check = getattr(testing, f"check_{kind}")
    with pytest.raises(PluginCheckError) as error:
        check(name)
    assert message in str(error.value) and DIST in str(error.value)
    assert error.value.report is not None and not error.value.report.ok
    try:
        plugin = registry.load(kind, name)
    except PluginError:
        return  # nothing to hand over: importing it is what fails
    with pytest.raises(PluginCheckError) as error:
        check(plugin)
    _assert_flagged([r.detail for r in error.value.report.failed], kind, name, message)


@pytest.mark.parametrize(("kind", "name", "message"), VIOLATIONS, ids=IDS)
def test_cli_check_plugin_flags_each_broken_plugin(
    broken_dist, capsys, monkeypatch, kind, name, message
):
    monkeypatch.setenv("COLUMNS", "500")  # one table row per check, messages unbroken
    assert main([name, "--kind", kind]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert f"contract violation(s) in {kind} plugin {name!r} (distribution '{DIST}')" in out
    assert " ".join(message.split()) in out


def test_plugin_checks_give_one_callable_per_check(broken_dist):
    checks = dict(plugin_checks("method", "nanscores"))
    assert list(checks) == testing.check_ids("method", "nanscores")
    assert list(checks)[:3] == ["imports", "builds", "clonable"]
    checks["imports"]()
    checks["builds"]()
    with pytest.raises(PluginCheckError, match="NaN or infinite scores"):
        checks["dense"]()
    with pytest.raises(unittest.SkipTest, match="an earlier check failed"):
        checks["reproducible"]()


def test_parametrize_plugin_checks_names_each_test(broken_dist):
    mark = testing.parametrize_plugin_checks([("noise", "droptrue"), ("metric", "inverted")])
    argname, values = mark.args[:2]
    assert argname == "check"
    assert mark.kwargs["ids"] == [
        "noise-droptrue-imports",
        "noise-droptrue-parameters",
        "noise-droptrue-candidates",
        "noise-droptrue-reproducible",
        "metric-inverted-imports",
        "metric-inverted-declared",
        "metric-inverted-values",
    ]
    with pytest.raises(PluginCheckError, match="dropped true labels"):
        values[2]()
    with pytest.raises(PluginCheckError, match="looks wrong"):
        values[-1]()


def test_a_correct_plugin_passes_every_check(broken_dist):
    for kind, name in (
        ("method", "mlknn"),
        ("noise", "uniform"),
        ("metric", "average_precision"),
        ("dataset", "genbase"),
    ):
        report = run_checks(kind, name)
        assert all(c.passed for c in report.results), [(c.name, c.detail) for c in report.results]
        assert getattr(testing, f"check_{kind}")(name) is not None


def test_required_parameters_skip_checks_without_a_violation(broken_dist, capsys):
    report = run_checks("method", "external")
    assert [c.passed for c in report.results[:3]] == [True, None, None]
    assert "not run: parameter(s) ['command'] have no default" in report.results[1].detail
    assert report.ok and testing.check_method("external").skipped
    assert main(["external"]) == 0
    assert "some checks did not run" in capsys.readouterr().out


def test_unknown_parameters_are_the_callers_mistake(broken_dist):
    with pytest.raises(
        PmlbenchError, match=r"method has no parameter\(s\) \['kk'\]; its parameters: k, s"
    ):
        run_checks("method", "mlknn", {"kk": 3})
    with pytest.raises(PmlbenchError, match="a metric has no parameters"):
        run_checks("metric", "coverage", {"x": 1})


class _Hooked:
    """A minimal method whose hooks the tests below set."""

    parameter_constraints = {"k": [Interval(int, 1, None)]}

    def __init__(self, k: int = 3):
        self.k = k

    def get_params(self, deep: bool = True) -> dict:
        return {"k": self.k}

    def set_params(self, **params):
        self.__dict__.update(params)
        return self

    def fit(self, X, Y):
        self.l_ = Y.shape[1]
        return self

    def decision_function(self, X):
        return X[:, : self.l_] * 0.0

    def predict(self, X):
        return (self.decision_function(X) > 0).astype(int)


@pytest.mark.parametrize(
    ("hook", "value", "check", "message"),
    [
        ("default_tuning_grid", {"k": 3}, "builds", "default_tuning_grid to a dict; it must be"),
        ("default_bipartition", "threshold", "builds", "default_bipartition to a str"),
        ("parameter_constraints", {"k": ["int"]}, "builds", "parameter_constraints to a dict"),
        ("diagnostics_", [("iterations", 3)], "hooks", "diagnostics_ to a list"),
    ],
)
def test_hooks_of_the_wrong_type_are_flagged(broken_dist, hook, value, check, message):
    def fit(self, X, Y):
        self.l_ = Y.shape[1]
        if hook == "diagnostics_":
            self.diagnostics_ = value
        return self

    attributes = {"fit": fit} if hook == "diagnostics_" else {hook: value}
    method = type("BadHooks", (_Hooked,), attributes)
    failed = {r.id: r.detail for r in run_checks("method", method).failed}
    assert list(failed) == [check], failed
    assert "method plugin 'BadHooks' (distribution '<unregistered>')" in failed[check]
    assert message in failed[check]


def test_a_parameter_without_constraints_is_flagged(broken_dist):
    """check_method requires a constraint for every constructor parameter, as the built-in
    methods declare them (a class and a configured instance alike)."""
    method = type("Unconstrained", (_Hooked,), {"parameter_constraints": {}})
    failed = {r.id: r.detail for r in run_checks("method", method).failed}
    assert list(failed) == ["builds"], failed
    assert "declares no constraint for parameter(s) ['k']" in failed["builds"]
    with pytest.raises(PluginCheckError, match=r"parameter\(s\) \['k'\]"):
        testing.check_method(method(k=2))


def test_unknown_names_get_a_suggestion(broken_dist):
    with pytest.raises(PluginError, match="did you mean 'nanscores'"):
        registry.kinds_of("nanscore")


def _spec(**nodes) -> ExperimentSpec:
    base = {
        "dataset": {"name": "example_synth", "n_instances": 40, "n_labels": 5},
        "noise": {"name": "uniform"},
        "method": {"name": "mlknn", "k": 3},
        "metrics": ["average_precision"],
        "n_splits": 1,
    }
    return ExperimentSpec(**{**base, **nodes})


RUN_VIOLATIONS = [
    ({"method": {"name": "nofit"}}, "method plugin 'nofit'", "has no fit()"),
    ({"method": {"name": "badshape"}}, "method plugin 'badshape'", "expected (20, 5)"),
    ({"method": {"name": "nanscores"}}, "method plugin 'nanscores'", "NaN or infinite"),
    ({"method": {"name": "notbinary"}}, "method plugin 'notbinary'", "other than 0/1"),
    ({"method": {"name": "importfail"}}, "method plugin 'importfail'", "failed to import"),
    ({"noise": {"name": "droptrue"}}, "noise plugin 'droptrue'", "dropped true labels"),
    ({"metrics": ["nodirection"]}, "metric plugin 'nodirection'", "no direction"),
    ({"metrics": ["undirected"]}, "metric plugin 'undirected'", "no direction"),
    ({"dataset": {"name": "baddataset"}}, "dataset plugin 'baddataset'", "not a pmlbench Dataset"),
]


@pytest.mark.parametrize(
    ("nodes", "label", "message"), RUN_VIOLATIONS, ids=[v[1].split("'")[1] for v in RUN_VIOLATIONS]
)
def test_a_normal_run_names_the_broken_plugin_and_its_distribution(
    broken_dist, nodes, label, message
):
    with pytest.raises(PluginError) as error:
        run_experiment(_spec(**nodes))
    text = str(error.value)
    assert label in text and DIST in text and message in text


def _cli(args: list[str], root: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
        "OPENBLAS_NUM_THREADS": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "pmlbench", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
    )


def test_cli_check_plugin_and_run_report_a_broken_plugin(broken_dist, tmp_path):
    done = _cli(["check-plugin", "nanscores"], broken_dist, tmp_path)
    assert done.returncode == 1
    out = " ".join(done.stdout.split())
    assert "1 contract violation(s) in method plugin 'nanscores' (distribution" in out
    assert "NaN or infinite scores" in out
    done = _cli(
        [
            "method=nanscores",
            "dataset=example_synth",
            "dataset.n_instances=40",
            "protocol.n_splits=1",
            "quiet=true",
            f"hydra.run.dir={tmp_path / 'run'}",
        ],
        broken_dist,
        tmp_path,
    )
    assert done.returncode == 2
    text = " ".join((done.stdout + done.stderr).split())
    assert (
        "error: method plugin 'nanscores' (distribution 'pmlbench-broken') returned NaN "
        "or infinite scores"
    ) in text
    assert "Traceback" not in text
