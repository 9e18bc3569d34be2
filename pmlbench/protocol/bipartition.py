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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import KFold

from pmlbench.core.checks import as_dense
from pmlbench.errors import PluginError, PmlbenchError
from pmlbench.metrics.base import Metric
from pmlbench.plugins import registry

RULES = ("method", "threshold", "global", "per_label", "top_k")
TRAINING_SCORES = ("cv", "train")
MAX_DISTINCT = 257


def ensure_nonempty(Y_pred: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Give every instance with no predicted label its top-scored label."""
    Y_pred = Y_pred.copy()
    empty = Y_pred.sum(axis=1) == 0
    if empty.any():
        Y_pred[np.flatnonzero(empty), np.argmax(scores[empty], axis=1)] = 1
    return Y_pred


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
    if metric.needs != "bipartition":
        raise PmlbenchError(
            f"bipartition.objective={name!r} is a ranking metric; choose a bipartition metric "
            "such as micro_f1, macro_f1, hamming_loss or subset_accuracy"
        )
    return metric


def out_of_fold_scores(
    estimator, X, Y: np.ndarray, cv: int, random_state: int | None
) -> np.ndarray:
    """Scores of every training instance from a clone fitted on the other folds."""
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
        model = clone(template).fit(X[fit_idx], Y[fit_idx])
        scores[held_idx] = as_dense(model.decision_function(X[held_idx]), np.float64)
    return scores


@dataclass
class Bipartition:
    """A configured bipartition rule; ``fit`` sees training data only (candidate labels)."""

    rule: str = "method"
    threshold: float = 0.5
    allow_empty: bool = True
    objective: str = "hamming_loss"
    training_scores: str = "cv"
    cv: int = 5
    fitted: dict[str, Any] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise PmlbenchError(f"unknown bipartition.rule {self.rule!r}; use one of {list(RULES)}")
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, (int, float)):
            raise PmlbenchError(f"bipartition.threshold must be a number, got {self.threshold!r}")
        if self.training_scores not in TRAINING_SCORES:
            raise PmlbenchError(
                f"unknown bipartition.training_scores {self.training_scores!r}; "
                f"use one of {list(TRAINING_SCORES)}"
            )
        if isinstance(self.cv, bool) or not isinstance(self.cv, int) or self.cv < 2:
            raise PmlbenchError(f"bipartition.cv must be an integer >= 2, got {self.cv!r}")
        if self.rule in ("global", "per_label"):
            self._objective = objective_metric(self.objective)

    def fit(
        self, estimator, X_train, Y_candidates, *, random_state: int | None = None
    ) -> Bipartition:
        """Fit the rule's values on the training split (a fitted estimator, candidate labels)."""
        Y = np.asarray(Y_candidates)
        self.fitted = {"rule": self.rule}
        if self.rule == "top_k":
            k, mean = candidate_cardinality_k(Y)
            self.fitted.update(k=k, mean_candidate_cardinality=mean)
        elif self.rule in ("global", "per_label"):
            if self.training_scores == "cv":
                scores = out_of_fold_scores(estimator, X_train, Y, self.cv, random_state)
            else:
                scores = as_dense(estimator.decision_function(X_train), np.float64)
            if self.rule == "global":
                self.fitted["threshold"] = self._fit_global(scores, Y)
            else:
                self.fitted["thresholds"] = self._fit_per_label(scores, Y)
        return self

    def _score(self, Y_true: np.ndarray, Y_pred: np.ndarray, scores: np.ndarray) -> float:
        return self._objective(Y_true, Y_pred, scores)

    def _fit_global(self, scores: np.ndarray, Y: np.ndarray) -> float:
        thresholds = candidate_thresholds(scores)
        values = np.empty(thresholds.size)
        for i, t in enumerate(thresholds):
            Y_pred = (scores >= t).astype(np.uint8)
            if not self.allow_empty:
                Y_pred = ensure_nonempty(Y_pred, scores)
            values[i] = self._score(Y, Y_pred, scores)
        return _best_threshold(
            values, thresholds, self._objective.higher_is_better, float(self.threshold)
        )

    def _fit_per_label(self, scores: np.ndarray, Y: np.ndarray) -> list[float]:
        # allow_empty acts after the per-label thresholds; it does not enter their choice
        result = []
        for j in range(Y.shape[1]):
            column, truth = scores[:, j : j + 1], Y[:, j : j + 1]
            thresholds = candidate_thresholds(column)
            values = np.array(
                [self._score(truth, (column >= t).astype(np.uint8), column) for t in thresholds]
            )
            result.append(
                _best_threshold(
                    values, thresholds, self._objective.higher_is_better, float(self.threshold)
                )
            )
        return result

    def apply(self, estimator, X, scores: np.ndarray) -> np.ndarray:
        """Predicted 0/1 label sets for ``scores`` (rows of ``X``)."""
        if self.rule in ("global", "per_label", "top_k") and not self.fitted:
            raise PmlbenchError(f"bipartition rule {self.rule!r} must be fitted before apply")
        if self.rule == "method":
            Y_pred = np.asarray(estimator.predict(X))
        elif self.rule == "threshold":
            Y_pred = (scores >= self.threshold).astype(np.uint8)
        elif self.rule == "global":
            Y_pred = (scores >= self.fitted["threshold"]).astype(np.uint8)
        elif self.rule == "per_label":
            Y_pred = (scores >= np.asarray(self.fitted["thresholds"])[None, :]).astype(np.uint8)
        else:
            Y_pred = top_k(scores, self.fitted["k"])
        if not self.allow_empty:
            Y_pred = ensure_nonempty(Y_pred, scores)
        return Y_pred

    def describe(self) -> str:
        """The rule and its fitted values in one line (stored in every result row)."""
        source = (
            f"{self.cv}-fold CV training scores"
            if self.training_scores == "cv"
            else "in-sample training scores"
        )
        if self.rule == "method":
            text = "method's predict"
        elif self.rule == "threshold":
            text = f"score >= {self.threshold:g}"
        elif self.rule == "global":
            t = self.fitted.get("threshold", float("nan"))
            text = f"global: score >= {t:.6g} (best {self.objective} vs candidates, {source})"
        elif self.rule == "per_label":
            t = np.asarray(self.fitted.get("thresholds", [np.nan]))
            text = (
                f"per_label: {t.size} thresholds, median {np.median(t):.4g} in "
                f"[{t.min():.4g}, {t.max():.4g}] (best {self.objective} per label vs "
                f"candidates, {source})"
            )
        else:
            text = (
                f"top_k: k={self.fitted.get('k')} top-scored labels (mean candidate set "
                f"size {self.fitted.get('mean_candidate_cardinality', float('nan')):.4g})"
            )
        return text + ("" if self.allow_empty else ", top label if empty")


def make_bipartition(config: dict) -> Bipartition:
    """A Bipartition from the ``bipartition`` config node."""
    known = {"rule", "threshold", "allow_empty", "objective", "training_scores", "cv"}
    unknown = set(config) - known
    if unknown:
        raise PmlbenchError(
            f"unknown bipartition options {sorted(unknown)}; known: {sorted(known)}"
        )
    return Bipartition(**config)
