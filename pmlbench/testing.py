"""Contract checks for plugin authors, as scikit-learn's ``check_estimator`` is for estimators.

Each check drives a plugin through the contract functions a run applies
(:mod:`pmlbench.plugins.contracts`) on a tiny seeded task, plus what only a test can see:
cloning, reproducibility, sparse input, untouched inputs. ``pmlbench check-plugin NAME``
prints the same results.

>>> from pmlbench.testing import check_method
>>> check_method(MyMethod)              # raises PluginCheckError naming each violation
>>> check_method("mlknn", params={"k": 5})

In a plugin's own tests, one test per check::

    from pmlbench.testing import parametrize_plugin_checks

    @parametrize_plugin_checks([("method", MyMethod), ("noise", my_noise)])
    def test_plugin_contract(check):
        check()

A plugin is given by its registered name (then importing it is the first check), as a class
or function, or (methods) as an estimator instance. Checks run in order; a failed check
skips those that depend on it, and parameters without a default skip every check that needs
them (pass them in ``params``).
"""

from __future__ import annotations

import inspect
import unittest
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone

from pmlbench.core.checks import as_dense
from pmlbench.core.parameters import declared_constraints, validate_parameters
from pmlbench.core.read_only import read_only
from pmlbench.errors import PluginError, PmlbenchError
from pmlbench.noise.uniform import uniform_noise
from pmlbench.plugins import contracts, registry
from pmlbench.plugins.names import unknown
from pmlbench.plugins.parameters import REQUIRED, plugin_parameters
from pmlbench.plugins.registry import PluginInfo
from pmlbench.protocol.method_defaults import method_node

SKIPPED_AFTER_FAILURE = "skipped: an earlier check failed"


class PluginCheckError(PluginError):
    """A plugin broke its contract; ``report`` holds every check's result."""

    def __init__(self, message: str, report: CheckReport | None = None) -> None:
        super().__init__(message)
        self.report = report


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check: passed (True), failed (False) or skipped (None).

    Attributes:
        id: a short identifier (``dense``, ``reproducible``...), used in test ids.
        name: what the check verifies, in words.
        passed: True, False, or None when the check did not run.
        detail: what was found, the one-line error, or why the check did not run.
        error: the exception of a failed check.
    """

    id: str
    name: str
    passed: bool | None
    detail: str = ""
    error: BaseException | None = None


@dataclass
class CheckReport:
    """Every check of one plugin, in order."""

    info: PluginInfo
    results: list[CheckResult] = field(default_factory=list)

    @property
    def failed(self) -> list[CheckResult]:
        return [r for r in self.results if r.passed is False]

    @property
    def skipped(self) -> list[CheckResult]:
        return [r for r in self.results if r.passed is None]

    @property
    def ok(self) -> bool:
        """No check failed (some may have been skipped)."""
        return not self.failed

    def raise_for_failures(self) -> CheckReport:
        """Raise a PluginCheckError listing every failed check; return self if none failed."""
        failed = self.failed
        if failed:
            problems = "; ".join(f"[{r.id}] {r.detail}" for r in failed)
            raise PluginCheckError(
                f"{len(failed)} contract violation(s) in {self.info.label}: {problems}", self
            ) from failed[0].error
        return self


@dataclass(frozen=True)
class TinyTask:
    """A seeded toy PML problem: learnable features, true labels, uniform-noise candidates."""

    X_train: np.ndarray
    X_test: np.ndarray
    Y_train: np.ndarray
    Y_test: np.ndarray
    Y_candidates: np.ndarray


def tiny_task(n: int = 60, d: int = 6, n_labels: int = 5, seed: int = 0) -> TinyTask:
    """Labels drawn per instance, features shifted by the labels so that methods can learn."""
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, n_labels)) < 0.3).astype(np.uint8)
    Y[np.arange(n), rng.integers(0, n_labels, n)] = 1  # every instance has a label
    Y[:n_labels, :] = np.eye(n_labels, dtype=np.uint8)  # every label occurs alone somewhere
    centres = rng.normal(scale=2.0, size=(n_labels, d))
    X = Y @ centres + rng.normal(size=(n, d))
    half = n // 2
    Y_cand = uniform_noise(Y[:half], np.random.default_rng(seed + 1), rate=1.0)
    return TinyTask(X[:half], X[half:], Y[:half], Y[half:], Y_cand)


class _MissingParameters(PmlbenchError):
    """The plugin has required parameters and no value was given: checks cannot run."""

    def __init__(self, missing: list[str]) -> None:
        super().__init__(
            f"not run: parameter(s) {missing} have no default; pass --param {missing[0]}=VALUE"
        )
        self.missing = missing


class _UnknownParameters(PmlbenchError):
    """Values were given for parameters the plugin does not have: the caller's mistake."""


@dataclass(frozen=True)
class _Step:
    id: str
    name: str
    fatal: bool = True  # a failure skips the checks after it


IMPORTS = _Step("imports", "imports")


class _Runner:
    """Runs steps in order; a failed fatal step (or missing parameters) skips the rest."""

    def __init__(self, info: PluginInfo) -> None:
        self.report = CheckReport(info)
        self.blocked: str | None = None

    def run(self, step: _Step, body: Callable[[], str | None]) -> None:
        label = self.report.info.label
        if self.blocked is not None:
            self._add(step, None, self.blocked)
            return
        try:
            detail = body() or ""
        except _UnknownParameters:
            raise
        except _MissingParameters as exc:
            self._add(step, None, str(exc))
            self.blocked = f"skipped: parameter(s) {exc.missing} have no value"
            return
        except PmlbenchError as exc:
            self._add(step, False, str(exc), exc)
        except Exception as exc:  # the plugin's own code crashed: that is what we report
            self._add(step, False, f"{label} failed ({type(exc).__name__}: {exc})", exc)
        except SystemExit as exc:  # outside a plugin_call, e.g. in the constructor
            detail = f"{label} called sys.exit({exc.code!r}); a plugin must raise, never exit"
            self._add(step, False, detail, PluginError(detail))
        else:
            self._add(step, True, detail)
            return
        if step.fatal:
            self.blocked = SKIPPED_AFTER_FAILURE

    def _add(self, step: _Step, passed: bool | None, detail: str, error=None) -> None:
        self.report.results.append(CheckResult(step.id, step.name, passed, detail, error))


def _parameters(kind: str, obj: Any, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The plugin's defaults updated by ``overrides``; required ones must be among them."""
    defaults = plugin_parameters(kind, obj)
    found = unknown(overrides, defaults)
    if found is not None:
        raise _UnknownParameters(
            f"{kind} has no parameter(s) {list(found.unknown)}; its parameters: "
            f"{found.listing}{found.hint()}"
        )
    params = {**defaults, **overrides}
    missing = [k for k, v in params.items() if v == REQUIRED]
    if missing:
        raise _MissingParameters(missing)
    return params


def _require_constraints(info: PluginInfo, obj: Any, params: Mapping[str, Any]) -> None:
    """Every constructor parameter of a method has declared constraints, as the built-in
    methods' have: a bad ``method.<param>`` then stops a run in one line before any work."""
    missing = sorted(set(params) - set(declared_constraints(obj)))
    if missing:
        example = f"{{{missing[0]!r}: [Interval(int, 1, None)]}}"
        raise PluginError(
            f"{info.label} declares no constraint for parameter(s) {missing}; add each to "
            f"its parameter_constraints, e.g. {example} (see pmlbench.plugin)"
        )


def _listing(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in params.items())


class _Checks:
    """The checks of one plugin kind: each step's id names the method that runs it."""

    steps: ClassVar[tuple[_Step, ...]]

    def __init__(self, info: PluginInfo, obj: Any, overrides: Mapping[str, Any]) -> None:
        self.info, self.obj, self.overrides = info, obj, dict(overrides)


class _MethodChecks(_Checks):
    steps = (
        _Step(
            "builds",
            "builds from its config node; parameters meet their constraints; "
            "has fit, decision_function, predict",
        ),
        _Step("clonable", "clonable by scikit-learn (tuning needs it)"),
        _Step("dense", "fit / score / predict on dense features; output shapes and values"),
        _Step("reproducible", "same scores for the same random_state", fatal=False),
        _Step("sparse", "fit / score / predict on sparse CSR features", fatal=False),
        _Step("hooks", "optional hooks have their documented types", fatal=False),
    )

    def __init__(self, info: PluginInfo, obj: Any, overrides: Mapping[str, Any]) -> None:
        super().__init__(info, obj, overrides)
        self.task = tiny_task()
        self.estimator: Any = None
        self.fitted: Any = None
        self.scores: Any = None

    def builds(self) -> str:
        info, obj = self.info, self.obj
        contracts.check_method_hooks(info, obj)  # the config node reads the class hooks
        if inspect.isclass(obj):
            method_node(info.name, obj)
            params = _parameters("method", obj, self.overrides)
            _require_constraints(info, obj, params)
            validate_parameters(params, declared_constraints(obj), prefix="method")
            with contracts.plugin_call(info, "construction"):
                self.estimator = obj(**params)
        else:  # an estimator instance, configured by its owner
            method_node(info.name, type(obj))
            get_params = getattr(obj, "get_params", None)
            params = get_params(deep=False) if callable(get_params) else {}
            _require_constraints(info, obj, params)
            validate_parameters(params, declared_constraints(obj), prefix="method")
            self.estimator = obj
        contracts.check_method_api(info, self.estimator)
        return _listing(params)

    def clonable(self) -> str:
        try:
            self.estimator = clone(self.estimator)
        except Exception as exc:
            raise PluginError(
                f"{self.info.label} cannot be cloned by scikit-learn "
                f"({type(exc).__name__}: {exc}); subclass sklearn.base.BaseEstimator and store "
                "constructor arguments unchanged"
            ) from exc
        params = self.estimator.get_params(deep=False)
        if "random_state" in params and params["random_state"] is None:
            self.estimator.set_params(random_state=0)
        return ""

    def _fit_predict(self, X_train: Any, X_test: Any) -> tuple[np.ndarray, np.ndarray]:
        info, task = self.info, self.task
        estimator = clone(self.estimator)
        X_before, Y_before = X_train.copy(), task.Y_candidates.copy()
        Y_given = task.Y_candidates.copy()
        # handed as a run hands them: read-only views (a write fails naming the method)
        X_seen, Y_seen, X_test_seen = read_only(X_train), read_only(Y_given), read_only(X_test)
        with contracts.plugin_call(info, "fit"), contracts.method_inputs(info, "fitting"):
            estimator.fit(X_seen, Y_seen)
        with (
            contracts.plugin_call(info, "decision_function"),
            contracts.method_inputs(info, "predicting"),
        ):
            scores = estimator.decision_function(X_test_seen)
        with contracts.plugin_call(info, "predict"), contracts.method_inputs(info, "predicting"):
            Y_pred = estimator.predict(X_test_seen)
        scores, Y_pred = contracts.check_method_output(info, scores, Y_pred, task.Y_test.shape)
        if sp.issparse(X_train):
            same_X = abs(X_train - X_before).max() == 0
        else:
            same_X = np.array_equal(X_train, X_before)
        if not same_X or not np.array_equal(Y_given, Y_before):
            raise PluginError(f"{info.label} modified its training data in place; copy it first")
        self.fitted = estimator
        return scores, Y_pred

    def dense(self) -> str:
        self.scores, Y_pred = self._fit_predict(self.task.X_train, self.task.X_test)
        return f"scores {self.scores.shape}, {int(Y_pred.sum())} labels predicted"

    def reproducible(self) -> str:
        fitted = self.fitted
        scores, _ = self._fit_predict(self.task.X_train, self.task.X_test)
        self.fitted = fitted
        if not np.allclose(scores, self.scores, rtol=1e-9, atol=1e-12):
            raise PluginError(
                f"{self.info.label} gave different scores for the same data and random_state; "
                "draw random numbers only from random_state"
            )
        return ""

    def sparse(self) -> str:
        fitted = self.fitted
        self._fit_predict(sp.csr_matrix(self.task.X_train), sp.csr_matrix(self.task.X_test))
        self.fitted = fitted
        return ""

    def hooks(self) -> str:
        contracts.check_method_hooks(self.info, self.fitted)
        found = [h for h in contracts.METHOD_HOOKS if getattr(self.fitted, h, None) is not None]
        return ", ".join(found) or "none defined"


def check_fit_grid(
    estimator: Any,
    X: Any,
    Y: np.ndarray,
    points: Iterable[Mapping[str, Any]],
    *,
    X_eval: Any = None,
    atol: float = 0.0,
    rtol: float = 0.0,
) -> float:
    """Compare a method's ``fit_grid`` with fitting each grid point from scratch.

    Every point's scores on ``X_eval`` (default ``X``) from ``estimator.fit_grid(X, Y,
    points)`` must equal those of ``clone(estimator).set_params(**point).fit(X, Y)`` within
    ``atol + rtol * |scores|`` (0 and 0: identical). Returns the largest absolute difference;
    raises :class:`PluginCheckError` naming the first point that differs by more.
    """
    from pmlbench.protocol.tuning import fit_grid_points

    grid: list[dict[str, Any]] = [dict(p) for p in points]
    X_eval = X if X_eval is None else X_eval
    name = type(estimator).__name__
    if not callable(getattr(estimator, "fit_grid", None)):
        raise PluginCheckError(f"{name} has no fit_grid method")
    worst = 0.0
    Y_given = np.array(Y, copy=True)
    for index, fitted in fit_grid_points(clone(estimator), X, Y_given, grid):
        together = as_dense(fitted.decision_function(X_eval), np.float64)
        alone = clone(estimator).set_params(**grid[index]).fit(X, np.array(Y, copy=True))
        expected = as_dense(alone.decision_function(X_eval), np.float64)
        if together.shape != expected.shape:
            raise PluginCheckError(
                f"{name}.fit_grid: grid point {grid[index]} gives scores of shape "
                f"{together.shape}, a fit from scratch {expected.shape}"
            )
        gap = np.abs(together - expected)
        bound = atol + rtol * np.abs(expected)
        if not np.all(gap <= bound):
            raise PluginCheckError(
                f"{name}.fit_grid: grid point {grid[index]} differs from a fit from scratch "
                f"by up to {float(gap.max()):.3g} (allowed: atol={atol:g}, rtol={rtol:g})"
            )
        worst = max(worst, float(gap.max(initial=0.0)))
    if not np.array_equal(Y_given, np.asarray(Y)):
        raise PluginCheckError(f"{name}.fit_grid modified its training labels in place")
    return worst


class _NoiseChecks(_Checks):
    steps = (
        _Step("parameters", "parameters become a config node"),
        _Step("candidates", "candidates: 0/1, right shape, every true label kept"),
        _Step("reproducible", "same candidates for the same generator", fatal=False),
    )

    def __init__(self, info: PluginInfo, obj: Any, overrides: Mapping[str, Any]) -> None:
        super().__init__(info, obj, overrides)
        self.Y_true = tiny_task().Y_train
        self.params: dict[str, Any] = {}
        self.first: Any = None

    def _draw(self) -> np.ndarray:
        info, Y_true = self.info, self.Y_true
        Y_given = Y_true.copy()
        with contracts.plugin_call(info, "drawing candidate labels"):
            Y_cand = self.obj(Y_given, np.random.default_rng(7), **self.params)
        Y_cand = contracts.check_noise_output(info, Y_true, Y_cand)
        if not np.array_equal(Y_given, Y_true):
            raise PluginError(f"{info.label} modified the ground truth in place; copy it first")
        return Y_cand

    def parameters(self) -> str:
        self.params = _parameters("noise", self.obj, self.overrides)
        return _listing(self.params)

    def candidates(self) -> str:
        self.first = self._draw()
        added = int(self.first.sum() - self.Y_true.sum())
        return f"{added} wrong labels added to {self.Y_true.sum()} true ones"

    def reproducible(self) -> str:
        if not np.array_equal(self._draw(), self.first):
            raise PluginError(
                f"{self.info.label} gave different candidates for the same generator; "
                "draw random numbers only from the rng argument"
            )
        return ""


class _DatasetChecks(_Checks):
    steps = (
        _Step("parameters", "parameters become a config node"),
        _Step("loads", "returns a valid pmlbench Dataset"),
    )

    def __init__(self, info: PluginInfo, obj: Any, overrides: Mapping[str, Any]) -> None:
        super().__init__(info, obj, overrides)
        self.params: dict[str, Any] = {}

    def parameters(self) -> str:
        self.params = _parameters("dataset", self.obj, self.overrides)
        return _listing(self.params)

    def loads(self) -> str:
        with contracts.plugin_call(self.info, "loading the dataset"):
            dataset = self.obj(**self.params)
        summary = contracts.check_dataset(self.info, dataset).summary()
        return f"{summary['n']} x {summary['d']}, {summary['l']} labels"


class _MetricChecks(_Checks):
    steps = (
        _Step("declared", "a Metric with a direction and an input kind"),
        _Step("values", "finite values; perfect beats inverted by its direction"),
    )

    def __init__(self, info: PluginInfo, obj: Any, overrides: Mapping[str, Any]) -> None:
        super().__init__(info, obj, overrides)
        self.metric: Any = None

    def declared(self) -> str:
        self.metric = contracts.check_metric(self.info, self.obj)
        return f"{self.metric.arrow} needs {self.metric.needs}"

    def values(self) -> str:
        info, metric = self.info, self.metric
        Y = tiny_task().Y_test
        # graded scores that rank every relevant label above every irrelevant one
        ranked = Y + np.random.default_rng(0).uniform(0.0, 0.5, Y.shape)
        results = {}
        for label, scores, Y_pred in (("perfect", ranked, Y), ("inverted", -ranked, 1 - Y)):
            for convention in ("zhang", "sklearn"):
                with contracts.plugin_call(info, "evaluation"):
                    value = metric(Y, Y_pred, scores, convention=convention, zero_division=0)
                if not np.isfinite(value):
                    raise PluginError(
                        f"{info.label} returned {value} on a well-defined toy "
                        f"task ({label} predictions, {convention} convention)"
                    )
                results[label] = value
        perfect, inverted = results["perfect"], results["inverted"]
        if (perfect < inverted) if metric.higher_is_better else (perfect > inverted):
            raise PluginError(
                f"{info.label} scores perfect predictions {perfect:.4g} and inverted ones "
                f"{inverted:.4g}; its direction (higher_is_better={metric.higher_is_better}) "
                "looks wrong"
            )
        return f"perfect {perfect:.4g}, inverted {inverted:.4g}"


SUITES: dict[str, type[_Checks]] = {
    "method": _MethodChecks,
    "noise": _NoiseChecks,
    "dataset": _DatasetChecks,
    "metric": _MetricChecks,
}


def _suite(kind: str) -> type[_Checks]:
    if kind not in SUITES:
        raise PluginError(f"unknown plugin kind {kind!r}; use one of {sorted(SUITES)}")
    return SUITES[kind]


def _info(kind: str, plugin: Any) -> PluginInfo:
    return (
        registry.get(kind, plugin) if isinstance(plugin, str) else registry.info_for(kind, plugin)
    )


def run_checks(kind: str, plugin: Any, params: Mapping[str, Any] | None = None) -> CheckReport:
    """Every check of a plugin, without raising on a violation.

    Args:
        kind: ``method``, ``noise``, ``dataset`` or ``metric``.
        plugin: a registered name (importing it is the first check), the plugin object, or
            (methods) an estimator instance.
        params: parameter values for a name or class (defaults otherwise; required).
    """
    suite = _suite(kind)
    info = _info(kind, plugin)
    if params and kind == "metric":
        raise _UnknownParameters(f"a metric has no parameters, got {sorted(params)}")
    if params and kind == "method" and not (isinstance(plugin, str) or inspect.isclass(plugin)):
        raise TypeError("params apply to a method class or name; configure an instance itself")
    runner = _Runner(info)
    obj = plugin
    if isinstance(plugin, str):
        loaded: list[Any] = []

        def load() -> str:
            loaded.append(info.load())
            return registry.describe(loaded[0])

        runner.run(IMPORTS, load)
        obj = loaded[0] if loaded else None
    checks = suite(info, obj, params or {})
    for step in suite.steps:
        runner.run(step, getattr(checks, step.id))
    return runner.report


def check_method(method: Any, *, params: Mapping[str, Any] | None = None) -> CheckReport:
    """Check a method plugin (a registered name, a class or an estimator instance).

    Raises:
        PluginCheckError: naming every violated check, with the report attached.
    """
    return run_checks("method", method, params).raise_for_failures()


def check_noise(noise: Any, *, params: Mapping[str, Any] | None = None) -> CheckReport:
    """Check a noise plugin (a registered name or the noise function); see check_method."""
    return run_checks("noise", noise, params).raise_for_failures()


def check_dataset(loader: Any, *, params: Mapping[str, Any] | None = None) -> CheckReport:
    """Check a dataset plugin (a registered name or the loader); see check_method."""
    return run_checks("dataset", loader, params).raise_for_failures()


def check_metric(metric: Any) -> CheckReport:
    """Check a metric plugin (a registered name or the Metric); see check_method."""
    return run_checks("metric", metric).raise_for_failures()


def check_ids(kind: str, plugin: Any) -> list[str]:
    """The ids of the checks ``run_checks(kind, plugin)`` runs, in order."""
    ids = [step.id for step in _suite(kind).steps]
    return [IMPORTS.id, *ids] if isinstance(plugin, str) else ids


def plugin_checks(
    kind: str, plugin: Any, params: Mapping[str, Any] | None = None
) -> Iterator[tuple[str, Callable[[], None]]]:
    """(check id, callable) for each check; a callable raises if its check failed.

    The checks run together once, on the first call; a check that did not run raises
    ``unittest.SkipTest``, which pytest reports as a skip.
    """
    reports: list[CheckReport] = []

    def result(check_id: str) -> CheckResult:
        if not reports:
            reports.append(run_checks(kind, plugin, params))
        return next(r for r in reports[0].results if r.id == check_id)

    def make(check_id: str) -> Callable[[], None]:
        def check() -> None:
            found = result(check_id)
            if found.passed is None:
                raise unittest.SkipTest(found.detail)
            if found.passed is False:
                raise PluginCheckError(found.detail, reports[0]) from found.error

        check.__name__ = check.__qualname__ = f"check_{check_id}"
        return check

    for check_id in check_ids(kind, plugin):
        yield check_id, make(check_id)


def parametrize_plugin_checks(
    plugins: Iterable[tuple[str, Any] | tuple[str, Any, Mapping[str, Any]]],
    *,
    argname: str = "check",
) -> Any:
    """A ``pytest.mark.parametrize`` giving the test one argument per check of each plugin.

    Args:
        plugins: ``(kind, plugin)`` or ``(kind, plugin, params)`` tuples; ``plugin`` as for
            :func:`run_checks`.
        argname: the test's argument that receives the check (call it without arguments).
    """
    import pytest

    checks, ids = [], []
    for entry in plugins:
        kind, plugin, *rest = entry
        params = rest[0] if rest else None
        name = _info(kind, plugin).name
        for check_id, check in plugin_checks(kind, plugin, params):
            checks.append(check)
            ids.append(f"{kind}-{name}-{check_id}")
    return pytest.mark.parametrize(argname, checks, ids=ids)


__all__ = [
    "CheckReport",
    "CheckResult",
    "PluginCheckError",
    "TinyTask",
    "check_dataset",
    "check_fit_grid",
    "check_ids",
    "check_method",
    "check_metric",
    "check_noise",
    "parametrize_plugin_checks",
    "plugin_checks",
    "run_checks",
    "tiny_task",
]
