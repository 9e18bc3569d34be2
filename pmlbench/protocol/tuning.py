"""Hyper-parameter selection by inner k-fold cross-validation on a training split.

Generic for every method plugin: the ``tune`` config node names a grid of constructor
parameters (``tune.grid.<param>: [values]``; null means not tuned), the number of folds
``cv``, the ``scoring`` metric (any registered metric plugin), ``oracle`` and ``n_jobs``
(processes for the folds; -1: all cores; null: the job's thread budget). These options,
their defaults and allowed values are defined in pmlbench.protocol.settings.

The held-out folds are scored against the CANDIDATE labels, the only labels a partial
multi-label learner has. ``oracle: true`` scores against the ground truth of the training
split instead; such results are marked ``oracle`` in results.csv.

The loop is fold-major: the whole grid is fitted on one fold's training part before the
next fold. A method with the optional ``fit_grid`` hook (:data:`FIT_GRID`) fits the grid
itself, doing the work that does not depend on the tuned parameters once (kNN graphs,
label enrichment, Gram matrices, decompositions) and warm-starting along a parameter's path;
any other method is fitted point after point on one estimator object, so a method that
caches work keyed on its training data still reuses it. scikit-learn's GridSearchCV iterates
grid points in the outer loop and would defeat both, so the loop is written here with
scikit-learn's KFold, ParameterGrid and clone.

``tune.procedure`` says which folds are scored: ``kfold`` every one of the ``cv`` folds,
``holdout`` only the first (fit on (cv-1)/cv of the training split, score on the rest).

Every fold is handed to the method (``fit``, ``fit_grid``, ``decision_function``) as
read-only views (pmlbench.core.read_only): all grid points of a fold share its arrays.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.model_selection import KFold, ParameterGrid

from pmlbench.core.parallel import worker_budget
from pmlbench.core.read_only import read_only
from pmlbench.errors import NotApplicable, PluginError, PmlbenchError
from pmlbench.metrics.base import Metric
from pmlbench.plugins.loading import load_metrics
from pmlbench.plugins.names import unknown
from pmlbench.protocol.settings import check_option, tune_options


@dataclass(frozen=True)
class TuningPlan:
    """A validated ``tune`` config node."""

    grid: dict[str, list]
    cv: int
    scoring: Metric
    oracle: bool
    n_jobs: int = 1
    procedure: str = "holdout"

    @property
    def n_scored_folds(self) -> int:
        """Folds fitted and scored: all ``cv`` of them, or one for ``holdout``."""
        return 1 if self.procedure == "holdout" else self.cv

    @property
    def points(self) -> list[dict[str, Any]]:
        """Grid points in grid order (scikit-learn's ParameterGrid: keys sorted, last fastest)."""
        return list(ParameterGrid(self.grid))


def tuning_grid(tune: dict[str, Any]) -> dict[str, list]:
    """The parameters to tune: grid entries that are not null, as non-empty lists."""
    grid = {}
    for name, values in (tune.get("grid") or {}).items():
        if values is None:
            continue
        if not isinstance(values, (list, tuple)) or len(values) == 0:
            raise PmlbenchError(
                f"tune.grid.{name} must be a non-empty list of values, e.g. tune.grid.{name}=[1,10]"
            )
        grid[name] = list(values)
    return grid


def scoring_metric(name: str) -> Metric:
    """The registered metric plugin called ``name``."""
    check_option("tune", "scoring", name)
    return load_metrics([name])[name]


def make_plan(
    tune: dict[str, Any], estimator, n_train: int, scoring: Metric | None = None
) -> TuningPlan | None:
    """Validate ``tune`` against the estimator and the training size; None when nothing is
    tuned. ``scoring`` is the metric plugin ``tune.scoring`` names when the caller has looked
    it up already (a prepared experiment); otherwise it is looked up here."""
    grid = tuning_grid(tune)
    if not grid:
        return None
    found = unknown(grid, estimator.get_params(deep=False))
    if found is not None:
        raise PmlbenchError(
            f"tune.grid names unknown parameters {list(found.unknown)} of "
            f"{type(estimator).__name__}; known: {sorted(found.known)}"
            f"{found.hint('tune.grid.{name}')}"
        )
    options = tune_options(tune)
    cv = options["cv"]
    if cv > n_train:
        raise PmlbenchError(
            f"tune.cv={cv} asks for more folds than the {n_train} training instances; lower tune.cv"
        )
    return TuningPlan(
        grid,
        cv,
        scoring_metric(options["scoring"]) if scoring is None else scoring,
        options["oracle"],
        fold_workers(options["n_jobs"], 1 if options["procedure"] == "holdout" else cv),
        options["procedure"],
    )


def fold_workers(n_jobs: Any, cv: int) -> int:
    """Processes for the inner folds: ``tune.n_jobs``, or by default the job's thread budget."""
    return min(worker_budget(n_jobs, "tune.n_jobs"), cv)


# Mean CV scores this close (relative) are equal: their difference is BLAS rounding, not data.
SCORE_TIE_RTOL = 1e-9


def best_index(mean_scores: np.ndarray, higher_is_better: bool) -> int:
    """Index of the best mean score; NaN never wins.

    Scores within :data:`SCORE_TIE_RTOL` (relative, with an absolute floor of the same size)
    of the best are ties, and ties go to the first grid point: two grid points whose scores
    are equal in exact arithmetic but differ in their last bits on some CPU must not be
    chosen between by the CPU.
    """
    values = np.asarray(mean_scores, dtype=float)
    finite = np.isfinite(values)
    if not finite.any():
        raise PmlbenchError(
            "every grid point scored NaN in inner cross-validation (e.g. every held-out row "
            "degenerate); choose another tune.scoring or fewer tune.cv folds"
        )
    signed = np.where(finite, values if higher_is_better else -values, -np.inf)
    best = signed.max()
    tied = signed >= best - SCORE_TIE_RTOL * max(abs(best), 1.0)
    return int(np.flatnonzero(tied)[0])


# The optional method hook that fits a whole grid on one training set (pmlbench.plugin).
FIT_GRID = "fit_grid"


def fit_grid_points(model, X, Y, points: list[dict[str, Any]]) -> Iterator[tuple[int, Any]]:
    """(index into ``points``, fitted estimator) for every grid point, each exactly once.

    Uses the method's ``fit_grid`` hook when it has one, in the order the hook chooses;
    otherwise sets each point on ``model`` and fits it from scratch, in grid order. The
    estimator yielded may be ``model`` itself, refitted: use it before asking for the next.
    Either way the method is handed read-only views of ``X`` and ``Y``.
    """
    X, Y = read_only(X), read_only(Y)
    hook = getattr(model, FIT_GRID, None)
    if hook is None:
        for index, point in enumerate(points):
            model.set_params(**point)
            model.fit(X, Y)
            yield index, model
        return
    seen: set[int] = set()
    name = type(model).__name__
    for index, fitted in hook(X, Y, points):
        if not isinstance(index, (int, np.integer)) or not 0 <= index < len(points):
            raise PmlbenchError(
                f"{name}.fit_grid yielded grid index {index!r}; expected 0..{len(points) - 1}"
            )
        if index in seen:
            raise PmlbenchError(f"{name}.fit_grid yielded grid point {index} twice")
        seen.add(int(index))
        yield int(index), fitted
    if len(seen) != len(points):
        missing = sorted(set(range(len(points))) - seen)
        raise PmlbenchError(f"{name}.fit_grid never yielded grid point(s) {missing}")


def cross_validate_grid(
    estimator,
    X,
    Y_fit: np.ndarray,
    Y_score: np.ndarray,
    plan: TuningPlan,
    *,
    random_state: int | None,
    score_fold,
) -> np.ndarray:
    """Per-fold scores, shape (grid points, scored folds), of every grid point.

    ``score_fold(fitted, X_fit, Y_fit, X_held, Y_held) -> float`` scores a fitted estimator on
    one held-out fold. Folds come from ``KFold(cv, shuffle=True, random_state=random_state)``;
    ``holdout`` scores only the first of them.
    """
    points = plan.points
    folds = KFold(plan.cv, shuffle=True, random_state=random_state).split(np.zeros(Y_fit.shape[0]))
    scored = list(itertools.islice(folds, plan.n_scored_folds))
    per_fold = Parallel(n_jobs=plan.n_jobs)(
        delayed(_score_fold_grid)(
            estimator,
            points,
            X[fit_idx],
            Y_fit[fit_idx],
            X[held_idx],
            Y_score[held_idx],
            score_fold,
        )
        for fit_idx, held_idx in scored
    )
    return np.array(per_fold, dtype=float).T


def _score_fold_grid(estimator, points, X_fit, Y_fold, X_held, Y_held, score_fold) -> list[float]:
    """Every grid point on one fold, fitted together (:func:`fit_grid_points`).

    A grid point the method refuses on the fold's training part (too few instances for its
    ``k``, ...) stops tuning with one line naming the point and the ``tune`` keys that fix it:
    the method's own message names ``method.<param>``, which a grid overrides. The fold's
    arrays are made read-only here, in the process that fits them (a worker's copies of
    the caller's arrays arrive writable).
    """
    X_fit, Y_fold, X_held = read_only(X_fit), read_only(Y_fold), read_only(X_held)
    model = clone(estimator)
    scores = [float("nan")] * len(points)
    try:
        for index, fitted in fit_grid_points(model, X_fit, Y_fold, points):
            scores[index] = score_fold(fitted, X_fit, Y_fold, X_held, Y_held)
    except PluginError:
        raise
    except PmlbenchError as exc:
        if isinstance(exc, NotApplicable):
            raise
        tuned = ", ".join(sorted({name for point in points for name in point}))
        raise PmlbenchError(
            f"tuning on inner folds of {X_fit.shape[0]} training instances: {exc}; the tuning "
            f"grid sets {tuned}: narrow it (tune.grid.<param>=[...]), use fewer folds "
            "(tune.cv), or tune nothing (tune.grid=null)"
        ) from None
    return scores


def tune(
    estimator,
    X,
    Y_candidates: np.ndarray,
    plan: TuningPlan,
    *,
    Y_true: np.ndarray,
    random_state: int | None,
    score_fold,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Select the best grid point; returns (chosen params, record for run.json).

    A one-point grid is taken as given without cross-validation.
    """
    points = plan.points
    record: dict[str, Any] = {
        "scoring": plan.scoring.name,
        "higher_is_better": plan.scoring.higher_is_better,
        "against": "ground truth" if plan.oracle else "candidates",
        "cv": plan.cv,
        "procedure": plan.procedure,
        "grid": points,
        "oracle": False,
    }
    if len(points) == 1:
        record.update(cv=None, params=points[0], note="one grid point: no cross-validation")
        return points[0], record
    start = time.perf_counter()
    Y_score = Y_true if plan.oracle else Y_candidates
    fold_scores = cross_validate_grid(
        estimator, X, Y_candidates, Y_score, plan, random_state=random_state, score_fold=score_fold
    )
    with np.errstate(all="ignore"):
        finite = np.isfinite(fold_scores)
        counts = finite.sum(axis=1)
        means = np.where(finite, fold_scores, 0.0).sum(axis=1) / np.maximum(counts, 1)
        means[counts == 0] = np.nan
    best = best_index(means, plan.scoring.higher_is_better)
    record.update(
        oracle=plan.oracle,
        params=points[best],
        best_index=best,
        mean_scores=means.tolist(),
        fold_scores=fold_scores.tolist(),
        seconds=time.perf_counter() - start,
    )
    return points[best], record
