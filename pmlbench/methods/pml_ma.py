"""PML-MA: feature-label modal alignment (Chen, Lv, Huang, Fang, Wen, Xu & Li, 2026).

"Feature-Label Modal Alignment for Robust Partial Multi-Label Learning" (arXiv 2604.09064).
Faithful to the authors' MATLAB code (github CcAmbiguous/PML-MA: ``PML_MA.m``,
``main_integration.m``, ``functions/Kernel_mapping.m``, ``functions/knn_S.m``). Only the
paper's abstract could be read while this was written, so no equation numbers are cited; the
model below is the loss the authors' code evaluates after each iteration.

With the training features min-max scaled to [-1, 1] per feature (``mapminmax``), kernel
features ``X`` (n x d: RBF on random anchor rows, centred, plus a bias column), the
candidate labels ``Y`` (n x c) and a 5-nearest-neighbour graph (``knn_S.m``: ``S`` its
symmetrised weights, ``Ds`` the diagonal of its row sums)::

    min ‖XP₁ − RP₂‖² + ‖Y − RQᵀ‖² + λ‖R‖ + α tr(P₁ᵀXᵀDsXP₁ + P₂ᵀRᵀDsRP₂ − 2P₁ᵀXᵀSRP₂)
        + β‖XᵀD − VRᵀ‖² + γ‖P₂P₁ᵀ‖²
    s.t. P₂ᵀP₂ = I, Q orthogonal

``R`` (n x c) are the pseudo-labels (zero off the candidates), ``P₁`` (d x m) and ``P₂``
(c x m), m = min(d, c), project features and pseudo-labels into a common subspace (global
alignment) whose neighbourhoods follow the graph (local alignment), ``V = XᵀR ⊘ colsum(R)``
are the class prototypes (means of the kernel features weighted by the pseudo-labels),
``D = diag(R1)`` each instance's pseudo-label mass and ``Q`` (c x c) the orthogonal map between
pseudo-labels and candidates. The R step takes a proximal gradient step on the trace norm
``λ‖R‖_*``; the loss the code evaluates has ``λ Σⱼ‖rⱼ‖`` there (``trace(sqrt(R'*R))``, the
element-wise square root). Each iteration (at most 50):

1. P₂: the Sylvester equation ``(RᵀR + αRᵀDsR) P₂ + P₂ (γP₁ᵀP₁) = Rᵀ(XP₁ − αSXP₁)``, then
   its polar factor (``UVᵀ`` of its SVD);
2. P₁: ``(XᵀX + αXᵀDsX) P₁ + P₁ (γP₂ᵀP₂) = Xᵀ(RP₂ + αSRP₂)``;
3. V from R; Q the polar factor of ``RᵀY``;
4. R: ``Z = R − ∇/L`` with ``∇ = 2(RP₂P₂ᵀ − XP₁P₂ᵀ + RQᵀQ − 2YQ + αDsRP₂P₂ᵀ − αSXP₁P₂ᵀ
   + βRVᵀV − βDXV)`` and ``L = 2‖P₂P₂ᵀ + QᵀQ + βVᵀV‖_F + α max(Ds)``; ``R̂`` the singular
   value soft threshold of Z at λ/L; then ``R ← R ⊙ R̂ ⊘ (R + eps) − max(R − Y, 0) ⊙ Y ⊘
   (R + eps)`` (zero stays zero: R keeps to the candidates); D from R.

From the third iteration on it stops when the loss of the iteration before last decreased by
less than 1e-4 of its value (the code compares ``loss(ii-1)`` with ``loss(ii-2)`` after
computing ``loss(ii)``: one iteration late). Scores are ``X_test P₁P₂ᵀ``; a label is predicted
where its score is at least 0.5. ``updates="objective"`` uses the loss's own gradient in the
R step (``−2YQ`` inside the bracket is ``−YQ``: the code weights the candidates' pull twice),
a step ``L`` with ``2α max(Ds)`` (a bound of the local term's curvature) and the trace norm in
the loss the stopping test reads.

**Rules where the code leaves the outcome to rounding.** The Sylvester solver
(``mysylvester``) zeroes the entries whose eigenvalue sum ``λᵢ(A) + λⱼ(B)`` is at most 1e-5 in
magnitude, as the code does (``diagnostics_`` records how close any came to that cut). A
polar factor of a rank-deficient matrix (a label with no candidate makes ``RᵀY`` and P₂
singular) is not unique, and LAPACK's choice of singular vectors would decide it: pmlbench
treats singular values at most ``rtol`` times the largest as zero and keeps the partial
isometry of the others. A label without candidates, whose prototype the code computes as
0/0 (NaN, which then spreads to every number), gets a zero prototype. Neighbours come from
pmlbench's exact kNN search (ties to the lower index, as MATLAB's stable ``sort``).

**Linear algebra.** The same iterations without the work that does not change between
them: ``XᵀX + αXᵀDsX`` is eigendecomposed once (the code does it in every iteration) and P₁
is kept in its eigenbasis (:class:`FeatureSide`); P₂ has orthonormal columns after its polar
factor, so the P₁ equation's right side γP₂ᵀP₂ is γI exactly (formed only when a singular
value was dropped); R vanishes off the candidates, so where they are sparse its products go
through their pattern (:class:`CandidatePattern`); ``XᵀD − VRᵀ`` (d x n) is never formed:
its squared norm is expanded into n- and c-sized terms.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from threadpoolctl import threadpool_limits

from pmlbench.core.checks import as_dense, check_feature_count, check_features, check_label_matrix
from pmlbench.core.parameters import Interval, Options, ValidatedParameters
from pmlbench.errors import NotApplicable, PmlbenchError
from pmlbench.methods._constraints import (
    BLAS_THREADS,
    BUDGET_NOTE,
    CAP,
    NON_NEGATIVE,
    POSITIVE_INT,
    SEED,
    check_neighbours,
)
from pmlbench.numerics import shared_work
from pmlbench.numerics.kernel_features import KernelMap, minmax_apply, minmax_fit
from pmlbench.numerics.knn_graph import heat_kernel_neighbours
from pmlbench.numerics.linalg import thin_svd
from pmlbench.numerics.matlab import MATLAB_EPS
from pmlbench.numerics.shared_work import SharedWorkFitting

UPDATES = ("code", "objective")
SYLVESTER_CUT = 1e-5  # mysylvester: |λᵢ(A) + λⱼ(B)| at or below this gives a 0 entry
# candidates at most this dense: R's products go through their pattern (CandidatePattern)
SPARSE_DENSITY = 0.1
# The caps, set for the suite's budget (docs/methods/pml_ma.md, "Cost"). Largest n·d·c
# (training instances x kernel features x labels) fitted by default: each iteration
# multiplies n x d by d x c matrices four times; it declines delicious (2.1e10).
MAX_WORK = 5_000_000_000
# Largest n·c² fitted by default: each iteration takes the SVD of an n x c matrix and two
# eigendecompositions and two polar factors of c x c ones; it declines corel5k (3.5e8, 374
# labels: 83 times ML-kNN's time tuned) and delicious (7.8e9), and admits corel16k001 (1.6e8:
# 35 times, the largest admitted).
MAX_LABEL_WORK = 200_000_000


# ------------------------------------------------------------------ preprocessing


def anchor_count(n: int) -> int:
    """``Kernel_mapping.m``: all n training rows below 1000, then n/2, n/3, n/4 (rounded up)
    from 1000, 5000 and 9000."""
    if n < 1000:
        return n
    if n < 5000:
        return -(-n // 2)
    if n < 9000:
        return -(-n // 3)
    return -(-n // 4)


@dataclass
class NeighbourGraph:
    """``knn_S.m``: ``S = (R + Rᵀ)/2`` and the row sums ``ds`` of R (``Ds = diag(ds)``), R the
    identity plus each row's k nearest neighbours with heat-kernel weights."""

    S: sp.csr_matrix
    ds: np.ndarray


def neighbour_graph(X: np.ndarray, k: int) -> NeighbourGraph:
    """``knn_S(X, k)``: the heat-kernel weights of each row's k nearest neighbours
    (:func:`pmlbench.numerics.knn_graph.heat_kernel_neighbours`) on top of an identity (a self
    link keeps its weight exp(0) = 1, which the identity holds)."""
    R = heat_kernel_neighbours(X, k, method="pml_ma") + sp.identity(X.shape[0], format="csr")
    ds = np.asarray(R.sum(axis=1)).ravel()
    return NeighbourGraph(S=sp.csr_matrix(0.5 * (R + R.T)), ds=ds)


# ------------------------------------------------------------------ the iterations


@dataclass
class SymmetricEigen:
    """The eigendecomposition of the symmetric part ``(A + Aᵀ)/2`` (``mysylvester``'s first
    step)."""

    values: np.ndarray
    vectors: np.ndarray

    @classmethod
    def of(cls, A: np.ndarray) -> SymmetricEigen:
        values, vectors = scipy.linalg.eigh(0.5 * (A + A.T), check_finite=False)
        return cls(values, vectors)


@dataclass
class FeatureSide:
    """The P₁ equation's left side ``XᵀX + αXᵀDsX``, fixed over the iterations, as its
    eigendecomposition ``Q_A diag(a) Q_Aᵀ``, with ``G = X Q_A`` and ``H = (I + αS) G``. P₁ is
    kept in the eigenbasis (``P₁ = Q_A P̃₁``), so the right side ``Q_AᵀXᵀ(I + αS)RP₂`` is
    ``HᵀRP₂`` and ``XP₁ = G P̃₁``, without the two d x d products with Q_A per iteration (and,
    where R is sparse, ``(RᵀH)ᵀP₂`` without an n x d product)."""

    eigen: SymmetricEigen
    G: np.ndarray
    H: np.ndarray


def feature_side(X: np.ndarray, graph: NeighbourGraph, alpha: float) -> FeatureSide:
    """:class:`FeatureSide` of ``XᵀX + αXᵀDsX`` (``X'*(X + alpha*Ds*X)``)."""
    eigen = SymmetricEigen.of(X.T @ (X + alpha * (graph.ds[:, None] * X)))
    G = X @ eigen.vectors
    return FeatureSide(eigen, G, G + alpha * np.asarray(graph.S @ G))


@dataclass
class SylvesterStats:
    """What the Sylvester solves of a run met: entries cut, and how close any eigenvalue sum
    came to the cut (relative to it)."""

    cut: int = 0
    margin: float = float("inf")

    def add(self, sums: np.ndarray) -> np.ndarray:
        magnitude = np.abs(sums)
        keep = magnitude > SYLVESTER_CUT
        self.cut += int(keep.size - keep.sum())
        nearest = float(np.abs(magnitude - SYLVESTER_CUT).min(initial=np.inf)) / SYLVESTER_CUT
        self.margin = min(self.margin, nearest)
        return keep


def sylvester_core(
    left_values: np.ndarray, transformed: np.ndarray, B: np.ndarray | float, stats: SylvesterStats
) -> np.ndarray:
    """The solution of ``AX + XB = C`` in A's eigenbasis, ``Q_AᵀX``, from ``Q_AᵀC`` (given)
    and the eigendecomposition of B's symmetric part; entries whose eigenvalue sum is at
    most :data:`SYLVESTER_CUT` in magnitude are 0 (``mysylvester`` divides by ``inf``).
    A number B stands for ``B·I``, whose eigenvectors are the identity."""
    if not isinstance(B, np.ndarray):
        sums = left_values[:, None] + np.full(transformed.shape[1], float(B))[None, :]
        keep = stats.add(sums)
        return np.divide(transformed, sums, out=np.zeros_like(transformed), where=keep)
    right = SymmetricEigen.of(B)
    sums = left_values[:, None] + right.values[None, :]
    keep = stats.add(sums)
    rotated = transformed @ right.vectors
    solution = np.divide(rotated, sums, out=np.zeros_like(rotated), where=keep)
    return solution @ right.vectors.T


def solve_sylvester(
    left: SymmetricEigen, B: np.ndarray, C: np.ndarray, stats: SylvesterStats
) -> np.ndarray:
    """``mysylvester(A, B, C)``: X with ``AX + XB = C`` from the eigendecompositions of the
    symmetric parts of A (given) and B (:func:`sylvester_core`)."""
    return left.vectors @ sylvester_core(left.values, left.vectors.T @ C, B, stats)


def polar_factor(M: np.ndarray, rtol: float) -> tuple[np.ndarray, bool]:
    """``U Vᵀ`` of the thin SVD of M, the orthogonal factor nearest to M, and whether a
    singular value was dropped: those at most ``rtol`` times the largest count as zero (their
    singular vectors are LAPACK's arbitrary choice), leaving the partial isometry of the rest.
    """
    U, s, Vt = thin_svd(M)
    keep = s > rtol * s.max(initial=0.0)
    if keep.all():
        return U @ Vt, False
    return U[:, keep] @ Vt[keep], True


def prototypes(XtR: np.ndarray, R: np.ndarray) -> np.ndarray:
    """``V = XᵀR ⊘ colsum(R)``; a column of R that sums to 0 (a label without candidates)
    gives a zero prototype, where the code divides 0 by 0."""
    mass = R.sum(axis=0)
    return np.divide(XtR, mass[None, :], out=np.zeros_like(XtR), where=mass[None, :] != 0)


class CandidatePattern:
    """R is zero off the candidates from start to end (R = Y, and the update keeps a zero
    entry zero), so where the candidates are sparse (density at most
    :data:`SPARSE_DENSITY`) R's products go through their pattern as a CSR matrix; dense
    candidates stay dense. The two give the same numbers up to rounding."""

    def __init__(self, Y: np.ndarray):
        self.Y = Y
        self.sparse = bool(np.count_nonzero(Y) <= SPARSE_DENSITY * Y.size)
        self.Ys = sp.csr_matrix(Y)
        self.rows = np.repeat(np.arange(Y.shape[0]), np.diff(self.Ys.indptr))

    def operand(self, R: np.ndarray) -> np.ndarray | sp.csr_matrix:
        """R (which vanishes off the candidates) as the products take it."""
        if not self.sparse:
            return R
        Ys = self.Ys
        values = R[self.rows, Ys.indices]
        return sp.csr_matrix((values, Ys.indices, Ys.indptr), shape=R.shape)

    def candidates(self) -> np.ndarray | sp.csr_matrix:
        return self.Ys if self.sparse else self.Y


def _dense(A) -> np.ndarray:
    return A.toarray() if sp.issparse(A) else np.asarray(A)


def _gram(Rm, weights: np.ndarray | None = None) -> np.ndarray:
    """``RᵀR`` (``Rᵀ diag(weights) R`` with weights) of a dense or CSR R, dense."""
    if weights is None:
        right = Rm
    elif sp.issparse(Rm):
        right = sp.csr_matrix(Rm.multiply(weights[:, None]))
    else:
        right = weights[:, None] * Rm
    return _dense(Rm.T @ right)


@dataclass
class MASolution:
    """What :func:`ma_solve` returns: the model, the loss after each iteration and what the
    run met on the way."""

    W: np.ndarray
    P1: np.ndarray
    P2: np.ndarray
    R: np.ndarray
    losses: list[float] = field(default_factory=list)
    changes: list[float] = field(default_factory=list)  # relative decreases the test read
    stages: list[dict[str, np.ndarray]] = field(default_factory=list)
    sylvester: SylvesterStats = field(default_factory=SylvesterStats)
    rank_deficient_polar: int = 0  # polar factors with a dropped singular value
    rank: int = 0  # kept singular values of the last R step
    lipschitz: float = 0.0


@dataclass
class _Iterate:
    """The state after an iteration that the loss reads (with the iteration's V and XV)."""

    R: np.ndarray
    P2: np.ndarray
    Q: np.ndarray
    XP1: np.ndarray
    P1tP1: np.ndarray
    VtV: np.ndarray
    XV: np.ndarray
    P2tP2: np.ndarray | None = None  # None: the identity (P2 has orthonormal columns)


def ma_loss(
    X_sq: np.ndarray,
    pattern: CandidatePattern,
    graph: NeighbourGraph,
    state: _Iterate,
    *,
    lam: float,
    alpha: float,
    beta: float,
    gamma: float,
    updates: str,
) -> float:
    """The loss ``PML_MA.m`` evaluates after an iteration (see the module docstring).

    ``X_sq`` holds the squared norms of X's rows. ``‖XᵀD − VRᵀ‖²`` is expanded as
    ``Σᵢ Dᵢ²‖xᵢ‖² − 2Σᵢ Dᵢ (XV)ᵢ·rᵢ + ⟨RᵀR, VᵀV⟩`` and ``‖P₂P₁ᵀ‖²`` as ``⟨P₁ᵀP₁, P₂ᵀP₂⟩``.
    The λ term is ``Σⱼ‖rⱼ‖`` (code) or the trace norm ``‖R‖_*`` (objective).
    """
    R, P2, XP1, XV = state.R, state.P2, state.XP1, state.XV
    Rm = pattern.operand(R)
    RP2 = np.asarray(Rm @ P2)
    D = R.sum(axis=1)
    ds = graph.ds
    residual = pattern.Y - np.asarray(Rm @ state.Q.T)
    fit = float(np.sum((XP1 - RP2) ** 2)) + float(np.sum(residual**2))
    if updates == "objective":
        low_rank = float(thin_svd(R, compute_uv=False).sum())
    else:
        low_rank = float(np.sqrt(np.einsum("ij,ij->j", R, R)).sum())
    local = (
        float(ds @ np.einsum("ij,ij->i", XP1, XP1))
        + float(ds @ np.einsum("ij,ij->i", RP2, RP2))
        - 2.0 * float(np.einsum("ij,ij->", XP1, graph.S @ RP2))
    )
    prototype = (
        float((D * D) @ X_sq)
        - 2.0 * float(D @ np.einsum("ij,ij->i", XV, R))
        + float(np.einsum("ij,ij->", _gram(Rm), state.VtV))
    )
    if state.P2tP2 is None:
        alignment = float(np.trace(state.P1tP1))
    else:
        alignment = float(np.einsum("ij,ij->", state.P1tP1, state.P2tP2))
    return fit + lam * low_rank + alpha * local + beta * prototype + gamma * alignment


def r_gradient(
    Rm,
    Ym,
    R: np.ndarray,
    P2: np.ndarray,
    Q: np.ndarray,
    curvature: np.ndarray,
    XP1: np.ndarray,
    SXP1: np.ndarray,
    XV: np.ndarray,
    ds: np.ndarray,
    *,
    alpha: float,
    beta: float,
    updates: str,
) -> np.ndarray:
    """The R step's gradient ``2(R C − XP₁P₂ᵀ − w·YQ + αDsRP₂P₂ᵀ − αSXP₁P₂ᵀ − βDXV)`` with
    ``C = P₂P₂ᵀ + QᵀQ + βVᵀV`` (``curvature``) and D the row sums of R: the gradient of the
    smooth part of the loss in R with D and V held, except that the code has w = 2 where the
    loss gives w = 1 (``updates="objective"``). ``Rm``/``Ym``: R and Y as the products take
    them (:class:`CandidatePattern`), ``SXP1`` = S XP₁."""
    y_weight = 1.0 if updates == "objective" else 2.0
    D = R.sum(axis=1)
    return 2.0 * (
        np.asarray(Rm @ curvature)
        + alpha * (ds[:, None] * np.asarray(Rm @ (P2 @ P2.T)))
        - (XP1 + alpha * SXP1) @ P2.T
        - y_weight * np.asarray(Ym @ Q)
        - beta * (D[:, None] * XV)
    )


def ma_solve(
    X: np.ndarray,
    Y: np.ndarray,
    graph: NeighbourGraph,
    P1: np.ndarray,
    *,
    lam: float,
    alpha: float,
    beta: float,
    gamma: float,
    max_iter: int = 50,
    tol: float = 1e-4,
    updates: str = "code",
    rtol: float = 1e-10,
    keep_stages: int = 0,
    left: FeatureSide | None = None,
) -> MASolution:
    """The iterations of ``PML_MA.m`` from R = Y and the random start ``P1`` (d x m).

    ``X`` (n x d) kernel features, ``Y`` (n x c) 0/1 candidates, ``graph`` from
    :func:`neighbour_graph`. ``keep_stages`` keeps P₁, P₂ and R after each of the first so
    many iterations (for comparison with the authors' code stopped there). ``left`` is
    :func:`feature_side` (computed here when not given).
    """
    if updates not in UPDATES:
        raise PmlbenchError(f"unknown PML-MA updates {updates!r}; use one of {list(UPDATES)}")
    Y = np.asarray(Y, dtype=np.float64)
    pattern = CandidatePattern(Y)
    Ym = pattern.candidates()
    S, ds = graph.S, graph.ds
    left = feature_side(X, graph, alpha) if left is None else left
    QA, G = left.eigen.vectors, left.G
    X_sq = np.einsum("ij,ij->i", X, X)
    local_step = 2.0 * alpha if updates == "objective" else alpha
    label_weights = 1.0 + alpha * ds  # R + αDsR = diag(1 + α ds) R
    R = Y.copy()
    XP1 = X @ P1
    SXP1 = np.asarray(S @ XP1)
    P1tP1 = P1.T @ P1
    P1q = QA.T @ P1  # P1 in the eigenbasis of the feature side: P1 = Q_A P1q
    solution = MASolution(W=np.zeros((X.shape[1], Y.shape[1])), P1=P1, P2=P1[:0], R=R)
    stats = solution.sylvester
    for iteration in range(1, max_iter + 1):
        Rm = pattern.operand(R)
        # P2: (RᵀR + αRᵀDsR) P2 + P2 (γP1ᵀP1) = Rᵀ(XP1 − αSXP1), then its polar factor
        A2 = _gram(Rm, label_weights)
        C2 = np.asarray(Rm.T @ (XP1 - alpha * SXP1))
        P2 = solve_sylvester(SymmetricEigen.of(A2), gamma * P1tP1, C2, stats)
        P2, dropped = polar_factor(P2, rtol)
        solution.rank_deficient_polar += dropped
        # P2ᵀP2 is the identity when the polar factor kept every singular value (orthonormal
        # columns): the P1 equation's right side is then γI, exactly
        P2tP2 = P2.T @ P2 if dropped else None
        # P1: (XᵀX + αXᵀDsX) P1 + P1 (γP2ᵀP2) = Xᵀ(RP2 + αSRP2), solved in Q_A's basis,
        # where Q_AᵀXᵀ(I + αS)RP2 = HᵀRP2
        if pattern.sparse:
            right_side = np.asarray(Rm.T @ left.H).T @ P2
        else:
            right_side = left.H.T @ (R @ P2)
        B1 = gamma if P2tP2 is None else gamma * P2tP2
        P1q = sylvester_core(left.eigen.values, right_side, B1, stats)
        XP1 = G @ P1q
        SXP1 = np.asarray(S @ XP1)
        P1tP1 = P1q.T @ P1q
        # V (prototypes) and Q (polar factor of RᵀY) from the current R
        V = prototypes(np.asarray(Rm.T @ X).T, R)
        Q, dropped = polar_factor(_dense(Rm.T @ Ym), rtol)
        solution.rank_deficient_polar += dropped
        # R: a proximal gradient step on λ‖R‖_*, then the code's rescaling
        P2P2 = P2 @ P2.T
        VtV = V.T @ V
        curvature = P2P2 + Q.T @ Q + beta * VtV
        lipschitz = 2.0 * float(np.sqrt(np.sum(curvature**2))) + local_step * float(ds.max())
        XV = X @ V
        gradient = r_gradient(
            Rm, Ym, R, P2, Q, curvature, XP1, SXP1, XV, ds, alpha=alpha, beta=beta, updates=updates
        )
        U, s, Vt = thin_svd(R - gradient / lipschitz)
        keep = s > lam / lipschitz
        R_hat = (U[:, keep] * (s[keep] - lam / lipschitz)) @ Vt[keep]
        excess = np.maximum(R - Y, 0.0)
        denominator = R + MATLAB_EPS
        R = R * R_hat / denominator - excess * Y / denominator
        state = _Iterate(R, P2, Q, XP1, P1tP1, VtV, XV, P2tP2)
        loss = ma_loss(
            X_sq,
            pattern,
            graph,
            state,
            lam=lam,
            alpha=alpha,
            beta=beta,
            gamma=gamma,
            updates=updates,
        )
        solution.losses.append(loss)
        solution.rank, solution.lipschitz = int(keep.sum()), lipschitz
        solution.P2, solution.R = P2, R
        if iteration <= keep_stages:
            solution.stages.append({"P1": QA @ P1q, "P2": P2, "R": R})
        if iteration > 2:
            earlier, later = solution.losses[-3], solution.losses[-2]
            change = (earlier - later) / earlier
            solution.changes.append(change)
            if change < tol:
                break
    solution.P1 = QA @ P1q
    solution.W = solution.P1 @ solution.P2.T
    return solution


# ------------------------------------------------------------------ the estimator


def initial_values(seed: int | None, n: int, n_labels: int) -> tuple[np.ndarray, np.ndarray]:
    """The random parts of a fit: the anchor rows (``randsample(n, nAnchors)``, 0-based) and
    the start of P₁ (d x m standard normal, ``randn(d, m)``, d = anchors + 1, m = min(d, c)),
    from ``seed``; the anchors are drawn first."""
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    anchors = rng.choice(n, size=anchor_count(n), replace=False)
    d = anchors.size + 1
    return anchors, rng.standard_normal((d, min(d, n_labels)))


def work_of(n: int, n_labels: int) -> int:
    """n·d·c: the size of each of the four n x d by d x c products of an iteration."""
    return n * (anchor_count(n) + 1) * n_labels


def label_work_of(n: int, n_labels: int) -> int:
    """n·c²: the size of the SVD of the n x c step matrix Z of an iteration."""
    return n * n_labels * n_labels


def refusal_message(
    n: int, n_labels: int, max_work: int | None, max_label_work: int | None = None
) -> str | None:
    """One line naming the cap a training set exceeds; None within both."""
    budget = f"(set for the suite's budget, {BUDGET_NOTE})"
    work = work_of(n, n_labels)
    if max_work is not None and work > max_work:
        d = anchor_count(n) + 1
        return (
            f"pml_ma on {n:,} training instances and {n_labels:,} labels multiplies {n:,} x "
            f"{d:,} kernel features by {d:,} x {n_labels:,} matrices four times per iteration "
            f"(n·d·c = {work:,}), over method.max_work={max_work} {budget}; set "
            "method.max_work=null to run it anyway"
        )
    label_work = label_work_of(n, n_labels)
    if max_label_work is not None and label_work > max_label_work:
        return (
            f"pml_ma on {n:,} training instances and {n_labels:,} labels takes the SVD of a "
            f"{n:,} x {n_labels:,} matrix and factors {n_labels:,} x {n_labels:,} ones in every "
            f"iteration (n·c² = {label_work:,}), over method.max_label_work={max_label_work} "
            f"{budget}; set method.max_label_work=null to run it anyway"
        )
    return None


class SharedWork(shared_work.SharedWork):
    """What PML-MA's fits on one training set share (:mod:`pmlbench.numerics.shared_work`),
    each part once per distinct value of the parameters it depends on: the scaling, the random
    draws and kernel features (``random_state``), the kNN graph (``n_neighbors``) and the
    eigendecomposition of the P₁ equation's left side (``random_state``, ``n_neighbors``, α).

    ``X`` dense float64 training features, ``Y`` (n x c) their 0/1 candidate labels.
    """

    def __init__(self, X: np.ndarray, Y: np.ndarray):
        super().__init__(X, Y)
        self.scale = minmax_fit(X)
        self.Xs = minmax_apply(X, *self.scale)

    def initial_values(self, model: PMLMA) -> tuple[np.ndarray, np.ndarray]:
        seed = self.seed(model)
        n, c = self.Y.shape
        return self._once(("draws", seed), lambda: initial_values(seed, n, c))

    def kernel(self, model: PMLMA) -> tuple[KernelMap, np.ndarray]:
        anchors, _ = self.initial_values(model)
        return self._once(
            ("kernel", self.seed(model)),
            lambda: KernelMap.fit(self.Xs, anchors, method="pml_ma", rows=True),
        )

    def graph(self, k: int) -> NeighbourGraph:
        return self._once(("graph", k), lambda: neighbour_graph(self.Xs, k))

    def feature_side(self, model: PMLMA) -> FeatureSide:
        k, alpha = int(model.n_neighbors), float(model.alpha)
        _, phi = self.kernel(model)
        return self._once(
            ("left", self.seed(model), k, alpha),
            lambda: feature_side(phi, self.graph(k), alpha),
        )


class PMLMA(SharedWorkFitting, ValidatedParameters, BaseEstimator):
    """PML-MA (Chen et al., 2026): pseudo-labels from a low-rank decomposition of the
    candidates, aligned with kernel features in a common subspace globally and along a kNN
    graph, and with class prototypes; the predictor is the product of the two projections.

    Args:
        lam: λ, weight of the low-rank term on the pseudo-labels R (demo: 10), >= 0.
        alpha: α, weight of the local alignment along the kNN graph (demo: 0.1), >= 0.
        beta: β, weight of the class-prototype term (demo: 0.1), >= 0.
        gamma: γ, weight of ‖P₂P₁ᵀ‖² (demo: 1), >= 0.
        n_neighbors: k of the kNN graph (code: 5).
        max_iter: iterations at most (demo: 50).
        tol: from the third iteration, stop when the loss of the iteration before last
            decreased by less than this fraction (code: 1e-4), >= 0.
        updates: "code" (default: the R step as the authors' code computes it) or "objective"
            (the loss's own gradient and curvature bound; see the module docstring).
        threshold: ``predict`` keeps labels whose score is at least this (demo: 0.5).
        rtol: a singular value counts as zero in a polar factor when it is at most this times
            the largest, in (0, 1).
        max_work: the largest n·d·c (training instances x kernel features x labels) ``fit``
            accepts (None: no cap); above it ``fit`` refuses before any work.
        max_label_work: the largest n·c² (training instances x labels²) ``fit`` accepts
            (None: no cap); above it ``fit`` refuses before any work.
        random_state: seeds the kernel anchors and the start of P₁, an integer in [0, 2³²) or
            None; the runner fills in the split's seed.
        blas_threads: BLAS threads during fit and predict (None: the library default).
    """

    work_type = SharedWork
    default_bipartition = {"rule": "method"}
    # α at both ends and γ over the middle of what params_settings.m sets per dataset
    # (docs/methods/pml_ma.md, "Tuning grid")
    default_tuning_grid = {"alpha": [0.0001, 0.1], "gamma": [0.1, 1.0, 10.0]}
    parameter_constraints = {
        "lam": NON_NEGATIVE,
        "alpha": NON_NEGATIVE,
        "beta": NON_NEGATIVE,
        "gamma": NON_NEGATIVE,
        "n_neighbors": POSITIVE_INT,
        "max_iter": POSITIVE_INT,
        "tol": NON_NEGATIVE,
        "updates": [Options(UPDATES)],
        "threshold": [Interval(float)],
        "rtol": [Interval(float, 0, 1, closed="neither")],
        "max_work": CAP,
        "max_label_work": CAP,
        "random_state": SEED,
        "blas_threads": BLAS_THREADS,
    }

    def __init__(
        self,
        lam: float = 10.0,
        alpha: float = 0.1,
        beta: float = 0.1,
        gamma: float = 1.0,
        n_neighbors: int = 5,
        max_iter: int = 50,
        tol: float = 1e-4,
        updates: str = "code",
        threshold: float = 0.5,
        rtol: float = 1e-10,
        max_work: int | None = MAX_WORK,
        max_label_work: int | None = MAX_LABEL_WORK,
        random_state: int | None = None,
        blas_threads: int | None = 1,
    ):
        self.lam = lam
        self.alpha = alpha
        self.beta = beta
        self.gamma = gamma
        self.n_neighbors = n_neighbors
        self.max_iter = max_iter
        self.tol = tol
        self.updates = updates
        self.threshold = threshold
        self.rtol = rtol
        self.max_work = max_work
        self.max_label_work = max_label_work
        self.random_state = random_state
        self.blas_threads = blas_threads

    def initial_values(self, n: int, n_labels: int) -> tuple[np.ndarray, np.ndarray]:
        """The random parts of a fit (:func:`initial_values`) from ``random_state``."""
        return initial_values(self.random_state, n, n_labels)

    def _checked(self, X, Y) -> tuple[np.ndarray, np.ndarray]:
        """Validated parameters and inputs (dense float64 features, 0/1 labels); refusals
        before any work."""
        self._validate_params()
        X = check_features(X)
        n = X.shape[0]
        Y = check_label_matrix(Y, what="candidate labels", n_rows=n)
        refusal = refusal_message(n, Y.shape[1], self.max_work, self.max_label_work)
        if refusal is not None:
            raise NotApplicable(refusal)
        check_neighbours(int(self.n_neighbors), n, key="method.n_neighbors")
        return as_dense(X, dtype=np.float64), Y

    def _fit(self, work: SharedWork, start: float) -> None:
        """Scale, map, build the graph and run the iterations on the candidate labels."""
        X, Y = work.X, work.Y
        self.scale_low_, self.scale_span_ = work.scale
        anchors, P1 = work.initial_values(self)
        self.kernel_, phi = work.kernel(self)
        k = int(self.n_neighbors)
        graph = work.graph(k)
        left = work.feature_side(self)
        prepared = time.perf_counter()
        solution = ma_solve(
            phi,
            Y,
            graph,
            P1,
            lam=float(self.lam),
            alpha=float(self.alpha),
            beta=float(self.beta),
            gamma=float(self.gamma),
            max_iter=int(self.max_iter),
            tol=float(self.tol),
            updates=str(self.updates),
            rtol=float(self.rtol),
            left=left,
        )
        self.W_ = solution.W
        self.pseudo_labels_ = solution.R
        self.disambiguation_scores_ = solution.R
        self.losses_ = solution.losses
        self.n_features_in_ = X.shape[1]
        iterations = len(solution.losses)
        tol = float(self.tol)
        margin = min((abs(c - tol) / tol for c in solution.changes), default=None) if tol else None
        self.diagnostics_ = {
            "iterations": iterations,
            "stopped_by_tol": iterations < int(self.max_iter),
            # how far the stopping test came to flipping, relative to tol (None: never read)
            "stop_margin": None if margin is None else float(f"{margin:.3g}"),
            "loss": float(f"{solution.losses[-1]:.6g}"),
            "n_anchors": int(anchors.size),
            "m": int(P1.shape[1]),
            "rank": solution.rank,
            "sylvester_cut": solution.sylvester.cut,
            "sylvester_margin": float(f"{solution.sylvester.margin:.3g}"),
            "rank_deficient_polar": solution.rank_deficient_polar,
            "prepare_seconds": round(prepared - start, 3),
            "fit_seconds": round(time.perf_counter() - start, 3),
        }

    def decision_function(self, X) -> np.ndarray:
        """``φ(X) P₁P₂ᵀ`` (n x c), the scores of ``main_integration.m``."""
        X = as_dense(check_features(X), dtype=np.float64)
        check_feature_count(X, self.n_features_in_, method="PML-MA")
        Xs = minmax_apply(X, self.scale_low_, self.scale_span_)
        with threadpool_limits(self.blas_threads, user_api="blas"):
            return self.kernel_.transform(Xs) @ self.W_

    def predict(self, X) -> np.ndarray:
        """Labels whose score is at least ``threshold`` (the demo's ``Y_pred >= 0.5``)."""
        return (self.decision_function(X) >= self.threshold).astype(np.uint8)
