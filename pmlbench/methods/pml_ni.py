"""PML-NI: partial multi-label learning with noisy label identification (Xie & Huang,
AAAI 2020), trained on candidate labels.

The paper's objective, with ``Φ = [X, 1]`` and W, U, V of shape q x (d+1)::

    min ½‖S − ΦWᵀ‖²_F + (λ/2)‖W‖²_F + β‖U‖_* + γ‖V‖_1   s.t.  W = U + V

U is the low-rank multi-label classifier, V the sparse "feature-induced noise" identifier;
only U is used at test time. The solver is the inexact augmented Lagrangian method of the
authors' ``PMLNI_train.m``, where the penalty μ grows only when the change of U is small.
Features are min-max scaled to [-1, 1] per feature on the training data.

Labels come from a learned threshold (the "size predictor" of Rank-SVM, as in
``PMLNI_test.m``): each training instance gets the cut of its scores that best separates its
candidate labels, and a linear regression from the scores predicts the cut for new
instances. Unlike the released demo, the cut is fitted against the candidate labels, never
the ground truth, and training and test scores both include the bias column.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse as sp
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
    check_gram_order,
)
from pmlbench.numerics.linalg import SymmetricSolver, gram, nuclear_norm, soft_threshold, svt


@dataclass
class AlmResult:
    """Output of :func:`pml_ni_alm`."""

    W: np.ndarray
    U: np.ndarray
    V: np.ndarray
    n_iter: int
    converged: bool
    c1: float
    c2: float
    rank: int


def pml_ni_alm(
    Phi,
    S: np.ndarray,
    lam: float,
    beta: float,
    gamma: float,
    *,
    max_iter: int = 500,
    mu: float = 1e-4,
    rho: float = 1.1,
    mu_max: float = 1e10,
    tol1: float = 1e-7,
    tol2: float = 1e-5,
) -> AlmResult:
    """Inexact ALM for PML-NI's objective (as ``PMLNI_train.m``).

    ``Phi`` is n x p (features with a bias column), ``S`` the n x q targets (real values are
    accepted). Each iteration: the W step (a ridge solve), U = SVT_{β/μ}(W − V − Λ/μ),
    V = soft_{γ/μ}(W − U − Λ/μ); μ ← min(ρμ, μ_max) only when c2 holds; Λ += μ(U + V − W).
    Stops when c1 = ‖W − U − V‖/‖W‖ < tol1 and c2 = μ‖U − U_prev‖/‖W‖ < tol2.
    """
    q, p = S.shape[1], Phi.shape[1]
    solver = SymmetricSolver(gram(Phi))
    PhiT_S = np.asarray(Phi.T @ S)  # p x q
    U = np.zeros((q, p))
    V = np.zeros((q, p))
    Lam = np.zeros((q, p))
    W = np.zeros((q, p))
    c1 = c2 = np.inf
    converged = False
    n_iter = 0
    while n_iter < max_iter:
        n_iter += 1
        # W = (SᵀΦ + μU + μV + Λ)(ΦᵀΦ + (λ+μ)I)⁻¹, solved transposed (the Gram matrix is symmetric)
        W = solver.solve(PhiT_S + (mu * (U + V) + Lam).T, lam + mu).T
        U_prev = U
        U = svt(W - V - Lam / mu, beta / mu)
        V = soft_threshold(W - U - Lam / mu, gamma / mu)
        norm_w = max(float(np.linalg.norm(W)), float(np.finfo(float).tiny))
        c2 = mu * float(np.linalg.norm(U - U_prev)) / norm_w
        c1 = float(np.linalg.norm(W - U - V)) / norm_w
        if c2 < tol2:
            mu = min(rho * mu, mu_max)
        Lam = Lam + mu * (U + V - W)
        if c1 < tol1 and c2 < tol2:
            converged = True
            break
    return AlmResult(
        W=W,
        U=U,
        V=V,
        n_iter=n_iter,
        converged=converged,
        c1=float(c1),
        c2=float(c2),
        rank=int(np.linalg.matrix_rank(U)) if U.any() else 0,
    )


def pml_ni_objective(
    Phi,
    S: np.ndarray,
    W: np.ndarray,
    U: np.ndarray,
    V: np.ndarray,
    lam: float,
    beta: float,
    gamma: float,
) -> float:
    """Value of the objective (the constraint W = U + V is not checked here)."""
    residual = S - np.asarray(Phi @ W.T)
    return float(
        0.5 * np.sum(residual**2)
        + 0.5 * lam * np.sum(W**2)
        + beta * nuclear_norm(U)
        + gamma * np.abs(V).sum()
    )


def best_cuts(scores: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Per row, the cut that best separates the target labels (Rank-SVM's size predictor).

    Candidates are the midpoints of the sorted scores plus ``min − 0.1`` and ``max + 0.1``;
    labels with score ``>=`` the cut are predicted; the cut with the fewest false positives +
    false negatives w.r.t. ``targets`` wins, ties going to the lowest cut (MATLAB's ``min``).
    """
    n, q = scores.shape
    order = np.argsort(scores, axis=1, kind="stable")
    ordered = np.take_along_axis(scores, order, axis=1)
    candidates = np.hstack(
        [ordered[:, :1] - 0.1, (ordered[:, :-1] + ordered[:, 1:]) / 2, ordered[:, -1:] + 0.1]
    )
    cuts = np.empty(n)
    for i in range(n):
        positive = targets[i, order[i]].astype(np.int64)
        # below[k] = how many of the sorted scores lie strictly below candidate k
        below = np.searchsorted(ordered[i], candidates[i], side="left")
        missed = np.concatenate([[0], np.cumsum(positive)])  # positives among the lowest k
        negatives_low = np.arange(q + 1) - missed
        errors = missed[below] + (q - positive.sum()) - negatives_low[below]
        cuts[i] = candidates[i, int(np.argmin(errors))]
    return cuts


def minmax_fit(X) -> tuple[np.ndarray, np.ndarray]:
    """Per-feature minimum and range on the training data (MATLAB ``mapminmax``)."""
    if sp.issparse(X):
        low = X.min(axis=0).toarray().ravel()
        high = X.max(axis=0).toarray().ravel()
    else:
        low, high = X.min(axis=0), X.max(axis=0)
    return low, high - low


def minmax_apply(X, low: np.ndarray, span: np.ndarray) -> np.ndarray:
    """Map features to [-1, 1] with the training range; a constant feature maps to 0."""
    X = X.toarray() if sp.issparse(X) else np.array(X, dtype=np.float64)
    constant = span <= 0
    scaled = 2 * (X - low) / np.where(constant, 1.0, span) - 1
    scaled[:, constant] = 0.0  # mapminmax gives 0/0 = NaN here and the authors set NaN to 0
    return scaled


class PMLNI(ValidatedParameters, BaseEstimator):
    """PML-NI (Xie & Huang, AAAI 2020): low-rank classifier U plus sparse noise term V.

    Args:
        lam: λ >= 0, ridge weight on W = U + V (demo: 10).
        beta: β >= 0, trace-norm weight on U, the clean classifier (demo: 0.5).
        gamma: γ >= 0, ℓ1 weight on V, the feature-induced noise (demo: 0.5).
        max_iter: ALM iterations at most, an integer >= 1 (demo: 500).
        max_order: refuse (:class:`~pmlbench.errors.NotApplicable`, before any work) more
            than this many features + 1, the order of the Gram matrix each W step solves
            against; an integer >= 1 or None (no cap). See ``MAX_GRAM_ORDER``.
        blas_threads: BLAS threads during fit and predict, an integer >= 1 (None: no limit).
            The solver's matrices are small, where multi-threaded BLAS on a busy machine is
            many times slower.
    """

    default_bipartition = {"rule": "method"}
    parameter_constraints = {
        "lam": NON_NEGATIVE,
        "beta": NON_NEGATIVE,
        "gamma": NON_NEGATIVE,
        "max_iter": POSITIVE_INT,
        "max_order": CAP,
        "blas_threads": BLAS_THREADS,
    }

    def __init__(
        self,
        lam: float = 10.0,
        beta: float = 0.5,
        gamma: float = 0.5,
        max_iter: int = 500,
        max_order: int | None = MAX_GRAM_ORDER,
        blas_threads: int | None = 1,
    ):
        self.lam = lam
        self.beta = beta
        self.gamma = gamma
        self.max_iter = max_iter
        self.max_order = max_order
        self.blas_threads = blas_threads

    def _design(self, X) -> np.ndarray:
        X = check_features(X)
        check_feature_count(X, self.scale_low_.shape[0], method="PML-NI")
        return np.hstack(
            [minmax_apply(X, self.scale_low_, self.scale_span_), np.ones((X.shape[0], 1))]
        )

    def fit(self, X, Y) -> PMLNI:
        """Solve the objective on the candidate labels, then fit the size predictor on them."""
        self._validate_params()
        check_gram_order(
            getattr(X, "shape", (0, 0))[1] + 1, self.max_order, self.max_iter, method="PML-NI"
        )
        with threadpool_limits(self.blas_threads, user_api="blas"):
            return self._fit(X, Y)

    def _fit(self, X, Y) -> PMLNI:
        start = time.perf_counter()
        X = check_features(X)
        S = check_label_matrix(Y, what="candidate labels", n_rows=X.shape[0]).astype(np.float64)
        self.scale_low_, self.scale_span_ = minmax_fit(X)
        Phi = self._design(X)
        result = pml_ni_alm(
            Phi,
            S,
            float(self.lam),
            float(self.beta),
            float(self.gamma),
            max_iter=int(self.max_iter),
        )
        self.U_, self.V_ = result.U, result.V
        scores = Phi @ self.U_.T
        cuts = best_cuts(scores, S)
        design = np.hstack([scores, np.ones((scores.shape[0], 1))])
        self.size_weights_ = scipy.linalg.lstsq(design, cuts)[0]
        self.diagnostics_ = {
            "n_iter": result.n_iter,
            "converged": result.converged,
            "c1": result.c1,
            "c2": result.c2,
            "rank_U": result.rank,
            "nnz_V": int(np.count_nonzero(result.V)),
            "fit_seconds": round(time.perf_counter() - start, 3),
        }
        # confidence per training candidate (pmlbench.plugin): Phi U^T, the fit of the
        # candidates with the identified noise Phi V^T taken out (W = U + V)
        self.disambiguation_scores_ = scores
        return self

    def decision_function(self, X) -> np.ndarray:
        """Scores ``Φ Uᵀ`` (n x q), bias included."""
        with threadpool_limits(self.blas_threads, user_api="blas"):
            return self._design(X) @ self.U_.T

    def threshold(self, X) -> np.ndarray:
        """The size predictor's cut for each instance, ``[ΦUᵀ, 1] · w``."""
        scores = self.decision_function(X)
        return np.hstack([scores, np.ones((scores.shape[0], 1))]) @ self.size_weights_

    def predict(self, X) -> np.ndarray:
        """Labels whose score reaches the instance's learned threshold."""
        scores = self.decision_function(X)
        cut = np.hstack([scores, np.ones((scores.shape[0], 1))]) @ self.size_weights_
        return (scores >= cut[:, None]).astype(np.uint8)
