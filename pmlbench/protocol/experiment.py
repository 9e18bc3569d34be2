"""One experiment: a dataset, a noise model and a method under the paper's protocol.

    dataset plugin -> splits -> noise plugin (training part only) -> method plugin
    -> bipartition rule -> metric plugins vs ground truth -> per-split values

Everything here is plain data in, plain data out; reading Hydra configs and writing files
happen elsewhere (pmlbench.runner.run, pmlbench.runner.outputs).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from pmlbench.core.parameters import check_parameter
from pmlbench.core.read_only import read_only
from pmlbench.datasets.dataset import Dataset
from pmlbench.errors import PluginError, PmlbenchError
from pmlbench.metrics.base import Metric, degenerate_rows
from pmlbench.metrics.disambiguation import disambiguation_measures
from pmlbench.plugins import registry
from pmlbench.plugins.loading import DatasetSource, MethodFactory, NoiseModel, checked_metric
from pmlbench.plugins.registry import PluginInfo
from pmlbench.protocol.bipartition import make_bipartition
from pmlbench.protocol.fitting import fit_with_tuning
from pmlbench.protocol.settings import (
    BIPARTITION,
    EXPERIMENT,
    RULE_NAMES,
    TUNE,
    bipartition_options,
    options_read_by,
    spec_field,
    tune_key,
    tune_options,
)
from pmlbench.protocol.splits import SplitPlan, plan_splits
from pmlbench.protocol.tuning import tuning_grid

NATURAL_NOISE = "natural"


@dataclass
class ExperimentSpec:
    """Everything that defines an experiment, as plain data (the resolved config)."""

    dataset: dict[str, Any]
    noise: dict[str, Any]
    method: dict[str, Any]
    tune: dict[str, Any] = field(default_factory=dict)
    bipartition: dict[str, Any] = field(default_factory=lambda: {"rule": "method"})
    metrics: list[str] = field(default_factory=lambda: list(EXPERIMENT["metrics"].default))
    metric_convention: str = EXPERIMENT["metric_convention"].default
    macro_f1_zero_division: Any = EXPERIMENT["macro_f1_zero_division"].default
    seed: int = EXPERIMENT["seed"].default
    n_splits: int = EXPERIMENT["protocol.n_splits"].default
    test_size: float = EXPERIMENT["protocol.test_size"].default
    save_predictions: bool = EXPERIMENT["save_predictions"].default

    def __post_init__(self) -> None:
        for name, setting in EXPERIMENT.items():
            if name != "metrics":  # checked below, with the fix in each message
                check_parameter(name, getattr(self, spec_field(name)), setting.accepted, prefix="")
        if isinstance(self.metrics, str):
            raise PmlbenchError(
                f"metrics must be a list of metric names, got {self.metrics!r}; "
                f"set metrics=[{self.metrics}]"
            )
        if not isinstance(self.metrics, list) or not self.metrics:
            raise PmlbenchError("no metrics selected; set metrics=[average_precision,...]")
        for name in self.metrics:
            if not isinstance(name, str):
                raise PmlbenchError(
                    f"metrics holds {name!r}, not a metric name; "
                    "set metrics=[average_precision,...]"
                )


@dataclass
class SplitResult:
    """What one split produced."""

    index: int
    values: dict[str, float]
    fit_seconds: float
    predict_seconds: float
    n_train: int
    n_test: int
    n_degenerate: int
    bipartition: str
    seeds: dict
    tuned: dict[str, Any] = field(default_factory=dict)
    tuning: dict[str, Any] = field(default_factory=dict)
    bipartition_fitted: dict[str, Any] = field(default_factory=dict)
    diagnostics: dict[str, Any] = field(default_factory=dict)
    # training-side measures (disambiguation_auc, ...): never ranked with the test metrics
    training_measures: dict[str, float] = field(default_factory=dict)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass
class ExperimentResult:
    spec: ExperimentSpec
    dataset_summary: dict[str, Any]
    noise_name: str
    splits: list[SplitResult]
    metrics: dict[str, Metric]


_NODES = ("dataset", "noise", "method")  # the config nodes that name one plugin each


class PluginRequest(NamedTuple):
    """One plugin a unit runs, and the config key that names it."""

    kind: str
    name: str
    key: str


def plugin_requests(spec: ExperimentSpec) -> list[PluginRequest]:
    """Every plugin a unit of ``spec`` runs, each once: its dataset, noise model, method and
    metrics, the tuning score (with a tuning grid) and the bipartition objective (for a rule
    that reads it). Read without checks (:func:`prepare` checks; the unit keys of
    pmlbench.runner.units read the same list)."""
    wanted = [PluginRequest(kind, getattr(spec, kind)["name"], kind) for kind in _NODES]
    metrics: dict[Any, str] = dict.fromkeys(spec.metrics or [], "metrics")
    tune = dict(spec.tune or {})
    if tune_key(tune):
        metrics.setdefault(tune.get("scoring", TUNE["scoring"].default), "tune.scoring")
    bipartition = dict(spec.bipartition or {})
    rule = bipartition.get("rule")
    if rule in RULE_NAMES and "objective" in options_read_by(rule, bipartition):
        objective = bipartition.get("objective", BIPARTITION["objective"].default)
        metrics.setdefault(objective, "bipartition.objective")
    wanted += [PluginRequest("metric", n, k) for n, k in metrics.items() if isinstance(n, str)]
    return wanted


@dataclass(frozen=True)
class Plugins:
    """The plugins of one experiment, each looked up once and checked (:func:`prepare`)."""

    dataset: DatasetSource
    noise: NoiseModel
    method: MethodFactory
    metrics: dict[str, Metric]
    # the registration of every plugin a unit runs (:func:`plugin_requests`), for its key
    registrations: tuple[PluginInfo, ...]
    # the metric plugins tune.scoring (with a grid) and bipartition.objective (a rule that
    # reads it) name, for every split and inner fold; None where nothing reads them
    scoring: Metric | None = None
    objective: Metric | None = None


def prepare(spec: ExperimentSpec) -> Plugins:
    """Resolve and check the experiment's plugins and their configuration, once.

    The ``tune`` and ``bipartition`` nodes are checked first, then every plugin a unit runs
    (:func:`plugin_requests`) is looked up in the registry once, then loaded from that
    registration and checked: the method's and noise model's parameters against their
    constraints, the metrics, the tuning score and the bipartition objective against the
    metric contract. So a bad ``method.k`` or ``noise.rate`` stops a run before any data is
    loaded. The dataset is not imported before :meth:`DatasetSource.load`.
    """
    tune = dict(spec.tune or {})
    options = tune_options(tune)
    tuned = bool(tuning_grid(tune))
    bipartition_options(dict(spec.bipartition))
    shown = {
        "metrics": f"[{','.join(map(str, spec.metrics))}]",
        "tune.scoring": options["scoring"],
        "bipartition.objective": spec.bipartition.get("objective"),
    }
    found: dict[tuple[str, str], PluginInfo] = {}
    for kind, name, key in plugin_requests(spec):
        # a metric's error names the config key that asked for it (``tune.scoring=...: ``)
        with _naming(key, shown[key]) if key in shown else contextlib.nullcontext():
            found[kind, name] = registry.get(kind, name)
    method = MethodFactory.configure(found["method", spec.method["name"]], spec.method)
    noise = NoiseModel.configure(found["noise", spec.noise["name"]], spec.noise)
    with _naming("metrics", shown["metrics"]):
        metrics = {name: checked_metric(found["metric", name]) for name in spec.metrics}
    objective = None
    with _naming("bipartition.objective", shown["bipartition.objective"]):
        name = spec.bipartition.get("objective", BIPARTITION["objective"].default)
        if ("metric", name) in found:
            objective = metrics.get(name) or checked_metric(found["metric", name])
        # checks the objective against the rule; every split's rule is given the same metric
        objective = make_bipartition(dict(spec.bipartition), objective).objective
    scoring = None
    if tuned:
        with _naming("tune.scoring", options["scoring"]):
            scoring = metrics.get(options["scoring"]) or checked_metric(
                found["metric", options["scoring"]]
            )
    return Plugins(
        dataset=DatasetSource.configure(found["dataset", spec.dataset["name"]], spec.dataset),
        noise=noise,
        method=method,
        metrics=metrics,
        registrations=tuple(found.values()),
        scoring=scoring,
        objective=objective,
    )


@contextlib.contextmanager
def _naming(key: str, value: Any) -> Iterator[None]:
    """Begin a plugin error (an unknown metric, ...) with the config key that asked for it."""
    try:
        yield
    except PluginError as exc:
        raise PluginError(f"{key}={value}: {exc}") from None


def make_candidates(noise: NoiseModel, dataset: Dataset, plan: SplitPlan) -> np.ndarray:
    """Candidate labels of the training part: natural ones, or drawn by the noise model."""
    if dataset.Y_candidates is not None:
        return dataset.Y_candidates[plan.train_idx]
    return noise.candidates(dataset.Y[plan.train_idx], plan.noise_rng)


def run_split(
    spec: ExperimentSpec, dataset: Dataset, plan: SplitPlan, plugins: Plugins
) -> SplitResult:
    """Train on the candidate labels of the training part (tuning first when ``spec.tune``
    has a grid, :func:`pmlbench.protocol.fitting.fit_with_tuning`), evaluate on the test
    part."""
    # the method is handed read-only views: one that edits its inputs in place fails naming
    # itself, instead of changing the bipartition's inputs or the saved y_train_candidates
    X_train = read_only(dataset.X[plan.train_idx])
    X_test = read_only(dataset.X[plan.test_idx])
    Y_test = dataset.Y[plan.test_idx]
    Y_cand = read_only(make_candidates(plugins.noise, dataset, plan))
    estimator = plugins.method.build(plan.method_seed)
    bipartition = make_bipartition(dict(spec.bipartition), plugins.objective)
    start = time.perf_counter()
    with plugins.method.handed_read_only("fitting (tuning included)"):
        estimator, tuned, tuning = fit_with_tuning(
            estimator,
            X_train,
            Y_cand,
            spec=spec,
            Y_true_train=dataset.Y[plan.train_idx],
            random_state=plan.method_seed,
            scoring=plugins.scoring,
            objective=plugins.objective,
        )
    with plugins.method.handed_read_only("fitting the bipartition rule"):
        bipartition.fit(estimator, X_train, Y_cand, random_state=plan.method_seed)
    fit_seconds = time.perf_counter() - start
    start = time.perf_counter()
    with plugins.method.handed_read_only("predicting"):
        scores = plugins.method.scores(estimator.decision_function(X_test), Y_test.shape)
        Y_pred = bipartition.apply(estimator, X_test, scores)
    predict_seconds = time.perf_counter() - start
    scores, Y_pred = plugins.method.outputs(scores, Y_pred, Y_test.shape)
    options = {"convention": spec.metric_convention, "zero_division": spec.macro_f1_zero_division}
    values = {
        name: metric(Y_test, Y_pred, scores, **options) for name, metric in plugins.metrics.items()
    }
    diagnostics = plugins.method.diagnostics(estimator)
    confidences = getattr(estimator, "disambiguation_scores_", None)
    training_measures = (
        {}
        if confidences is None
        else disambiguation_measures(confidences, Y_cand, dataset.Y[plan.train_idx])
    )
    return SplitResult(
        index=plan.index,
        values=values,
        fit_seconds=fit_seconds,
        predict_seconds=predict_seconds,
        n_train=len(plan.train_idx),
        n_test=len(plan.test_idx),
        n_degenerate=int(degenerate_rows(Y_test).sum()),
        bipartition=bipartition.describe(),
        seeds=plan.seed_record,
        tuned=tuned,
        tuning=tuning,
        bipartition_fitted=dict(bipartition.fitted),
        diagnostics=diagnostics,
        training_measures=training_measures,
        arrays={
            "train_idx": plan.train_idx,
            "test_idx": plan.test_idx,
            "y_train_candidates": Y_cand,
            "scores": scores,
            "y_pred": Y_pred,
        }
        if spec.save_predictions
        else {},
    )


# A unit hook runs one split: hook(plan, dataset, compute) calls compute() or returns a stored
# SplitResult; it returns None for a split that failed and was recorded (see pmlbench.runner.run).
UnitHook = Callable[[SplitPlan, Dataset, Callable[[], SplitResult]], "SplitResult | None"]


def run_experiment(
    spec: ExperimentSpec,
    on_split_done: Callable[[SplitResult], None] | None = None,
    unit: UnitHook | None = None,
    plugins: Plugins | None = None,
) -> ExperimentResult:
    """Run every split of the protocol and collect the results: :func:`run_prepared` with
    ``plugins``, or with the experiment prepared here (:func:`prepare`)."""
    plugins = prepare(spec) if plugins is None else plugins
    return run_prepared(spec, plugins, on_split_done=on_split_done, unit=unit)


def run_prepared(
    spec: ExperimentSpec,
    plugins: Plugins,
    *,
    on_split_done: Callable[[SplitResult], None] | None = None,
    unit: UnitHook | None = None,
) -> ExperimentResult:
    """Run every split of the experiment :func:`prepare` made ``plugins`` for, from those
    plugins, and collect the results."""
    dataset = plugins.dataset.load()
    noise_name = NATURAL_NOISE if dataset.Y_candidates is not None else plugins.noise.name
    plans = plan_splits(dataset.n_instances, spec.n_splits, spec.test_size, spec.seed)
    results = []
    for plan in plans:

        def compute(plan: SplitPlan = plan) -> SplitResult:
            return run_split(spec, dataset, plan, plugins)

        result = compute() if unit is None else unit(plan, dataset, compute)
        if result is None:
            continue
        results.append(result)
        if on_split_done is not None:
            on_split_done(result)
    return ExperimentResult(
        spec, {"name": dataset.name, **dataset.summary()}, noise_name, results, plugins.metrics
    )
