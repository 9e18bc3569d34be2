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

``fit_grid`` fits a tuning grid on one training set: the scaling, the design matrix, ``ΦᵀS``
and the eigendecomposition of ``ΦᵀΦ`` once; along decreasing γ, a point whose iterates
equal the previous point's (its V stays zero at every iteration) gets that fit, bit for
bit, and any other point is warm-started from the previous point's solution (see
:data:`WARM_BACKOFF`), agreeing with a fit from scratch within the ALM's stopping tolerance
(docs/methods/pml_ni.md, "Tuning grid").
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from sklearn.base import BaseEstimator, clone
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

# A warm start begins at the previous grid point's final penalty divided by ρ^WARM_BACKOFF
# (ten fewer increases of μ): at the previous μ itself the ALM moves slowly, and from μ₀ it
# would retrace the whole path. Measured on eight datasets (docs/methods/pml_ni.md).
WARM_BACKOFF = 10
MU0, RHO = 1e-4, 1.1  # the authors' initial penalty and its growth factor
# Singular values of the size predictor's design [ΦUᵀ, 1] below this fraction of the largest
# count as zero. The design is rank-deficient whenever U is (more labels than features + 1,
# as cal500 and delicious; small γ); its zero singular values then come out at 1e-18 to 1e-15
# of the largest, and LAPACK's default cutoff (machine epsilon, 2.2e-16) kept some of them
# depending on the BLAS kernel, giving weights of 1e11 to 1e12 and predictions that moved
# with the kernel. Where no singular value lies between the two cutoffs (every full-rank
# design measured) the weights are the same, bit for bit.
SIZE_PREDICTOR_CUTOFF = 1e-10


@dataclass
class AlmResult:
    """Output of :func:`pml_ni_alm`; ``Lam`` and ``mu`` are the final multiplier and penalty
    (a warm start's state), ``coincident`` says for each shadow γ of :func:`solve_alm`
    whether its own ALM would have taken exactly these iterates."""

    W: np.ndarray
    U: np.ndarray
    V: np.ndarray
    n_iter: int
    converged: bool
    c1: float
    c2: float
    rank: int
    Lam: np.ndarray | None = None
    mu: float = float("nan")
    coincident: tuple[bool, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class AlmSystem:
    """The parameter-independent part of the ALM: ``ΦᵀΦ``'s eigendecomposition and ``ΦᵀS``."""

    solver: SymmetricSolver
    PhiT_S: np.ndarray  # p x q

    @classmethod
    def build(cls, Phi, S: np.ndarray) -> AlmSystem:
        """From the design matrix ``Phi`` (n x p) and the targets ``S`` (n x q)."""
        return cls(SymmetricSolver(gram(Phi)), np.asarray(Phi.T @ S))


def pml_ni_alm(
    Phi,
    S: np.ndarray,
    lam: float,
    beta: float,
    gamma: float,
    *,
    max_iter: int = 500,
    mu: float = MU0,
    rho: float = RHO,
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
    return solve_alm(
        AlmSystem.build(Phi, S),
        lam,
        beta,
        gamma,
        max_iter=max_iter,
        mu=mu,
        rho=rho,
        mu_max=mu_max,
        tol1=tol1,
        tol2=tol2,
    )


def solve_alm(
    system: AlmSystem,
    lam: float,
    beta: float,
    gamma: float,
    *,
    max_iter: int = 500,
    mu: float = MU0,
    rho: float = RHO,
    mu_max: float = 1e10,
    tol1: float = 1e-7,
    tol2: float = 1e-5,
    start: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    shadows: Sequence[float] = (),
) -> AlmResult:
    """:func:`pml_ni_alm` on a prepared system, optionally warm-started, with shadow γs.

    ``start`` is (U, V, Λ) to begin from instead of zeros (then ``mu`` is the starting
    penalty). Each γ in ``shadows`` is checked at every iteration: its V step would give the
    same V as ``gamma``'s, so its whole ALM would be this one, exactly when that holds at
    every iteration (``AlmResult.coincident``); a shadow that differs once is dropped.
    """
    solver, PhiT_S = system.solver, system.PhiT_S
    q, p = PhiT_S.shape[1], PhiT_S.shape[0]
    if start is None:
        U, V, Lam = np.zeros((q, p)), np.zeros((q, p)), np.zeros((q, p))
    else:
        U, V, Lam = start
    W = np.zeros((q, p))
    same = [True] * len(shadows)
    c1 = c2 = np.inf
    converged = False
    n_iter = 0
    while n_iter < max_iter:
        n_iter += 1
        # W = (SᵀΦ + μU + μV + Λ)(ΦᵀΦ + (λ+μ)I)⁻¹, solved transposed (the Gram matrix is symmetric)
        W = solver.solve(PhiT_S + (mu * (U + V) + Lam).T, lam + mu).T
        U_prev = U
        U = svt(W - V - Lam / mu, beta / mu)
        A = W - U - Lam / mu
        V = soft_threshold(A, gamma / mu)
        for k, shadow in enumerate(shadows):
            if same[k]:
                same[k] = np.array_equal(soft_threshold(A, shadow / mu), V)
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
        Lam=Lam,
        mu=float(mu),
        coincident=tuple(same),
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


@dataclass(frozen=True)
class _Prepared:
    """What every grid point shares: the training range, Φ, S and the ALM's system."""

    scale_low: np.ndarray
    scale_span: np.ndarray
    Phi: np.ndarray
    S: np.ndarray
    system: AlmSystem


def design_matrix(X, low: np.ndarray, span: np.ndarray) -> np.ndarray:
    """``Φ = [scaled X, 1]`` with the training range (``low``, ``span``)."""
    return np.hstack([minmax_apply(X, low, span), np.ones((X.shape[0], 1))])


def _prepare(X, Y) -> _Prepared:
    """The training range, design matrix, targets and ALM system of (X, Y)."""
    X = check_features(X)
    S = check_label_matrix(Y, what="candidate labels", n_rows=X.shape[0]).astype(np.float64)
    low, span = minmax_fit(X)
    Phi = design_matrix(X, low, span)
    return _Prepared(low, span, Phi, S, AlmSystem.build(Phi, S))


def _fit_path(prepared: _Prepared, path: list[PMLNI], threads: int | None) -> Iterator[PMLNI]:
    """Fit estimators that differ only in γ, given in order of decreasing γ (see
    :meth:`PMLNI.fit_grid`), yielding each as soon as it is fitted."""
    first = path[0]
    lam, beta, max_iter = float(first.lam), float(first.beta), int(first.max_iter)
    shadows = [float(model.gamma) for model in path[1:]]
    previous: AlmResult | None = None
    anchor: AlmResult | None = None
    coincident: tuple[bool, ...] = ()
    for position, model in enumerate(path):
        with threadpool_limits(threads, user_api="blas"):
            start = time.perf_counter()
            if position == 0:
                result = solve_alm(
                    prepared.system,
                    lam,
                    beta,
                    float(model.gamma),
                    max_iter=max_iter,
                    shadows=shadows,
                )
                coincident, anchor, warm = result.coincident, result, False
            elif coincident[position - 1]:
                assert anchor is not None  # set at position 0
                result, warm = anchor, False
            else:
                assert previous is not None and previous.Lam is not None
                result = solve_alm(
                    prepared.system,
                    lam,
                    beta,
                    float(model.gamma),
                    max_iter=max_iter,
                    mu=max(MU0, previous.mu / RHO**WARM_BACKOFF),
                    start=(previous.U, previous.V, previous.Lam),
                )
                warm = True
            model._finish(prepared, result, start, warm_start=warm)
        previous = result
        yield model


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

    # γ from the demo's 0.5 (= β: V = 0) down into the region where V is active on every
    # bundled dataset; sources and the analysis in docs/methods/pml_ni.md, "Tuning grid"
    default_tuning_grid = {"gamma": [0.5, 0.2, 0.1, 0.05]}
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
        return design_matrix(X, self.scale_low_, self.scale_span_)

    def _check_order(self, X) -> None:
        check_gram_order(
            getattr(X, "shape", (0, 0))[1] + 1, self.max_order, self.max_iter, method="PML-NI"
        )

    def fit(self, X, Y) -> PMLNI:
        """Solve the objective on the candidate labels, then fit the size predictor on them."""
        self._validate_params()
        self._check_order(X)
        with threadpool_limits(self.blas_threads, user_api="blas"):
            start = time.perf_counter()
            prepared = _prepare(X, Y)
            result = solve_alm(
                prepared.system,
                float(self.lam),
                float(self.beta),
                float(self.gamma),
                max_iter=int(self.max_iter),
            )
            return self._finish(prepared, result, start)

    def fit_grid(self, X, Y, points: Sequence[Mapping[str, Any]]) -> Iterator[tuple[int, PMLNI]]:
        """Fit every grid point on (X, Y) (pmlbench.plugin's hook), sharing the scaling,
        ``ΦᵀS`` and the eigendecomposition of ``ΦᵀΦ``.

        Points that differ only in γ form a path, fitted in order of decreasing γ: the
        first from scratch, with the others as shadows (:func:`solve_alm`); a shadow whose V
        step agreed at every iteration gets that fit, identical to its own fit from
        scratch. Any other point starts from the previous point's (U, V, Λ) at penalty
        μ/ρ^:data:`WARM_BACKOFF`; it meets the same stopping rule (c1 < 1e-7, c2 < 1e-5)
        and agrees with its fit from scratch within it, not bit for bit (``warm_start``
        in its ``diagnostics_``).
        """
        models = [clone(self).set_params(**dict(point)) for point in points]
        for model in models:
            model._validate_params()
            model._check_order(X)
        if not models:
            return
        if len({model.blas_threads for model in models}) > 1:
            # BLAS threads may change the rounding of the shared work: fit each alone
            for index, model in enumerate(models):
                yield index, model.fit(X, Y)
            return
        threads = models[0].blas_threads
        with threadpool_limits(threads, user_api="blas"):
            prepared = _prepare(X, Y)
        paths: dict[tuple, list[int]] = {}
        for index, model in enumerate(models):
            key = (float(model.lam), float(model.beta), int(model.max_iter))
            paths.setdefault(key, []).append(index)
        for members in paths.values():
            members.sort(key=lambda i: -float(models[i].gamma))
            path = [models[i] for i in members]
            for position, fitted in enumerate(_fit_path(prepared, path, threads)):
                yield members[position], fitted

    def _finish(
        self,
        prepared: _Prepared,
        result: AlmResult,
        start: float,
        *,
        warm_start: bool | None = None,
    ) -> PMLNI:
        """Keep U and V, fit the size predictor on the candidates, record diagnostics."""
        Phi, S = prepared.Phi, prepared.S
        self.scale_low_, self.scale_span_ = prepared.scale_low, prepared.scale_span
        self.U_, self.V_ = result.U, result.V
        scores = Phi @ self.U_.T
        cuts = best_cuts(scores, S)
        design = np.hstack([scores, np.ones((scores.shape[0], 1))])
        self.size_weights_ = scipy.linalg.lstsq(design, cuts, cond=SIZE_PREDICTOR_CUTOFF)[0]
        self.diagnostics_ = {
            "n_iter": result.n_iter,
            "converged": result.converged,
            "c1": result.c1,
            "c2": result.c2,
            "rank_U": result.rank,
            "nnz_V": int(np.count_nonzero(result.V)),
            "fit_seconds": round(time.perf_counter() - start, 3),
        }
        if warm_start is not None:
            self.diagnostics_["warm_start"] = warm_start
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
