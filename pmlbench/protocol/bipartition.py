"""Bipartition rules: how a method's scores become predicted label sets.

Binarisation is a separate, recorded step: every result row names the rule used and its
fitted values (:meth:`Bipartition.describe`). Rules (``bipartition.rule``):

- ``method``: the method's own ``predict`` (e.g. ML-kNN's posterior >= 0.5).
- ``threshold``: score >= ``threshold`` (fixed; default 0.5).
- ``global``: score >= t, one t chosen on the training split to optimise ``objective``
  (a bipartition metric, default hamming_loss) against the candidate labels.
- ``per_label``: score >= t_j, one t_j per label chosen the same way on that label's column
  alone (for the F1 metrics this is the label's F1, for hamming_loss its error rate).
- ``top_k``: the k top-scored labels, k = the mean candidate-set size of the training
  split rounded half up (at least 1); ties go to the lower label index.

With ``allow_empty: false`` an instance whose rule selects no label gets its top-scored label.

Training scores for ``global`` and ``per_label`` (``training_scores``): ``cv`` (default)
uses out-of-fold scores from a ``cv``-fold split of the training part (clones of the fitted
estimator with its final parameters, refitted on the other folds), because in-sample scores
are optimistic: ML-kNN counts an instance among its own neighbours and a least-squares
predictor reproduces its training targets. ``train`` uses ``decision_function(X_train)``
of the fitted estimator (cheaper, optimistic).

Candidate thresholds are the midpoints between consecutive distinct training scores (at
most 257 values, quantiles when there are more), plus one below and one above all of them.
Ties in the objective go to the threshold closest to ``threshold``, then to the lower one.

Each rule is a :class:`Rule` in the :data:`RULES` table, which :class:`Bipartition`
dispatches through; the options, their defaults and which rule reads which are defined in
pmlbench.protocol.settings. A new rule is a subclass here, a name in
``settings.RULE_NAMES`` and the rules that read each option there.

The method is handed read-only views (pmlbench.core.read_only) here too: the out-of-fold
refits, their scores and ``predict`` for the ``method`` rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import KFold

from pmlbench.core.checks import as_dense
from pmlbench.core.read_only import read_only
from pmlbench.errors import PluginError, PmlbenchError
from pmlbench.metrics.base import Metric
from pmlbench.numerics.scores import ensure_nonempty
from pmlbench.plugins import registry
from pmlbench.protocol.settings import bipartition_options, options_read_by

MAX_DISTINCT = 257


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """0/1 matrix of the k top-scored labels per row; ties go to the lower label index."""
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    Y_pred = np.zeros(scores.shape, dtype=np.uint8)
    np.put_along_axis(Y_pred, order, 1, axis=1)
    return Y_pred


def candidate_cardinality_k(Y_candidates: np.ndarray) -> tuple[int, float]:
    """(k, mean candidate-set size): the mean rounded half up, clipped to [1, labels]."""
    mean = float(np.asarray(Y_candidates).sum(axis=1).mean())
    return int(min(max(np.floor(mean + 0.5), 1), Y_candidates.shape[1])), mean


def candidate_thresholds(scores: np.ndarray) -> np.ndarray:
    """Thresholds separating the distinct values of ``scores`` (midpoints, plus both ends)."""
    values = np.unique(scores)
    if values.size > MAX_DISTINCT:
        values = np.unique(np.quantile(scores, np.linspace(0.0, 1.0, MAX_DISTINCT)))
    gap = float(np.diff(values).min()) if values.size > 1 else 1.0
    middle = (values[:-1] + values[1:]) / 2
    return np.concatenate([[values[0] - gap / 2], middle, [values[-1] + gap / 2]])


def _best_threshold(
    values: np.ndarray, thresholds: np.ndarray, higher_is_better: bool, default: float
) -> float:
    signed = np.where(np.isfinite(values), values if higher_is_better else -values, -np.inf)
    tied = np.flatnonzero(signed == signed.max())
    closest = tied[np.argmin(np.abs(thresholds[tied] - default))]  # argmin: the lower on ties
    return float(thresholds[closest])


def objective_metric(name: str) -> Metric:
    """The registered bipartition metric ``name``, used to tune thresholds."""
    metric = registry.get("metric", name).load()
    if not isinstance(metric, Metric):
        raise PluginError(f"metric plugin {name!r} is a {type(metric).__name__}, not a Metric")
    return checked_objective(metric)


def checked_objective(metric: Metric) -> Metric:
    """``metric`` if it can be a threshold objective (a bipartition metric)."""
    name = metric.name
    if metric.needs != "bipartition":
        raise PmlbenchError(
            f"bipartition.objective={name!r} is a ranking metric; choose a bipartition metric "
            "such as micro_f1, macro_f1, hamming_loss or subset_accuracy"
        )
    return metric


def out_of_fold_scores(
    estimator, X, Y: np.ndarray, cv: int, random_state: int | None
) -> np.ndarray:
    """Scores of every training instance from a clone fitted on the other folds (each
    handed read-only views of its fold)."""
    if cv > Y.shape[0]:
        raise PmlbenchError(
            f"bipartition.cv={cv} exceeds the {Y.shape[0]} training instances; lower bipartition.cv"
        )
    try:
        template = clone(estimator)
    except TypeError as exc:
        raise PluginError(
            f"{type(estimator).__name__} cannot be cloned ({exc}); use "
            "bipartition.training_scores=train"
        ) from None
    scores = np.empty(Y.shape, dtype=np.float64)
    for fit_idx, held_idx in KFold(cv, shuffle=True, random_state=random_state).split(Y):
        model = clone(template).fit(read_only(X[fit_idx]), read_only(Y[fit_idx]))
        scores[held_idx] = as_dense(model.decision_function(read_only(X[held_idx])), np.float64)
    return scores


class Rule:
    """A bipartition rule: how it is fitted on the training split, applied and described.

    A rule is stateless; the configured options and fitted values live in the
    :class:`Bipartition` passed to every call. Which options it reads is defined with the
    options (pmlbench.protocol.settings).
    """

    name: ClassVar[str]
    needs_fit: ClassVar[bool] = False

    @property
    def reads(self) -> tuple[str, ...]:
        """The bipartition options this rule may read."""
        return options_read_by(self.name)

    def fit(
        self, bip: Bipartition, estimator, X_train, Y: np.ndarray, random_state: int | None
    ) -> dict[str, Any]:
        """Values fitted on the training split (candidate labels ``Y``); none by default."""
        return {}

    def apply(self, bip: Bipartition, estimator, X, scores: np.ndarray) -> np.ndarray:
        """Predicted 0/1 label sets before the ``allow_empty`` fix."""
        raise NotImplementedError

    def describe(self, bip: Bipartition) -> str:
        """The rule and its fitted values in one line."""
        raise NotImplementedError


class MethodRule(Rule):
    """The method's own ``predict``."""

    name = "method"

    def apply(self, bip: Bipartition, estimator, X, scores: np.ndarray) -> np.ndarray:
        return np.asarray(estimator.predict(read_only(X)))

    def describe(self, bip: Bipartition) -> str:
        return "method's predict"


class ThresholdRule(Rule):
    """Score >= the fixed ``threshold``."""

    name = "threshold"

    def apply(self, bip: Bipartition, estimator, X, scores: np.ndarray) -> np.ndarray:
        return (scores >= bip.options["threshold"]).astype(np.uint8)

    def describe(self, bip: Bipartition) -> str:
        return f"score >= {bip.options['threshold']:g}"


class LearnedThresholdRule(Rule):
    """Thresholds chosen on training scores to optimise ``objective`` against the candidates."""

    needs_fit = True
    fitted_key: ClassVar[str]

    def fit(
        self, bip: Bipartition, estimator, X_train, Y: np.ndarray, random_state: int | None
    ) -> dict[str, Any]:
        if bip.options["training_scores"] == "cv":
            scores = out_of_fold_scores(estimator, X_train, Y, bip.options["cv"], random_state)
        else:
            scores = as_dense(estimator.decision_function(read_only(X_train)), np.float64)
        if bip.objective is None:  # Bipartition loads it for every rule that reads it
            raise PmlbenchError(f"bipartition rule {self.name!r} has no objective metric")
        return {self.fitted_key: self.choose(bip, bip.objective, scores, Y)}

    def choose(self, bip: Bipartition, objective: Metric, scores: np.ndarray, Y: np.ndarray) -> Any:
        """The fitted threshold(s) for training ``scores`` and candidate labels ``Y``."""
        raise NotImplementedError

    @staticmethod
    def source(bip: Bipartition) -> str:
        """Where the training scores came from, for :meth:`describe`."""
        if bip.options["training_scores"] == "cv":
            return f"{bip.options['cv']}-fold CV training scores"
        return "in-sample training scores"


class GlobalRule(LearnedThresholdRule):
    """Score >= t, one t for every label."""

    name = "global"
    fitted_key = "threshold"

    def choose(
        self, bip: Bipartition, objective: Metric, scores: np.ndarray, Y: np.ndarray
    ) -> float:
        thresholds = candidate_thresholds(scores)
        values = np.empty(thresholds.size)
        for i, t in enumerate(thresholds):
            Y_pred = (scores >= t).astype(np.uint8)
            if not bip.options["allow_empty"]:
                Y_pred = ensure_nonempty(Y_pred, scores)
            values[i] = objective(Y, Y_pred, scores)
        return _best_threshold(
            values, thresholds, objective.higher_is_better, float(bip.options["threshold"])
        )

    def apply(self, bip: Bipartition, estimator, X, scores: np.ndarray) -> np.ndarray:
        return (scores >= bip.fitted["threshold"]).astype(np.uint8)

    def describe(self, bip: Bipartition) -> str:
        t = bip.fitted.get("threshold", float("nan"))
        return (
            f"global: score >= {t:.6g} (best {bip.options['objective']} vs candidates, "
            f"{self.source(bip)})"
        )


class PerLabelRule(LearnedThresholdRule):
    """Score_j >= t_j, one t_j per label chosen on that label's column alone."""

    name = "per_label"
    fitted_key = "thresholds"

    def choose(
        self, bip: Bipartition, objective: Metric, scores: np.ndarray, Y: np.ndarray
    ) -> list[float]:
        # allow_empty acts after the per-label thresholds; it does not enter their choice
        result = []
        for j in range(Y.shape[1]):
            column, truth = scores[:, j : j + 1], Y[:, j : j + 1]
            thresholds = candidate_thresholds(column)
            values = np.array(
                [objective(truth, (column >= t).astype(np.uint8), column) for t in thresholds]
            )
            result.append(
                _best_threshold(
                    values,
                    thresholds,
                    objective.higher_is_better,
                    float(bip.options["threshold"]),
                )
            )
        return result

    def apply(self, bip: Bipartition, estimator, X, scores: np.ndarray) -> np.ndarray:
        return (scores >= np.asarray(bip.fitted["thresholds"])[None, :]).astype(np.uint8)

    def describe(self, bip: Bipartition) -> str:
        t = np.asarray(bip.fitted.get("thresholds", [np.nan]))
        return (
            f"per_label: {t.size} thresholds, median {np.median(t):.4g} in "
            f"[{t.min():.4g}, {t.max():.4g}] (best {bip.options['objective']} per label vs "
            f"candidates, {self.source(bip)})"
        )


class TopKRule(Rule):
    """The k top-scored labels, k the mean candidate-set size of the training split."""

    name = "top_k"
    needs_fit = True

    def fit(
        self, bip: Bipartition, estimator, X_train, Y: np.ndarray, random_state: int | None
    ) -> dict[str, Any]:
        k, mean = candidate_cardinality_k(Y)
        return {"k": k, "mean_candidate_cardinality": mean}

    def apply(self, bip: Bipartition, estimator, X, scores: np.ndarray) -> np.ndarray:
        return top_k(scores, bip.fitted["k"])

    def describe(self, bip: Bipartition) -> str:
        return (
            f"top_k: k={bip.fitted.get('k')} top-scored labels (mean candidate set "
            f"size {bip.fitted.get('mean_candidate_cardinality', float('nan')):.4g})"
        )


# The registry: bipartition.rule -> rule. Its names are the allowed values of the ``rule``
# setting (tests/test_settings.py checks that the two agree).
RULES: dict[str, Rule] = {
    rule.name: rule
    for rule in (MethodRule(), ThresholdRule(), GlobalRule(), PerLabelRule(), TopKRule())
}


class Bipartition:
    """A configured bipartition rule; ``fit`` sees training data only (candidate labels).

    ``Bipartition(rule="global", objective="micro_f1")``: options as in the ``bipartition``
    config node (pmlbench.protocol.settings), checked on construction; unset ones take their
    defaults.
    """

    def __init__(self, objective_plugin: Metric | None = None, **options: Any) -> None:
        self.options: dict[str, Any] = bipartition_options(options)
        self.rule: str = self.options["rule"]
        self._rule = RULES[self.rule]
        self.fitted: dict[str, Any] = {}
        self.objective: Metric | None = None
        if "objective" in self._rule.reads:
            # a prepared experiment passes the metric it looked up once; else look it up here
            self.objective = (
                objective_metric(self.options["objective"])
                if objective_plugin is None
                else checked_objective(objective_plugin)
            )

    def __repr__(self) -> str:
        options = ", ".join(f"{k}={v!r}" for k, v in self.options.items())
        return f"Bipartition({options})"

    def fit(
        self, estimator, X_train, Y_candidates, *, random_state: int | None = None
    ) -> Bipartition:
        """Fit the rule's values on the training split (a fitted estimator, candidate labels)."""
        Y = read_only(np.asarray(Y_candidates))
        values = self._rule.fit(self, estimator, read_only(X_train), Y, random_state)
        self.fitted = {"rule": self.rule, **values}
        return self

    def apply(self, estimator, X, scores: np.ndarray) -> np.ndarray:
        """Predicted 0/1 label sets for ``scores`` (rows of ``X``); the rule reads read-only
        views of both."""
        if self._rule.needs_fit and not self.fitted:
            raise PmlbenchError(f"bipartition rule {self.rule!r} must be fitted before apply")
        scores = read_only(scores)
        Y_pred = self._rule.apply(self, estimator, read_only(X), scores)
        if not self.options["allow_empty"]:
            Y_pred = ensure_nonempty(Y_pred, scores)
        return Y_pred

    def describe(self) -> str:
        """The rule and its fitted values in one line (stored in every result row)."""
        text = self._rule.describe(self)
        return text + ("" if self.options["allow_empty"] else ", top label if empty")


def make_bipartition(config: Mapping[str, Any], objective: Metric | None = None) -> Bipartition:
    """A Bipartition from the ``bipartition`` config node; ``objective`` is the metric plugin
    its ``objective`` names, when the caller has it already (else it is looked up)."""
    return Bipartition(objective, **config)
