"""Ridge regression on the candidate labels: the control for PML3ER's label recovery.

``W = (XᵀX + lambda2 I)^{-1} Xᵀ Y`` with Y the candidate matrix: PML3ER's W-step (Li & Wang,
IJCAI 2020, Eq. 17) with the confidences C fixed to the candidates, no enrichment and no
recovery. Scores are ``X W``. :class:`RidgeSystem` is the factored W-step both methods use.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
from sklearn.base import BaseEstimator
from threadpoolctl import threadpool_limits

from pmlbench.core.checks import check_feature_count, check_features, check_label_matrix
from pmlbench.core.digest import content_digest
from pmlbench.core.parameters import Options, ValidatedParameters
from pmlbench.methods._constraints import BLAS_THREADS, FLAG, POSITIVE, REAL
from pmlbench.numerics.fitcache import LRUCache
from pmlbench.numerics.linalg import gram
from pmlbench.numerics.scores import threshold_labels

SOLVERS = ("cholesky", "eigh")
FORMS = ("auto", "primal", "dual")

# Gram matrices and factorisations of recent training sets: tuning refits one inner-CV fold
# for every grid value of lambda2 in a row, and the Gram matrix (and eigendecomposition) does
# not depend on it. Entries are d x d or n x n, so the caches stay small.
_GRAMS = LRUCache(2)
_FACTORS = LRUCache(2)


class RidgeSystem:
    """The W-step ``(XᵀX + lambda2 I)^{-1} Xᵀ C`` (Eq. 17), factored once for many C.

    The primal form factors the d x d matrix ``XᵀX + lambda2 I``; the dual form (default
    when n < d) factors the n x n matrix ``XXᵀ + lambda2 I`` and returns
    ``Xᵀ (XXᵀ + lambda2 I)^{-1} C``, the same W. ``solver="cholesky"`` factors each lambda2
    (cheapest for one or two values); ``"eigh"`` eigendecomposes the Gram matrix once per
    training set and serves every lambda2 from it (cheaper for long grids). Sparse X stays
    sparse: only the Gram matrix is dense. The estimators validate ``lambda2`` (> 0) and
    ``solver`` before they build one.
    """

    def __init__(
        self,
        X,
        lambda2: float,
        *,
        solver: str = "cholesky",
        form: str = "auto",
        key: str | None = None,
    ):
        if form not in FORMS:  # an internal argument, not a method parameter
            raise ValueError(f"unknown W-step form {form!r}; use one of {list(FORMS)}")
        n, d = X.shape
        self.X = X
        self.dual = (n < d) if form == "auto" else form == "dual"
        self.lambda2 = float(lambda2)
        self.solver = solver
        key = key or content_digest(X)
        G, self.gram_cached = _GRAMS.get_or_compute(
            (key, self.dual), lambda: gram(X, rows=self.dual)
        )
        if solver == "cholesky":

            def factor():
                A = G + self.lambda2 * np.eye(G.shape[0])
                return scipy.linalg.cho_factor(A, lower=True, overwrite_a=True, check_finite=False)

            self._factor, self.factor_cached = _FACTORS.get_or_compute(
                (key, self.dual, "cholesky", self.lambda2), factor
            )
        else:

            def decompose():
                s, Q = scipy.linalg.eigh(G, check_finite=False, driver="evd")
                return np.clip(s, 0.0, None), Q

            self._factor, self.factor_cached = _FACTORS.get_or_compute(
                (key, self.dual, "eigh"), decompose
            )

    def _inverse_times(self, B: np.ndarray) -> np.ndarray:
        if self.solver == "cholesky":
            return scipy.linalg.cho_solve(self._factor, B, check_finite=False)
        s, Q = self._factor
        return Q @ ((Q.T @ B) / (s + self.lambda2)[:, None])

    def solve(self, C: np.ndarray) -> np.ndarray:
        """W (d x l) for targets C (n x l)."""
        if self.dual:
            return np.asarray(self.X.T @ self._inverse_times(C))
        return self._inverse_times(np.asarray(self.X.T @ C))


class LinearScores:
    """Scores ``X W_`` and a thresholded ``predict``, shared by ridge and PML3ER."""

    # set by the estimators' constructors and fit
    threshold: float
    allow_empty: bool
    W_: np.ndarray
    n_features_in_: int

    def decision_function(self, X) -> np.ndarray:
        """Scores ``X W`` (n x l)."""
        X = check_features(X)
        check_feature_count(X, self.n_features_in_, method=type(self).__name__)
        return np.asarray(X @ self.W_)

    def predict(self, X) -> np.ndarray:
        """Threshold the scores (see ``threshold`` and ``allow_empty``)."""
        return threshold_labels(self.decision_function(X), self.threshold, self.allow_empty)


class Ridge(LinearScores, ValidatedParameters, BaseEstimator):
    """Least squares on the candidate labels (PML3ER's W-step with C = Y, Eq. 17).

    Args:
        lambda2: ridge penalty, a number > 0 (tuned over {10, 100} by default, as PML3ER's).
        w_solver: "cholesky" (factor per lambda2) or "eigh" (one eigendecomposition for all).
        threshold, allow_empty: the rule of ``predict`` (score >= threshold, any finite
            number; an instance with no label above it gets its top-scored label unless
            allow_empty).
        blas_threads: BLAS threads during fit, an integer >= 1 (None: the library default),
            as PML3ER's.
    """

    default_tuning_grid = {"lambda2": [10, 100]}
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
        X = check_features(X)
        Y = check_label_matrix(Y, what="candidate labels", n_rows=X.shape[0])
        with threadpool_limits(self.blas_threads, user_api="blas"):
            system = RidgeSystem(X, float(self.lambda2), solver=self.w_solver)
            self.W_ = system.solve(Y.astype(np.float64))
        self.n_features_in_ = X.shape[1]
        return self
