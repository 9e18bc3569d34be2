"""The W-step of the linear PML methods: ridge regression factored once for many targets.

``W = (XᵀX + lambda2 I)^{-1} Xᵀ C`` is PML3ER's W-step (Li & Wang, IJCAI 2020, Eq. 17) and,
with C the candidate matrix, the ridge control (pmlbench.methods.ridge). A
:class:`RidgeGram` holds the Gram matrix of one training set, which does not depend on
lambda2; each lambda2 gets a :class:`RidgeSystem` from it, solved for as many C as needed.
A fit builds one of each; a grid fit (``fit_grid``) builds one :class:`RidgeGram` and a
:class:`RidgeSystem` per lambda2, with the same arithmetic, so the same W bit for bit.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from pmlbench.numerics.linalg import gram

SOLVERS = ("cholesky", "eigh")
FORMS = ("auto", "primal", "dual")


class RidgeGram:
    """The Gram matrix of one training set for the W-step (Eq. 17), shared by every lambda2.

    The primal form holds the d x d matrix ``XᵀX``; the dual form (default when n < d) the
    n x n matrix ``XXᵀ``, from which ``Xᵀ (XXᵀ + lambda2 I)^{-1} C`` gives the same W. Sparse
    X stays sparse: only the Gram matrix is dense. Its eigendecomposition is computed on
    first use by a ``solver="eigh"`` system and kept for every later lambda2.
    """

    def __init__(self, X, *, form: str = "auto"):
        if form not in FORMS:  # an internal argument, not a method parameter
            raise ValueError(f"unknown W-step form {form!r}; use one of {list(FORMS)}")
        n, d = X.shape
        self.X = X
        self.dual = (n < d) if form == "auto" else form == "dual"
        self.G = gram(X, rows=self.dual)
        self._eigen: tuple[np.ndarray, np.ndarray] | None = None

    def eigen(self) -> tuple[np.ndarray, np.ndarray]:
        """Eigenvalues (clipped at 0: G is PSD) and eigenvectors of the Gram matrix."""
        if self._eigen is None:
            s, Q = scipy.linalg.eigh(self.G, check_finite=False, driver="evd")
            self._eigen = (np.clip(s, 0.0, None), Q)
        return self._eigen

    def system(self, lambda2: float, solver: str = "cholesky") -> RidgeSystem:
        """The W-step at ``lambda2``, factored from this Gram matrix."""
        return RidgeSystem(self.X, lambda2, solver=solver, gram=self)


class RidgeSystem:
    """The W-step ``(XᵀX + lambda2 I)^{-1} Xᵀ C`` (Eq. 17) at one lambda2, factored once for many C.

    ``solver="cholesky"`` factors ``G + lambda2 I`` (cheapest for a few values of lambda2);
    ``"eigh"`` solves from the eigendecomposition of G, shared by every lambda2 of one
    :class:`RidgeGram`. Without ``gram`` the system computes its own Gram matrix in ``form``
    (see :class:`RidgeGram`). The estimators validate ``lambda2`` (> 0) and ``solver`` before
    they build one.
    """

    def __init__(
        self,
        X,
        lambda2: float,
        *,
        solver: str = "cholesky",
        form: str = "auto",
        gram: RidgeGram | None = None,
    ):
        self.gram = RidgeGram(X, form=form) if gram is None else gram
        self.X = self.gram.X
        self.dual = self.gram.dual
        self.lambda2 = float(lambda2)
        self.solver = solver
        if solver == "cholesky":
            A = self.gram.G + self.lambda2 * np.eye(self.gram.G.shape[0])
            self._factor = scipy.linalg.cho_factor(
                A, lower=True, overwrite_a=True, check_finite=False
            )
        else:
            self._factor = self.gram.eigen()

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
