"""The W-step of the linear PML methods: ridge regression factored once for many targets.

``W = (XᵀX + lambda2 I)^{-1} Xᵀ C`` is PML3ER's W-step (Li & Wang, IJCAI 2020, Eq. 17) and,
with C the candidate matrix, the ridge control (pmlbench.methods.ridge). Both methods build
one :class:`RidgeSystem` per training set and solve it for each C.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from pmlbench.core.digest import content_digest
from pmlbench.numerics.fitcache import LRUCache
from pmlbench.numerics.linalg import gram

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
