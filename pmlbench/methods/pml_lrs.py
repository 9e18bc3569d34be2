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

``fit_grid`` fits a tuning grid on one training set with one eigendecomposition of ``XᵀX``
and runs the grid points' ALMs together while their iterates are identical (every
thresholding step giving the same matrix for all of them, as in the first half of the
iterations, where every threshold λ/μ exceeds what it thresholds); each result equals its
fit from scratch bit for bit (:func:`pml_lrs_alm_grid`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import numpy as np
import scipy.linalg
from scipy.linalg.blas import dsyrk
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
    REAL,
    check_gram_order,
)
from pmlbench.numerics.linalg import SymmetricSolver, gram, nuclear_norm, svt, with_bias

# Below this many flops of a full SVD (rows x columns x min(rows, columns)) the SVT is always
# the SVD of pmlbench.numerics.linalg.svt: it then takes at most a few milliseconds, and the
# small datasets (genbase, medical, enron, cal500, ..., all below 1e7) keep the SVD's numbers.
# Above it (bibtex, corel5k, corel16k001, delicious) the Gram route costs 0.25 to 0.45 of the SVD.
GRAM_SVT_MIN_WORK = 1e7
# The Gram route loses accuracy for singular values below sqrt(eps) * the largest; it is taken
# only while the threshold stays above this fraction of the largest singular value.
GRAM_SVT_MIN_RELATIVE_THRESHOLD = 1e-4


def svt_lrs(A: np.ndarray, threshold: float) -> np.ndarray:
    """Singular value soft-thresholding (as :func:`pmlbench.numerics.linalg.svt`), cheaper.

    Two shortcuts, neither of which changes the value beyond round-off:

    - ``‖A‖_F <= threshold`` bounds every singular value by the threshold, so the result is
      exactly zero and no SVD is needed (the first third of the ALM iterations, while μ is
      small);
    - for a larger matrix (more than ``GRAM_SVT_MIN_WORK``) the singular pairs come from the
      eigendecomposition of the smaller Gram matrix G = BᵀB of B = A (tall) or Aᵀ (wide),
      with c columns: ``SVT(B) = B V_k diag(1 − threshold/σ_k) V_kᵀ`` over the k pairs with
      σ > threshold, G = V diag(σ²) Vᵀ. One rank-c update and one c x c eigendecomposition
      cost less than LAPACK's SVD; the product is taken as ``(B V_k) D V_kᵀ`` (2·rows·c·k
      multiply-adds) while k is small and as ``B (V_k D V_kᵀ)`` (rows·c² + c²·k) once k
      exceeds about c/2, as it does in the second half of the iterations (k = c there on
      delicious). Eigenvalues carry an error of about eps·σ_max², which matters only for
      singular values near sqrt(eps)·σ_max; the route is taken only while the threshold
      exceeds ``GRAM_SVT_MIN_RELATIVE_THRESHOLD``·σ_max (the result then agrees with the
      SVD's to about 1e-10; tests/test_pml_lrs.py).
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
    shrink = 1.0 - threshold / sigma[keep]
    m, c = B.shape
    k = kept.shape[1]
    if k * (2 * m - c) > m * c:  # B (V_k D V_kᵀ) is the cheaper product
        Z = B @ ((kept * shrink) @ kept.T)
    else:
        Z = ((B @ kept) * shrink) @ kept.T
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
    ((_, result),) = pml_lrs_alm_grid(
        X,
        S,
        [(lambda_w, lambda_y, lambda_e)],
        max_iter=max_iter,
        mu=mu,
        rho=rho,
        mu_max=mu_max,
        tol=tol,
    )
    return result


@dataclass
class _Branch:
    """The ALM's state at the start of an iteration, shared by the grid points ``members``."""

    members: list[int]
    W: np.ndarray
    Y: np.ndarray
    E: np.ndarray
    L1: np.ndarray
    L2: np.ndarray
    L3: np.ndarray
    mu: float
    n_iter: int = 0
    converged: bool = False
    residuals: list[float] = field(default_factory=list)

    def split(self, members: list[int]) -> _Branch:
        """A copy of the state for ``members``."""
        return replace(
            self,
            members=members,
            W=self.W.copy(),
            Y=self.Y.copy(),
            E=self.E.copy(),
            L1=self.L1.copy(),
            L2=self.L2.copy(),
            L3=self.L3.copy(),
            converged=False,
            residuals=[*self.residuals],
        )


def pml_lrs_alm_grid(
    X,
    S: np.ndarray,
    lambdas: Sequence[tuple[float, float, float]],
    *,
    solver: SymmetricSolver | None = None,
    max_iter: int = 500,
    mu: float = 1e-4,
    rho: float = 1.1,
    mu_max: float = 1e10,
    tol: float = 1e-6,
) -> Iterator[tuple[int, LrsResult]]:
    """:func:`pml_lrs_alm` for each (λ_W, λ_Y, λ_E) in ``lambdas``, as (index, result).

    μ follows the same schedule for every point, so points run as one while each of the
    three thresholding steps (J, Z, E) gives the same matrix for all their λs; this holds
    early on, where every threshold λ/μ exceeds the norm of what it thresholds and the
    result is zero. At the first step where the matrices differ the points split into
    groups with equal matrices, and each group repeats the iteration from its start. Every
    result is therefore that of its own run, bit for bit. ``solver`` is the
    eigendecomposition of ``XᵀX`` when the caller has it.
    """
    if not lambdas:
        return
    n, q = S.shape
    p = X.shape[1]
    solver = SymmetricSolver(gram(X)) if solver is None else solver
    # n x q work arrays, reused: every update below is the same sequence of floating-point
    # operations as the formulas in the docstring, written into them (fresh n x q temporaries
    # cost page faults on every iteration for many labels). Y and E are computed into spares
    # and swapped in, so a group that splits at the E step still has its iteration's start.
    M, T, R1, R3, Y_next, E_next = (np.empty((n, q)) for _ in range(6))
    scale = max(float(np.linalg.norm(S)), 1.0)
    start = _Branch(
        members=list(range(len(lambdas))),
        W=np.zeros((p, q)),
        Y=np.zeros((n, q)),
        E=np.zeros((n, q)),
        L1=np.zeros((n, q)),
        L2=np.zeros((p, q)),
        L3=np.zeros((n, q)),
        mu=mu,
    )
    pending = [start]
    while pending:
        branch = pending.pop()
        while branch.n_iter < max_iter and not branch.converged:
            mu = branch.mu
            W, Y, E, L1, L2, L3 = branch.W, branch.Y, branch.E, branch.L1, branch.L2, branch.L3
            A = W + L2 / mu
            J, parts = _same_for_all(
                branch.members,
                [lambdas[i][0] for i in branch.members],
                partial(_svt_scaled, A, mu),
                zero_for=partial(_svt_is_zero_scaled, A, mu),
            )
            if J is None:
                pending.extend(branch.split(part) for part in parts[1:])
                branch.members = parts[0]
                continue
            np.add(Y, np.divide(L3, mu, out=M), out=M)
            Z, parts = _same_for_all(
                branch.members,
                [lambdas[i][1] for i in branch.members],
                partial(_svt_scaled, M, mu),
                zero_for=partial(_svt_is_zero_scaled, M, mu),
            )
            if Z is None:
                pending.extend(branch.split(part) for part in parts[1:])
                branch.members = parts[0]
                continue
            W = solver.solve(np.asarray(X.T @ Y) + mu * J - L2, mu)
            # Y ← (XW + Λ1 − Λ3 + μ(S − E) + μZ) / (1 + 2μ), left to right
            XW = np.asarray(X @ W)
            np.add(XW, L1, out=XW)
            np.subtract(XW, L3, out=XW)
            np.add(XW, np.multiply(mu, np.subtract(S, E, out=T), out=T), out=XW)
            np.add(XW, np.multiply(mu, Z, out=T), out=XW)
            np.divide(XW, 1 + 2 * mu, out=Y_next)
            # E ← soft(S − Y + Λ1/μ); a − clip(a, −τ, τ) is sign(a)·max(|a| − τ, 0) to the bit
            np.add(np.subtract(S, Y_next, out=M), np.divide(L1, mu, out=T), out=M)
            E_new, parts = _same_for_all(
                branch.members,
                [lambdas[i][2] for i in branch.members],
                partial(_soft_scaled, M, mu, T, None),
                zero_for=partial(_soft_is_zero_scaled, M, mu),
                first=partial(_soft_scaled, M, mu, T, E_next),
            )
            if E_new is None:
                pending.extend(branch.split(part) for part in parts[1:])
                branch.members = parts[0]
                continue
            # the iteration is the same for every member: commit it
            branch.W = W
            branch.Y, Y_next = Y_next, Y
            branch.E, E_next = E_new, E
            Y, E = branch.Y, branch.E
            np.subtract(np.subtract(S, Y, out=R1), E, out=R1)
            r2 = W - J
            np.subtract(Y, Z, out=R3)
            np.add(L1, np.multiply(mu, R1, out=T), out=L1)
            L2 += mu * r2
            np.add(L3, np.multiply(mu, R3, out=T), out=L3)
            branch.mu = min(rho * mu, mu_max)
            branch.n_iter += 1
            residual = max(float(np.linalg.norm(r)) for r in (R1, r2, R3)) / scale
            branch.residuals.append(float(residual))
            branch.converged = residual < tol
        result = LrsResult(
            W=branch.W,
            Y=branch.Y,
            E=branch.E,
            multipliers=(branch.L1, branch.L2, branch.L3),
            n_iter=branch.n_iter,
            converged=branch.converged,
            residuals=branch.residuals,
        )
        for index in branch.members:
            yield index, result


def _soft(M: np.ndarray, threshold: float, T: np.ndarray, *, out: np.ndarray | None) -> np.ndarray:
    """``M − clip(M, −τ, τ)`` (soft thresholding), with ``T`` as the clip's work array."""
    return np.subtract(M, np.clip(M, -threshold, threshold, out=T), out=out)


def _svt_is_zero(A: np.ndarray, threshold: float) -> bool:
    """Whether :func:`svt_lrs` returns zero by its Frobenius-norm shortcut."""
    return bool(np.linalg.norm(A) <= threshold * (1.0 - 1e-12))


# the thresholding steps at λ/μ for one λ of the grid (bound with functools.partial)
def _svt_scaled(A: np.ndarray, mu: float, value: float) -> np.ndarray:
    return svt_lrs(A, value / mu)


def _svt_is_zero_scaled(A: np.ndarray, mu: float, value: float) -> bool:
    return _svt_is_zero(A, value / mu)


def _soft_scaled(
    M: np.ndarray, mu: float, T: np.ndarray, out: np.ndarray | None, value: float
) -> np.ndarray:
    return _soft(M, value / mu, T, out=out)


def _soft_is_zero_scaled(M: np.ndarray, mu: float, value: float) -> bool:
    return float(np.abs(M).max(initial=0.0)) <= value / mu


def _same_for_all(
    members: list[int],
    values: list[float],
    compute: Callable[[float], np.ndarray],
    *,
    zero_for: Callable[[float], bool],
    first: Callable[[float], np.ndarray] | None = None,
) -> tuple[np.ndarray | None, list[list[int]]]:
    """One thresholding step for every member's value: (its matrix, [members]) when the
    matrix is the same for all, else (None, members grouped by equal matrices).

    With one distinct value, or when even the smallest threshold gives zero (``zero_for``,
    exact), the step is computed once; ``first`` computes it into a preallocated array.
    """
    first = compute if first is None else first
    distinct = sorted(set(values))
    if len(distinct) == 1 or zero_for(distinct[0]):
        return first(distinct[0]), [members]
    matrices: list[np.ndarray] = []
    group_of: dict[float, int] = {}
    for value in distinct:
        matrix = compute(value)
        for g, other in enumerate(matrices):
            if np.array_equal(matrix, other):
                group_of[value] = g
                break
        else:
            group_of[value] = len(matrices)
            matrices.append(matrix)
    if len(matrices) == 1:
        return first(distinct[0]), [members]
    parts: list[list[int]] = [[] for _ in matrices]
    for member, value in zip(members, values, strict=True):
        parts[group_of[value]].append(member)
    return None, parts


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

    # λ_E from the default down, where the selection's optima lie (0.1 to 0.5 on seven
    # datasets); sources in docs/methods/pml_lrs.md, "Tuning grid"
    default_tuning_grid = {"lambda_e": [0.0625, 0.125, 0.25, 0.5]}
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

    def _check_order(self, X) -> None:
        check_gram_order(
            getattr(X, "shape", (0, 0))[1] + 1, self.max_order, self.max_iter, method="PML-LRS"
        )

    def fit(self, X, Y) -> PMLLRS:
        """Solve the reconstructed objective on the candidate labels ``Y``."""
        self._validate_params()
        self._check_order(X)
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
        return self._finish(result, X.shape[1], start)

    def fit_grid(self, X, Y, points: Sequence[Mapping[str, Any]]) -> Iterator[tuple[int, PMLLRS]]:
        """Fit every grid point on (X, Y) (pmlbench.plugin's hook): one eigendecomposition
        of ``XᵀX``, and the points' ALMs run as one while their iterates are identical
        (:func:`pml_lrs_alm_grid`). Each fit equals its fit from scratch bit for bit."""
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
        start = time.perf_counter()
        X = check_features(X)
        S = check_label_matrix(Y, what="candidate labels", n_rows=X.shape[0]).astype(np.float64)
        Xb = with_bias(X)
        with threadpool_limits(threads, user_api="blas"):
            solver = SymmetricSolver(gram(Xb))
        groups: dict[int, list[int]] = {}
        for index, model in enumerate(models):
            groups.setdefault(int(model.max_iter), []).append(index)
        for max_iter, members in groups.items():
            lambdas = [
                (float(m.lambda_w), float(m.lambda_y), float(m.lambda_e))
                for m in (models[i] for i in members)
            ]
            runs = pml_lrs_alm_grid(Xb, S, lambdas, solver=solver, max_iter=max_iter)
            while True:
                with threadpool_limits(threads, user_api="blas"):
                    done = next(runs, None)
                if done is None:
                    break
                position, result = done
                index = members[position]
                yield index, models[index]._finish(result, X.shape[1], start)
                start = time.perf_counter()  # each point's seconds: the work since the last

    def _finish(self, result: LrsResult, n_features: int, start: float) -> PMLLRS:
        """Keep W and record the diagnostics and disambiguation scores."""
        self.coef_ = result.W
        self.n_features_in_ = n_features
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
