"""PML-LRS, an approximate re-implementation of Sun, Feng, Wang, Lang & Jin (AAAI 2019),
"Partial multi-label learning by low-rank and sparse decomposition", trained on candidate
labels.

No code of the authors is public and the objective below is a reconstruction from the
paper's abstract (not verified against the paper's equations): the candidate matrix S is
split into a low-rank ground-truth part Y and a sparse irrelevant-label part E, and a linear
map W (features with a bias column) is fitted to Y with a trace-norm penalty on W::

    min_{W,Y,E} ½‖XW − Y‖²_F + λ_W‖W‖_* + λ_Y‖Y‖_* + λ_E‖E‖_1   s.t.  S = Y + E

It is solved by the inexact augmented Lagrangian method with the splits J = W and Z = Y.
Scores are ``XW``; a label is predicted when its score is at least ``threshold`` (0.5).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.linalg
from scipy.linalg.blas import dsyrk
from sklearn.base import BaseEstimator
from threadpoolctl import threadpool_limits

from pmlbench.core.checks import check_feature_count, check_features, check_label_matrix
from pmlbench.core.parameters import ValidatedParameters
from pmlbench.methods._constraints import (
    BLAS_THREADS,
    CAP,
    MAX_GRAM_ORDER,
    NON_NEGATIVE,
    POSITIVE_INT,
    REAL,
    check_gram_order,
)
from pmlbench.numerics.linalg import SymmetricSolver, gram, nuclear_norm, svt, with_bias

# Below this many flops of a full SVD (rows x columns x min(rows, columns)) the SVT is always
# the SVD of pmlbench.numerics.linalg.svt: genbase, medical, arts, corel5k and bibtex stay on it.
GRAM_SVT_MIN_WORK = 5e8
# The Gram route loses accuracy for singular values below sqrt(eps) * the largest; it is taken
# only while the threshold stays above this fraction of the largest singular value.
GRAM_SVT_MIN_RELATIVE_THRESHOLD = 1e-4


def svt_lrs(A: np.ndarray, threshold: float) -> np.ndarray:
    """Singular value soft-thresholding (as :func:`pmlbench.numerics.linalg.svt`), cheaper.

    Two shortcuts, neither of which changes the value beyond round-off:

    - ``‖A‖_F <= threshold`` bounds every singular value by the threshold, so the result is
      exactly zero and no SVD is needed (the first third of the ALM iterations, while μ is
      small);
    - for a large matrix (an n x q label matrix with many labels) the singular pairs come
      from the eigendecomposition of the smaller Gram matrix G = AᵀA (or AAᵀ):
      ``SVT(A) = A V diag(max(1 − threshold/σ, 0)) Vᵀ`` with G = V diag(σ²) Vᵀ. One
      rank-k update and one q x q eigendecomposition cost about half of LAPACK's SVD of
      the n x q matrix. Eigenvalues carry an error of about eps·σ_max², which matters only
      for singular values near sqrt(eps)·σ_max; the route is taken only while the
      threshold exceeds ``GRAM_SVT_MIN_RELATIVE_THRESHOLD``·σ_max (the result then agrees
      with the SVD's to about 1e-10; tests/test_pml_lrs.py).
    """
    # every singular value is at most ‖A‖_F; the margin keeps the SVD's round-off out
    if np.linalg.norm(A) <= threshold * (1.0 - 1e-12):
        return np.zeros_like(A)
    rows, cols = A.shape
    if rows * cols * min(rows, cols) < GRAM_SVT_MIN_WORK:
        return svt(A, threshold)
    tall = rows >= cols
    B = A if tall else A.T
    # upper triangle of BᵀB; for a C-ordered A, A.T is the Fortran-ordered array BLAS reads
    G = dsyrk(1.0, A.T, trans=0) if tall else dsyrk(1.0, A.T, trans=1)
    eigenvalues, V = scipy.linalg.eigh(G, lower=False, check_finite=False, driver="evd")
    largest = float(np.sqrt(max(eigenvalues[-1], 0.0)))
    if threshold < GRAM_SVT_MIN_RELATIVE_THRESHOLD * largest:
        return svt(A, threshold)
    sigma = np.sqrt(np.clip(eigenvalues, 0.0, None))
    keep = sigma > threshold
    kept = V[:, keep]
    Z = ((B @ kept) * (1.0 - threshold / sigma[keep])) @ kept.T
    return Z if tall else Z.T


@dataclass
class LrsResult:
    """Output of :func:`pml_lrs_alm`: primal and dual variables and the residual history."""

    W: np.ndarray
    Y: np.ndarray
    E: np.ndarray
    multipliers: tuple[np.ndarray, np.ndarray, np.ndarray]
    n_iter: int
    converged: bool
    residuals: list[float]


def pml_lrs_objective(
    X,
    S: np.ndarray,
    W: np.ndarray,
    Y: np.ndarray,
    lambda_w: float,
    lambda_y: float,
    lambda_e: float,
) -> float:
    """The reconstructed objective at a feasible point (E = S − Y)."""
    fit = 0.5 * np.sum((np.asarray(X @ W) - Y) ** 2)
    return float(
        fit
        + lambda_w * nuclear_norm(W)
        + lambda_y * nuclear_norm(Y)
        + lambda_e * np.abs(S - Y).sum()
    )


def pml_lrs_alm(
    X,
    S: np.ndarray,
    lambda_w: float,
    lambda_y: float,
    lambda_e: float,
    *,
    max_iter: int = 500,
    mu: float = 1e-4,
    rho: float = 1.1,
    mu_max: float = 1e10,
    tol: float = 1e-6,
) -> LrsResult:
    """Inexact ALM for the reconstructed PML-LRS objective.

    Multipliers Λ1 (S = Y + E), Λ2 (W = J), Λ3 (Y = Z). Each iteration::

        J ← SVT_{λ_W/μ}(W + Λ2/μ)             Z ← SVT_{λ_Y/μ}(Y + Λ3/μ)
        W ← (XᵀX + μI)⁻¹(XᵀY + μJ − Λ2)
        Y ← (XW + Λ1 − Λ3 + μ(S − E) + μZ) / (1 + 2μ)
        E ← soft_{λ_E/μ}(S − Y + Λ1/μ)
        Λ1 += μ(S − Y − E),  Λ2 += μ(W − J),  Λ3 += μ(Y − Z),  μ ← min(ρμ, μ_max)

    Stops when all three residuals are below ``tol * ‖S‖_F``.
    """
    n, q = S.shape
    p = X.shape[1]
    solver = SymmetricSolver(gram(X))
    W = np.zeros((p, q))
    Y = np.zeros((n, q))
    E = np.zeros((n, q))
    L1, L2, L3 = np.zeros((n, q)), np.zeros((p, q)), np.zeros((n, q))
    # n x q work arrays, reused: every update below is the same sequence of floating-point
    # operations as the formulas in the docstring, written into them (fresh n x q temporaries
    # cost page faults on every iteration for many labels)
    M, T, R1, R3 = (np.empty((n, q)) for _ in range(4))
    scale = max(float(np.linalg.norm(S)), 1.0)
    residuals: list[float] = []
    converged = False
    n_iter = 0
    while n_iter < max_iter:
        n_iter += 1
        J = svt_lrs(W + L2 / mu, lambda_w / mu)
        np.add(Y, np.divide(L3, mu, out=M), out=M)
        Z = svt_lrs(M, lambda_y / mu)
        W = solver.solve(np.asarray(X.T @ Y) + mu * J - L2, mu)
        # Y ← (XW + Λ1 − Λ3 + μ(S − E) + μZ) / (1 + 2μ), left to right
        XW = np.asarray(X @ W)
        np.add(XW, L1, out=XW)
        np.subtract(XW, L3, out=XW)
        np.add(XW, np.multiply(mu, np.subtract(S, E, out=T), out=T), out=XW)
        np.add(XW, np.multiply(mu, Z, out=T), out=XW)
        np.divide(XW, 1 + 2 * mu, out=Y)
        # E ← soft(S − Y + Λ1/μ); a − clip(a, −τ, τ) is sign(a)·max(|a| − τ, 0) to the bit
        np.add(np.subtract(S, Y, out=M), np.divide(L1, mu, out=T), out=M)
        threshold = lambda_e / mu
        np.subtract(M, np.clip(M, -threshold, threshold, out=T), out=E)
        np.subtract(np.subtract(S, Y, out=R1), E, out=R1)
        r2 = W - J
        np.subtract(Y, Z, out=R3)
        np.add(L1, np.multiply(mu, R1, out=T), out=L1)
        L2 += mu * r2
        np.add(L3, np.multiply(mu, R3, out=T), out=L3)
        mu = min(rho * mu, mu_max)
        residual = max(float(np.linalg.norm(r)) for r in (R1, r2, R3)) / scale
        residuals.append(float(residual))
        if residual < tol:
            converged = True
            break
    return LrsResult(
        W=W,
        Y=Y,
        E=E,
        multipliers=(L1, L2, L3),
        n_iter=n_iter,
        converged=converged,
        residuals=residuals,
    )


class PMLLRS(ValidatedParameters, BaseEstimator):
    """PML-LRS (approximate re-implementation of Sun et al., AAAI 2019).

    Args:
        lambda_w: λ_W >= 0, trace-norm weight on the linear map W (features to labels).
        lambda_y: λ_Y >= 0, trace-norm weight on the recovered ground-truth label matrix Y.
        lambda_e: λ_E >= 0, ℓ1 weight on E, the irrelevant labels removed from the
            candidates. Below about 1 it lets a candidate label the model cannot fit move
            into E.
        max_iter: ALM iterations at most, an integer >= 1.
        max_order: refuse (:class:`~pmlbench.errors.NotApplicable`, before any work) more
            than this many features + 1, the order of the Gram matrix each W step solves
            against; an integer >= 1 or None (no cap). See ``MAX_GRAM_ORDER``.
        threshold: a label is predicted when its score ``XW`` is at least this (any finite
            number).
        blas_threads: BLAS threads during fit and predict, an integer >= 1 (None: no limit).
    """

    default_bipartition = {"rule": "threshold", "threshold": 0.5}
    parameter_constraints = {
        "lambda_w": NON_NEGATIVE,
        "lambda_y": NON_NEGATIVE,
        "lambda_e": NON_NEGATIVE,
        "max_iter": POSITIVE_INT,
        "max_order": CAP,
        "threshold": REAL,
        "blas_threads": BLAS_THREADS,
    }

    def __init__(
        self,
        lambda_w: float = 1.0,
        lambda_y: float = 1.0,
        lambda_e: float = 0.5,
        max_iter: int = 500,
        max_order: int | None = MAX_GRAM_ORDER,
        threshold: float = 0.5,
        blas_threads: int | None = 1,
    ):
        self.lambda_w = lambda_w
        self.lambda_y = lambda_y
        self.lambda_e = lambda_e
        self.max_iter = max_iter
        self.max_order = max_order
        self.threshold = threshold
        self.blas_threads = blas_threads

    def fit(self, X, Y) -> PMLLRS:
        """Solve the reconstructed objective on the candidate labels ``Y``."""
        self._validate_params()
        check_gram_order(
            getattr(X, "shape", (0, 0))[1] + 1, self.max_order, self.max_iter, method="PML-LRS"
        )
        start = time.perf_counter()
        X = check_features(X)
        S = check_label_matrix(Y, what="candidate labels", n_rows=X.shape[0]).astype(np.float64)
        with threadpool_limits(self.blas_threads, user_api="blas"):
            result = pml_lrs_alm(
                with_bias(X),
                S,
                float(self.lambda_w),
                float(self.lambda_y),
                float(self.lambda_e),
                max_iter=int(self.max_iter),
            )
        self.coef_ = result.W
        self.n_features_in_ = X.shape[1]
        self.diagnostics_ = {
            "n_iter": result.n_iter,
            "converged": result.converged,
            "residual": result.residuals[-1],
            "nnz_E": int(np.count_nonzero(result.E)),
            "fit_seconds": round(time.perf_counter() - start, 3),
        }
        # confidence per training candidate (pmlbench.plugin): the low-rank part Y of S = Y + E
        self.disambiguation_scores_ = np.asarray(result.Y, dtype=np.float64)
        return self

    def decision_function(self, X) -> np.ndarray:
        """Scores ``[X, 1] W`` (n x q)."""
        X = check_features(X)
        check_feature_count(X, self.n_features_in_, method="PML-LRS")
        with threadpool_limits(self.blas_threads, user_api="blas"):
            return np.asarray(with_bias(X) @ self.coef_)

    def predict(self, X) -> np.ndarray:
        """Labels whose score is at least ``threshold``."""
        return (self.decision_function(X) >= self.threshold).astype(np.uint8)
