"""Fitting a method on a training split, with hyper-parameter tuning when configured.

:func:`fit_with_tuning` is how the protocol fits every split
(pmlbench.protocol.experiment.run_split): with a grid in ``spec.tune`` it selects the grid
point by inner k-fold cross-validation on the training split (pmlbench.protocol.tuning),
then refits on the whole training split; without one it fits the configured parameters. It
returns one :class:`Fitted`. Every array the method is handed is a read-only view
(pmlbench.core.read_only).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from pmlbench.core.checks import as_dense
from pmlbench.core.read_only import read_only
from pmlbench.errors import PmlbenchError
from pmlbench.metrics.base import Metric
from pmlbench.protocol.bipartition import make_bipartition
from pmlbench.protocol.tuning import make_plan, tune, tuning_grid

__all__ = ["Fitted", "fit_with_tuning", "tuning_grid"]


class Fitted(NamedTuple):
    """A method fitted on one training split."""

    estimator: Any
    # the chosen grid point (results.csv ``tuned``); empty without a tuning grid
    chosen: dict[str, Any]
    # the tuning record (grid, per-fold scores, the labels scored against; run.json)
    tuning: dict[str, Any]


def fold_scorer(spec, metric, random_state: int | None, objective: Metric | None = None):
    """Score a fitted estimator on a held-out fold with ``metric`` under the spec's convention.

    A bipartition metric sees the spec's bipartition rule (with ``objective``, its objective
    metric when the caller has it), fitted on the fold's training part. The model and the
    rule are handed read-only views.
    """
    options = {"convention": spec.metric_convention, "zero_division": spec.macro_f1_zero_division}

    def score(model, X_fit, Y_fit, X_held, Y_held) -> float:
        X_fit, Y_fit, X_held = read_only(X_fit), read_only(Y_fit), read_only(X_held)
        scores = as_dense(model.decision_function(X_held), np.float64)
        if scores.shape != Y_held.shape:
            raise PmlbenchError(
                f"{type(model).__name__} returned scores of shape {scores.shape} in inner "
                f"cross-validation, expected {Y_held.shape}"
            )
        Y_pred = None
        if metric.needs == "bipartition":
            rule = make_bipartition(dict(spec.bipartition), objective)
            rule.fit(model, X_fit, Y_fit, random_state=random_state)
            Y_pred = rule.apply(model, X_held, scores)
        return metric(Y_held, Y_pred, scores, **options)

    return score


def fit_with_tuning(
    estimator,
    X_train,
    Y_candidates,
    *,
    spec,
    Y_true_train,
    random_state,
    scoring: Metric | None = None,
    objective: Metric | None = None,
) -> Fitted:
    """Fit ``estimator`` on the training split, tuning the grid of ``spec.tune`` first.

    Without a grid: a plain fit, with empty ``chosen`` and ``tuning``. ``scoring`` and
    ``objective`` are the metric plugins ``tune.scoring`` and ``bipartition.objective`` name,
    when the caller has looked them up (pmlbench.protocol.experiment.prepare). The estimator
    is handed read-only views of ``X_train`` and ``Y_candidates``.
    """
    X_train, Y_candidates = read_only(X_train), read_only(Y_candidates)
    plan = make_plan(spec.tune or {}, estimator, Y_candidates.shape[0], scoring)
    if plan is None:
        estimator.fit(X_train, Y_candidates)
        return Fitted(estimator, {}, {})
    chosen, record = tune(
        estimator,
        X_train,
        np.asarray(Y_candidates),
        plan,
        Y_true=np.asarray(Y_true_train),
        random_state=random_state,
        score_fold=fold_scorer(spec, plan.scoring, random_state, objective),
    )
    estimator.set_params(**chosen)
    estimator.fit(X_train, Y_candidates)
    return Fitted(estimator, dict(chosen), record)
