"""``pmlbench check-plugin NAME``: run a plugin through a tiny synthetic task, list violations.

Each check either passes, fails with the one-line message a real run would print (the same
functions of :mod:`pmlbench.plugins.contracts` produce it), or is skipped because an earlier
check failed. The exit status is 0 when every check passes and 1 otherwise.
"""

from __future__ import annotations

import argparse
import difflib
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
import yaml
from rich.console import Console
from rich.table import Table
from sklearn.base import clone

from pmlbench.errors import PluginError, PmlbenchError
from pmlbench.noise.uniform import uniform_noise
from pmlbench.plugins import contracts as contract
from pmlbench.plugins import registry
from pmlbench.plugins.config_nodes import REQUIRED, method_node, plugin_parameters


@dataclass
class Check:
    """The outcome of one contract check: passed (True), failed (False) or skipped (None)."""

    name: str
    passed: bool | None
    detail: str = ""
    error: BaseException | None = None


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


class MissingParameters(PmlbenchError):
    """The plugin has required parameters and no value was given: checks cannot run."""


class Checker:
    """Runs named checks in order; a failed check marks the following ones as skipped."""

    def __init__(self, info: registry.PluginInfo) -> None:
        self.info = info
        self.checks: list[Check] = []
        self.blocked = False

    def run(self, name: str, body: Callable[[], str | None], *, fatal: bool = True) -> None:
        if self.blocked:
            self.checks.append(Check(name, None, "skipped: an earlier check failed"))
            return
        try:
            detail = body() or ""
        except MissingParameters as exc:
            self.checks.append(Check(name, None, str(exc)))
            self.blocked = True
            return
        except PmlbenchError as exc:
            self.checks.append(Check(name, False, str(exc), exc))
            self.blocked = self.blocked or fatal
            return
        except Exception as exc:  # the plugin's own code crashed: that is what we report
            message = f"{self.info.label} failed ({type(exc).__name__}: {exc})"
            self.checks.append(Check(name, False, message, exc))
            self.blocked = self.blocked or fatal
            return
        self.checks.append(Check(name, True, detail))

    def skip(self, name: str, reason: str) -> None:
        self.checks.append(Check(name, None, reason))


def _parameters(kind: str, obj: Any, overrides: dict[str, Any]) -> dict[str, Any]:
    params = {**plugin_parameters(kind, obj), **overrides}
    missing = [k for k, v in params.items() if v == REQUIRED]
    if missing:
        raise MissingParameters(
            f"not run: parameter(s) {missing} have no default; pass --param {missing[0]}=VALUE"
        )
    return params


def check_method(checker: Checker, obj: Any, overrides: dict[str, Any]) -> None:
    info, task = checker.info, tiny_task()
    shape = task.Y_test.shape
    state: dict[str, Any] = {}

    def build() -> str:
        method_node(info.name, obj)
        params = _parameters("method", obj, overrides)
        with contract.plugin_call(info, "construction"):
            state["estimator"] = obj(**params)
        contract.check_method_api(info, state["estimator"])
        return ", ".join(f"{k}={v!r}" for k, v in params.items())

    def cloneable() -> str:
        try:
            state["estimator"] = clone(state["estimator"])
        except Exception as exc:
            raise PluginError(
                f"{info.label} cannot be cloned by scikit-learn ({type(exc).__name__}: {exc}); "
                "subclass sklearn.base.BaseEstimator and store constructor arguments unchanged"
            ) from exc
        params = state["estimator"].get_params(deep=False)
        if "random_state" in params and params["random_state"] is None:
            state["estimator"].set_params(random_state=0)
        return ""

    def fit_predict(X_train, X_test) -> tuple[np.ndarray, np.ndarray]:
        estimator = clone(state["estimator"])
        X_before, Y_before = X_train.copy(), task.Y_candidates.copy()
        Y_given = task.Y_candidates.copy()
        with contract.plugin_call(info, "fit"):
            estimator.fit(X_train, Y_given)
        with contract.plugin_call(info, "decision_function"):
            scores = estimator.decision_function(X_test)
        with contract.plugin_call(info, "predict"):
            Y_pred = estimator.predict(X_test)
        scores, Y_pred = contract.check_method_output(info, scores, Y_pred, shape)
        same_X = (
            (abs(X_train - X_before).max() == 0)
            if sp.issparse(X_train)
            else np.array_equal(X_train, X_before)
        )
        if not same_X or not np.array_equal(Y_given, Y_before):
            raise PluginError(f"{info.label} modified its training data in place; copy it first")
        return scores, Y_pred

    def dense() -> str:
        state["scores"], Y_pred = fit_predict(task.X_train, task.X_test)
        return f"scores {state['scores'].shape}, {int(Y_pred.sum())} labels predicted"

    def reproducible() -> str:
        scores, _ = fit_predict(task.X_train, task.X_test)
        if not np.allclose(scores, state["scores"], rtol=1e-9, atol=1e-12):
            raise PluginError(
                f"{info.label} gave different scores for the same data and random_state; draw "
                "random numbers only from random_state"
            )
        return ""

    def sparse() -> str:
        fit_predict(sp.csr_matrix(task.X_train), sp.csr_matrix(task.X_test))
        return ""

    checker.run("builds from its config node; has fit, decision_function, predict", build)
    checker.run("clonable by scikit-learn (tuning needs it)", cloneable)
    checker.run("fit / score / predict on dense features; output shapes and values", dense)
    checker.run("same scores for the same random_state", reproducible, fatal=False)
    checker.run("fit / score / predict on sparse CSR features", sparse, fatal=False)


def check_noise(checker: Checker, obj: Any, overrides: dict[str, Any]) -> None:
    info, task = checker.info, tiny_task()
    Y_true = task.Y_train
    state: dict[str, Any] = {}

    def draw() -> np.ndarray:
        Y_given = Y_true.copy()
        with contract.plugin_call(info, "drawing candidate labels"):
            Y_cand = obj(Y_given, np.random.default_rng(7), **state["params"])
        Y_cand = contract.check_noise_output(info, Y_true, Y_cand)
        if not np.array_equal(Y_given, Y_true):
            raise PluginError(f"{info.label} modified the ground truth in place; copy it first")
        return Y_cand

    def params() -> str:
        state["params"] = _parameters("noise", obj, overrides)
        return ", ".join(f"{k}={v!r}" for k, v in state["params"].items())

    def candidates() -> str:
        state["first"] = draw()
        added = int(state["first"].sum() - Y_true.sum())
        return f"{added} wrong labels added to {Y_true.sum()} true ones"

    def reproducible() -> str:
        if not np.array_equal(draw(), state["first"]):
            raise PluginError(
                f"{info.label} gave different candidates for the same generator; "
                "draw random numbers only from the rng argument"
            )
        return ""

    checker.run("parameters become a config node", params)
    checker.run("candidates: 0/1, right shape, every true label kept", candidates)
    checker.run("same candidates for the same generator", reproducible, fatal=False)


def check_dataset(checker: Checker, obj: Any, overrides: dict[str, Any]) -> None:
    info = checker.info
    state: dict[str, Any] = {}

    def params() -> str:
        state["params"] = _parameters("dataset", obj, overrides)
        return ", ".join(f"{k}={v!r}" for k, v in state["params"].items())

    def load() -> str:
        with contract.plugin_call(info, "loading the dataset"):
            dataset = obj(**state["params"])
        dataset = contract.check_dataset(info, dataset)
        summary = dataset.summary()
        return f"{summary['n']} x {summary['d']}, {summary['l']} labels"

    checker.run("parameters become a config node", params)
    checker.run("returns a valid pmlbench Dataset", load)


def check_metric(checker: Checker, obj: Any, overrides: dict[str, Any]) -> None:
    info, task = checker.info, tiny_task()
    Y = task.Y_test
    # graded scores that rank every relevant label above every irrelevant one
    ranked = Y + np.random.default_rng(0).uniform(0.0, 0.5, Y.shape)
    state: dict[str, Any] = {}

    def declared() -> str:
        state["metric"] = contract.check_metric(info, obj)
        return f"{state['metric'].arrow} needs {state['metric'].needs}"

    def values() -> str:
        metric = state["metric"]
        results = {}
        for label, scores, Y_pred in (("perfect", ranked, Y), ("inverted", -ranked, 1 - Y)):
            for convention in ("zhang", "sklearn"):
                with contract.plugin_call(info, "evaluation"):
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

    checker.run("a Metric with a direction and an input kind", declared)
    checker.run("finite values; perfect beats inverted by its direction", values)


CHECKS = {
    "method": check_method,
    "noise": check_noise,
    "dataset": check_dataset,
    "metric": check_metric,
}


def check_plugin(kind: str, name: str, overrides: dict[str, Any] | None = None) -> list[Check]:
    """All contract checks of plugin ``name`` of ``kind``, in order."""
    info = registry.get(kind, name)
    checker = Checker(info)
    state: dict[str, Any] = {}

    def load() -> str:
        state["obj"] = info.load()
        return registry.describe(state["obj"])

    checker.run("imports", load)
    if not checker.blocked:
        CHECKS[kind](checker, state["obj"], dict(overrides or {}))
    return checker.checks


def kinds_of(name: str) -> list[str]:
    """The kinds under which a plugin called ``name`` is registered."""
    kinds = [kind for kind in registry.KINDS if name in registry.plugins(kind)]
    if not kinds:
        everything = sorted({n for kind in registry.KINDS for n in registry.plugins(kind)})
        close = difflib.get_close_matches(name, everything, n=3)
        hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
        raise PluginError(f"no plugin named {name!r} is installed (see `pmlbench list`){hint}")
    return kinds


def _parse_params(items: list[str]) -> dict[str, Any]:
    params = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise PmlbenchError(f"--param expects KEY=VALUE, got {item!r}")
        try:
            params[key] = yaml.safe_load(value) if value else ""
        except yaml.YAMLError:
            params[key] = value  # not YAML (e.g. a command line with braces): a plain string
    return params


def _report(
    console: Console, info: registry.PluginInfo, checks: list[Check], show_traceback: bool
) -> int:
    table = Table(title=f"{info.label}: {info.entry_point.value}", title_justify="left")
    for column in ("", "check", "detail"):
        table.add_column(column, overflow="fold")
    marks = {True: "[green]ok", False: "[bold red]FAIL", None: "[yellow]skip"}
    for check in checks:
        table.add_row(marks[check.passed], check.name, check.detail)
    console.print(table)
    failed = [c for c in checks if c.passed is False]
    if show_traceback:
        for check in failed:
            if check.error is not None:
                console.print(f"[bold]{check.name}[/]", highlight=False)
                console.print(
                    "".join(traceback.format_exception(check.error)), highlight=False, markup=False
                )
    if failed:
        console.print(
            f"[bold red]{len(failed)} contract violation(s)[/] in {info.label}", highlight=False
        )
        return 1
    if any(c.passed is None for c in checks):
        console.print(
            f"[yellow]{info.label}: no violation found, but some checks did not run[/]",
            highlight=False,
        )
        return 0
    console.print(f"[green]{info.label} meets the contract[/]", highlight=False)
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="pmlbench check-plugin", description=__doc__)
    parser.add_argument("name", help="the plugin's registered name")
    parser.add_argument(
        "--kind",
        choices=sorted(registry.KINDS),
        help="which kind, when the name exists in several (default: all)",
    )
    parser.add_argument(
        "--param",
        "-p",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a parameter value (YAML syntax), e.g. --param k=5; repeatable",
    )
    parser.add_argument(
        "--traceback", action="store_true", help="print the traceback of each failed check"
    )
    args = parser.parse_args(argv)
    overrides = _parse_params(args.param)
    kinds = [args.kind] if args.kind else kinds_of(args.name)
    console = Console(soft_wrap=True)
    status = 0
    for kind in kinds:
        checks = check_plugin(kind, args.name, overrides)
        status = max(
            status, _report(console, registry.get(kind, args.name), checks, args.traceback)
        )
    return status
