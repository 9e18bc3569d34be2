"""Ridge regression on the candidate labels: the control for PML3ER's label recovery.

``W = (XᵀX + lambda2 I)^{-1} Xᵀ Y`` with Y the candidate matrix: PML3ER's W-step (Li & Wang,
IJCAI 2020, Eq. 17) with the confidences C fixed to the candidates, no enrichment and no
recovery. Scores are ``X W``; the factored W-step (:class:`RidgeSystem`) and the scoring
(:class:`LinearScores`) are PML3ER's too (pmlbench.numerics). ``fit_grid`` computes the Gram
matrix once for a whole grid of lambda2 values.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, clone
from threadpoolctl import threadpool_limits

from pmlbench.core.checks import check_features, check_label_matrix
from pmlbench.core.parameters import Options, ValidatedParameters
from pmlbench.methods._constraints import BLAS_THREADS, FLAG, POSITIVE, REAL
from pmlbench.numerics.ridge_system import SOLVERS, RidgeGram
from pmlbench.numerics.scores import LinearScores


class Ridge(LinearScores, ValidatedParameters, BaseEstimator):
    """Least squares on the candidate labels (PML3ER's W-step with C = Y, Eq. 17).

    Args:
        lambda2: ridge penalty, a number > 0 (tuned over PML3ER's grid by default; see
            docs/methods/ridge.md).
        w_solver: "cholesky" (factor per lambda2) or "eigh" (one eigendecomposition for all).
        threshold, allow_empty: the rule of ``predict`` (score >= threshold, any finite
            number; an instance with no label above it gets its top-scored label unless
            allow_empty).
        blas_threads: BLAS threads during fit, an integer >= 1 (None: the library default),
            as PML3ER's.
    """

    # PML3ER's grid (the control is tuned the same way); sources in docs/methods/ridge.md
    default_tuning_grid = {"lambda2": [1, 10, 100, 1000]}
    default_bipartition = {"rule": "threshold", "threshold": 0.5, "allow_empty": False}
    parameter_constraints = {
        "lambda2": POSITIVE,
        "w_solver": [Options(SOLVERS)],
        "threshold": REAL,
        "allow_empty": FLAG,
        "blas_threads": BLAS_THREADS,
    }

    def __init__(
        self,
        lambda2: float = 10.0,
        w_solver: str = "cholesky",
        threshold: float = 0.5,
        allow_empty: bool = False,
        blas_threads: int | None = 1,
    ):
        self.lambda2 = lambda2
        self.w_solver = w_solver
        self.threshold = threshold
        self.allow_empty = allow_empty
        self.blas_threads = blas_threads

    def fit(self, X, Y) -> Ridge:
        """Solve Eq. 17 with C = Y."""
        self._validate_params()
        X, Y = _checked(X, Y)
        with threadpool_limits(self.blas_threads, user_api="blas"):
            return self._solve(RidgeGram(X), Y)

    def fit_grid(self, X, Y, points: Sequence[Mapping[str, Any]]) -> Iterator[tuple[int, Ridge]]:
        """Fit every grid point on (X, Y) from one Gram matrix (pmlbench.plugin's hook).

        Each point is a fresh estimator equal to ``clone(self).set_params(**point).fit(X, Y)``
        bit for bit: the same Gram matrix, factored per lambda2 as ``fit`` factors it.
        """
        self._validate_params()
        models = [clone(self).set_params(**point) for point in points]
        for model in models:
            model._validate_params()
        X, Y = _checked(X, Y)
        with threadpool_limits(self.blas_threads, user_api="blas"):
            shared = RidgeGram(X)
        for index in range(len(models)):
            model, models[index] = models[index], None  # hold no fitted model
            with threadpool_limits(model.blas_threads, user_api="blas"):
                model._solve(shared, Y)
            yield index, model

    def _solve(self, shared: RidgeGram, Y: np.ndarray) -> Ridge:
        self.W_ = shared.system(float(self.lambda2), self.w_solver).solve(Y.astype(np.float64))
        self.n_features_in_ = shared.X.shape[1]
        return self


def _checked(X, Y):
    X = check_features(X)
    return X, check_label_matrix(Y, what="candidate labels", n_rows=X.shape[0])
