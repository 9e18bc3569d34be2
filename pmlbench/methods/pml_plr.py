"""PML-PLR: pseudo-label reconstruction (Chen, Li, Han, Li, Gao, Chan & Fang, IJCAI 2025).

Faithful to the authors' MATLAB code (github CcAmbiguous/PML-PLR: ``PML_PLR.m``, ``main_PML.m``,
``functions/Kernel_mapping.m``, ``functions/knn_S.m``, ``functions/EProjSimplex_new.m``). Only
the paper's abstract could be read while this was written, so no equation numbers are cited;
the model below is the loss the authors' code evaluates after each iteration. With the
training features min-max scaled to [-1, 1] per feature (``mapminmax``), ``X`` (d x n), the
candidate labels ``Y`` (l x n), kernel features ``φ`` (h x n, RBF on up to 5d random
anchors, centred, plus a bias row), the squared distances ``G`` (n x n) and the Laplacian
``L`` of a 5-nearest-neighbour graph::

    min ‖Wᵀφ − F‖² + ‖YQ − F‖² + ‖Y − PᵀHC‖² + tr(GCᵀ) + α‖Y − PᵀH‖₁
        + β tr(F L C Fᵀ) + λ‖W‖²
    s.t. Q orthogonal (n x n), P Pᵀ = I (P: m x l, m = ⌈ratio·l⌉), C's columns on the simplex

``F`` are the pseudo-labels (l x n), ``C`` the instance correlation that reconstructs them
(``Y ≈ PᵀHC``), ``E`` a split variable for ``Y − PᵀH`` with a fixed penalty ``μ = 1000``.
Each iteration (at most 40; from the sixth on, stop when the loss decreased by less than
1e-4 relative): W (ridge), Q (polar factor of ``YᵀF``), P (polar factor), H (a linear system in
``2CCᵀ − μI``), C (the unconstrained minimiser projected column by column onto the
simplex), E (shrinkage), F (a multiplicative update). Test scores are ``Wᵀφ(x)``; a label is
predicted where its score is at least 0.5.

**Where the code departs from its own objective** (``updates="code"``, the default, is what
the code computes; ``updates="objective"`` uses the stationary points of the loss above):
the H step solves ``H(2CCᵀ − μI) = P(2YCᵀ − μ(Y − E))`` where the loss gives
``H(2CCᵀ + μI) = P(2YCᵀ + μ(Y − E))`` (the code's P step uses the + sign); the C step adds
``+2β FᵀF L`` to the right-hand side where the loss gives ``−β L FᵀF`` (the code's F step
uses the loss's sign); the E step shrinks one-sidedly, ``max(T − α/μ, 0)``, where the ℓ1 term
gives the symmetric soft threshold.

**Linear algebra.** Nothing iteration-invariant is recomputed: ``φφᵀ + λI`` is factored
once, the QR factor of ``Yᵀ``, ``G`` and ``L`` are computed once. ``pinv(2HᵀPPᵀH)`` (n x n,
rank m) comes from the thin SVD of ``PᵀH`` (l x n); ``YQ`` from the SVD of an l x l matrix
(``YQ`` is unique though Q is not); the H step applies ``pinv(2CCᵀ ∓ μI)`` by conjugate
gradients or a Cholesky factorisation when a bound on ``‖C‖₂`` (from C's row and column
sums) proves no eigenvalue near zero, by an eigendecomposition otherwise; the simplex
projection (:mod:`pmlbench.numerics.simplex`) runs the authors' Newton steps by binary
search on sorted columns. The scaling and kernel map (:mod:`pmlbench.numerics.kernel_features`)
and the kNN graph (:mod:`pmlbench.numerics.knn_graph`) are those of the authors' other PML
programs, shared with their modules.
Every pseudo-inverse and polar factor treats a singular value as zero when it is at most
``rtol`` times the largest (MATLAB's ``pinv`` uses ``max(size)·eps``, which leaves the
outcome to rounding when a singular value is at that level).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.linalg.blas import dsyrk
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
    POSITIVE,
    SEED,
    check_neighbours,
)
from pmlbench.numerics import shared_work
from pmlbench.numerics.exact import row_groups
from pmlbench.numerics.kernel_features import (
    KernelMap,
    minmax_apply,
    minmax_fit,
    n_anchors,
    squared_distances,
)
from pmlbench.numerics.knn_graph import heat_kernel_neighbours
from pmlbench.numerics.linalg import soft_threshold, thin_svd
from pmlbench.numerics.matlab import MATLAB_EPS
from pmlbench.numerics.shared_work import SharedWorkFitting
from pmlbench.numerics.simplex import project_rows_to_simplex

UPDATES = ("code", "objective")
HOW = ("cg", "cholesky", "eigh")  # how an H step was solved
# Largest training set fitted by default: above it one split of the paper protocol takes more
# than 10x ML-kNN's time on the 2-core reference machine (docs/methods/pml_plr.md).
MAX_TRAIN = 2500


def pairwise_squared_distances(X: np.ndarray) -> np.ndarray:
    """``pdist2(X, X, 'squaredeuclidean')`` (G): exactly 0 on the diagonal and between
    identical rows, as the direct differences give, and non-negative elsewhere."""
    D = squared_distances(X, X)
    np.maximum(D, 0.0, out=D)
    groups = row_groups(X)
    order = np.argsort(groups, kind="stable")
    bounds = np.flatnonzero(np.diff(groups[order])) + 1
    for members in np.split(order, bounds):
        if members.size > 1:
            D[np.ix_(members, members)] = 0.0
    np.fill_diagonal(D, 0.0)
    return D


def knn_laplacian(X: np.ndarray, k: int) -> sp.csr_matrix:
    """``knn_S.m``: Laplacian ``diag(R1) − R`` of the symmetrised heat-kernel kNN graph
    ``R = (R + Rᵀ)/2`` (:func:`pmlbench.numerics.knn_graph.heat_kernel_neighbours`; R's
    diagonal, the identity or a self link's weight 1, cancels in ``diag(R1) − R``)."""
    R = heat_kernel_neighbours(X, k, method="pml_plr")
    R = 0.5 * (R + R.T)
    return sp.csr_matrix(sp.diags(np.asarray(R.sum(axis=1)).ravel()) - R)


def pinv_gram(Z: np.ndarray, rtol: float) -> tuple[np.ndarray, np.ndarray, float, float]:
    """``pinv(2ZᵀZ)`` in factored form ``V diag(w) Vᵀ`` from the thin SVD of Z.

    The eigenvalues of ``2ZᵀZ`` are ``2s²``; those at most ``rtol`` times the largest count as
    zero. Returns V (n x r), w (r), the smallest kept and the largest dropped eigenvalue ratio.
    """
    _, s, Vt = thin_svd(Z)
    ratio = (s / s[0]) ** 2 if s.size and s[0] > 0 else np.zeros_like(s)
    keep = ratio > rtol
    dropped = float(ratio[~keep].max()) if (~keep).any() else 0.0
    kept = float(ratio[keep].min()) if keep.any() else 0.0
    return Vt[keep].T, 1.0 / (2.0 * s[keep] ** 2), kept, dropped


def polar_product(Ry: np.ndarray, F: np.ndarray, rtol: float) -> np.ndarray:
    """``Y Q`` with ``Q = M Nᵀ`` from ``[M, ~, N] = svd(YᵀF)`` (n x n), in O(n l²).

    With ``Yᵀ = Q_Y R_Y`` and ``Fᵀ = Q_F R_F``, ``YᵀF = Q_Y (R_Y R_Fᵀ) Q_Fᵀ``; the singular
    vectors of the n x n matrix that belong to zero singular values are arbitrary, but Y
    annihilates them whenever ``rank(YᵀF) = rank(Y)``, so ``YQ = R_Yᵀ U Vᵀ Q_Fᵀ`` over the
    singular values above ``rtol`` times the largest is what any SVD gives.
    """
    Qf, Rf = scipy.linalg.qr(F.T, mode="economic", check_finite=False)
    U, s, Vt = thin_svd(Ry @ Rf.T)
    keep = s > rtol * s[0] if s.size and s[0] > 0 else np.zeros(s.shape, dtype=bool)
    return (Ry.T @ U[:, keep]) @ (Vt[keep] @ Qf.T)


@dataclass
class PLRSolution:
    """Output of :func:`plr_solve`; matrices in the authors' orientation (labels x instances)."""

    W: np.ndarray  # h x l, the W of the last iteration (from F before its last update)
    F: np.ndarray  # l x n pseudo-labels
    C: np.ndarray  # n x n instance correlation
    losses: list[float]  # loss after each iteration (the code's loss(2:end))
    # H steps by conjugate gradients, Cholesky, or eigendecomposition (not proved definite)
    h_solves: dict[str, int] = field(default_factory=lambda: dict.fromkeys(HOW, 0))
    smallest_kept: float = 1.0  # over iterations: pinv(2HᵀPPᵀH)'s smallest kept eigenvalue ratio
    largest_dropped: float = 0.0  # ... and its largest eigenvalue ratio treated as zero
    stages: list[dict[str, np.ndarray]] = field(default_factory=list)


class ShiftedInverse:
    """``pinv(A + shift·I)`` for a symmetric ``A`` with eigenvalues in [0, bound], factored once.

    The eigenvalues of ``A + shift·I`` lie in [shift, bound + shift]. When that interval keeps
    them all of one sign and above ``rtol`` times the largest magnitude, no singular value is
    cut and the pseudo-inverse is the inverse: a Cholesky factorisation of ``±(A + shift·I)``.
    Otherwise an eigendecomposition, with the eigenvalues at most ``rtol`` times the largest
    magnitude treated as zero. ``A``'s upper triangle is read.
    """

    def __init__(self, A: np.ndarray, shift: float, bound: float, rtol: float):
        low, high = shift, bound + shift
        self.sign = 1.0 if low > 0 else -1.0
        self.factor = None
        if (low > 0 and low > rtol * high) or (high < 0 and -high > rtol * -low):
            M = A + shift * np.eye(len(A))
            if self.sign < 0:
                M *= -1.0
            self.factor = scipy.linalg.cho_factor(M, check_finite=False)
            return
        S = np.triu(A) + np.triu(A, 1).T + shift * np.eye(len(A))
        values, vectors = scipy.linalg.eigh(S, check_finite=False)
        keep = np.abs(values) > rtol * np.abs(values).max()
        self.values, self.vectors = values[keep], vectors[:, keep]

    @property
    def by_eigh(self) -> bool:
        return self.factor is None

    def solve(self, B: np.ndarray) -> np.ndarray:
        """``pinv(A + shift·I) B``."""
        if self.factor is not None:
            return self.sign * scipy.linalg.cho_solve(self.factor, B, check_finite=False)
        return self.vectors @ ((self.vectors.T @ B) / self.values[:, None])


CG_TOL = 1e-13  # relative residual at which the H step's conjugate gradients stop


def _conjugate_gradients(
    apply: Callable[[np.ndarray], np.ndarray], rhs: np.ndarray, x: np.ndarray, max_steps: int
) -> np.ndarray | None:
    """Conjugate gradients for ``M x = rhs`` (M positive definite, one system per column);
    None when some column's relative residual is not below :data:`CG_TOL` in ``max_steps``."""
    r = rhs - apply(x)
    p = r.copy()
    rr = np.einsum("ij,ij->j", r, r)
    target = (CG_TOL * np.linalg.norm(rhs, axis=0)) ** 2
    for _ in range(max_steps):
        active = rr > target
        if not active.any():
            return x
        Mp = apply(p)
        curvature = np.einsum("ij,ij->j", p, Mp)
        step = np.where(active, rr / np.where(active, curvature, 1.0), 0.0)
        x = x + step * p
        r = r - step * Mp
        rr_new = np.einsum("ij,ij->j", r, r)
        p = r + np.where(active, rr_new / np.where(active, rr, 1.0), 0.0) * p
        rr = rr_new
    return x if not (rr > target).any() else None


def solve_h(C: np.ndarray, B: np.ndarray, mu: float, sign: float, rtol: float):
    """``H = B pinv(2CCᵀ + sign·μI)`` (m x n), and how it was solved.

    C >= 0 has columns summing to 1, so ``‖C‖₂² <= min(max row sum x max column sum,
    ‖C‖_F²)``: the eigenvalues of ``2CCᵀ`` lie in [0, bound]. When that proves the matrix
    definite and far from singular (see :class:`ShiftedInverse`), conjugate gradients on
    ``μI ± 2CCᵀ`` (two products with C per step, no n x n matrix formed; the condition number
    is at most that of the interval) where they are cheaper than a Cholesky factorisation,
    else the factorisation; otherwise the eigendecomposition with the cutoff.
    """
    n = len(C)
    bound = 2.0 * min(
        float(C.sum(axis=1).max() * C.sum(axis=0).max()), float(np.einsum("ij,ij->", C, C))
    )
    shift = sign * mu
    low, high = (shift, bound + shift) if sign > 0 else (mu - bound, mu)  # of M = ±(...)
    if low > 0 and low > rtol * high:
        # M = μI + 2CCᵀ (objective) or μI − 2CCᵀ = −(2CCᵀ − μI) (code), positive definite
        # CG's error bound 2((√κ − 1)/(√κ + 1))^k reaches CG_TOL after this many steps
        root = math.sqrt(high / low)
        rate = math.log((root + 1.0) / (root - 1.0)) if root > 1.0 else math.inf
        steps = math.ceil(math.log(2.0 / CG_TOL) / rate) + 5
        if steps * 4 * B.shape[0] < n:  # CG's 4mn² per step against Cholesky's ~n³
            twice = 2.0 * sign

            def apply(X: np.ndarray) -> np.ndarray:
                return mu * X + twice * (C @ (C.T @ X))

            solution = _conjugate_gradients(apply, sign * B.T, sign * B.T / mu, 2 * steps)
            if solution is not None:
                return solution.T, "cg"
    inverse = ShiftedInverse(dsyrk(2.0, C), shift, bound, rtol)  # C: best Fortran-ordered
    return inverse.solve(B.T).T, "eigh" if inverse.by_eigh else "cholesky"


def kernel_gram(phi: np.ndarray) -> np.ndarray:
    """``φφᵀ`` (h x h; the upper triangle is what :class:`ShiftedInverse` reads)."""
    return dsyrk(1.0, phi.T, trans=1)


def ridge_inverse(gram: np.ndarray, phi: np.ndarray, lam: float, rtol: float) -> ShiftedInverse:
    """The W step's ``pinv(φφᵀ + λI)``, factored once; trace(φφᵀ) bounds its largest
    eigenvalue."""
    return ShiftedInverse(gram, lam, float(np.einsum("ij,ij->", phi, phi)), rtol)


def label_qr(Y: np.ndarray) -> np.ndarray:
    """R_Y of ``Yᵀ = Q_Y R_Y`` (Y: l x n), which the Q step reads (:func:`polar_product`)."""
    Yt = np.asarray(Y, dtype=np.float64).T
    return scipy.linalg.qr(Yt, mode="economic", check_finite=False)[1]


@dataclass
class Step:
    """The part of one iteration of ``PML_PLR.m`` that λ does not reach: everything but the W
    step and F's update, from the state (F, C, E, H) the iteration starts from. The first
    iteration starts from the same state for every λ, so fits that differ only in λ share
    its Step (:meth:`SharedWork.first_step`)."""

    phiF: np.ndarray  # φ Fᵀ, the W step's right-hand side
    YQ: np.ndarray
    H: np.ndarray
    how: str  # how the H step was solved
    Z: np.ndarray  # PᵀH
    kept: float  # pinv(2ZᵀZ)'s smallest kept and largest dropped eigenvalue ratio
    dropped: float
    C: np.ndarray
    T: np.ndarray  # Y − Z
    E: np.ndarray
    FA: np.ndarray  # the denominator of F's update
    excess: np.ndarray  # max(F − Y, 0)


def lambda_free_step(
    phi: np.ndarray,
    G: np.ndarray,
    L: sp.csr_matrix,
    Y: np.ndarray,
    Ys: sp.csr_matrix,
    Ry: np.ndarray,
    F: np.ndarray,
    C: np.ndarray,
    E: np.ndarray,
    H: np.ndarray,
    *,
    alpha: float,
    beta: float,
    mu: float,
    updates: str,
    rtol: float,
) -> Step:
    """Q, P, H, C and E steps and F's denominator of one iteration (see :class:`Step`)."""
    objective = updates == "objective"
    sign = 1.0 if objective else -1.0
    phiF = phi @ F.T
    YQ = polar_product(Ry, F, rtol)
    YCt = np.asarray(Ys @ C.T)
    U, _, Vt = thin_svd((2.0 * YCt + mu * (Y - E)) @ H.T)
    P = Vt.T @ U.T  # m x l
    # H(2CCᵀ ∓ μI) = P(2YCᵀ ∓ μ(Y − E))
    H, how = solve_h(C, P @ (2.0 * YCt + sign * mu * (Y - E)), mu, sign, rtol)
    # C: pinv(2ZᵀZ)(2ZᵀY ± β-term − G) with Z = PᵀH, then each column onto the simplex
    Z = P.T @ H
    V, w, kept, dropped = pinv_gram(Z, rtol)
    FL = np.asarray((L @ F.T).T)  # F L (L symmetric)
    VtF = V.T @ F.T
    if objective:
        smooth = -beta * (np.asarray((L @ V).T) @ F.T) @ F  # −β Vᵀ L FᵀF
    else:
        smooth = 2.0 * beta * VtF @ FL  # +2β Vᵀ FᵀF L
    rhs = 2.0 * (V.T @ Z.T) @ Y + smooth - V.T @ G
    # Cᵀ's rows are C's columns: kept C-contiguous, so C itself is Fortran-ordered
    C = project_rows_to_simplex((w[:, None] * rhs).T @ V.T).T
    T = Y - Z
    E = soft_threshold(T, alpha / mu) if objective else np.maximum(T - alpha / mu, 0.0)
    # F's multiplicative update divides by this
    excess = np.maximum(F - Y, 0.0)
    FA = 2.0 * F + beta * np.asarray((L @ (F @ C.T).T).T) + beta * (FL @ C) + MATLAB_EPS
    return Step(phiF, YQ, H, how, Z, kept, dropped, C, T, E, FA, excess)


def plr_start(Y: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The iterations' start: F = Y, C = I, E = 0 (H's start is random, given)."""
    return Y.copy(), np.eye(n), np.zeros_like(Y)


def plr_solve(
    phi: np.ndarray,
    G: np.ndarray,
    L: sp.csr_matrix,
    Y: np.ndarray,
    H: np.ndarray,
    *,
    alpha: float,
    beta: float,
    lam: float,
    mu: float = 1e3,
    max_iter: int = 40,
    tol: float = 1e-4,
    updates: str = "code",
    rtol: float = 1e-10,
    keep_stages: int = 0,
    ridge: ShiftedInverse | None = None,
    Ry: np.ndarray | None = None,
    first: Step | None = None,
) -> PLRSolution:
    """The iterations of ``PML_PLR.m`` from the random start ``H`` (m x n).

    ``phi`` (h x n) kernel features, ``G`` (n x n) squared distances, ``L`` the kNN Laplacian,
    ``Y`` (l x n) 0/1 candidates. ``keep_stages`` keeps W, F, C after each of the first so
    many iterations (for comparison with the authors' code stopped there). When several fits
    share them, ``ridge`` (the factored ``φφᵀ + λI``, :func:`ridge_inverse`), ``Ry``
    (:func:`label_qr`) and ``first`` (the first iteration's :class:`Step` from
    :func:`plr_start` and the same ``H``, α, β, μ, ``updates`` and ``rtol``) may be given;
    they are computed here otherwise.
    """
    if updates not in UPDATES:
        raise PmlbenchError(f"unknown PML-PLR updates {updates!r}; use one of {list(UPDATES)}")
    h, n = phi.shape
    Y = np.asarray(Y, dtype=np.float64)
    Ys = sp.csr_matrix(Y)
    L = sp.csr_matrix(L)
    # W = pinv(φφᵀ + λI) φ Fᵀ: the h x h matrix is fixed, so factor it once
    if ridge is None:
        ridge = ridge_inverse(kernel_gram(phi), phi, lam, rtol)
    if Ry is None:
        Ry = label_qr(Y)
    F, C, E = plr_start(Y, n)
    solution = PLRSolution(W=np.zeros((h, Y.shape[0])), F=F, C=C, losses=[])
    for iteration in range(1, max_iter + 1):
        if iteration == 1 and first is not None:
            step = first
        else:
            step = lambda_free_step(
                phi,
                G,
                L,
                Y,
                Ys,
                Ry,
                F,
                C,
                E,
                H,
                alpha=alpha,
                beta=beta,
                mu=mu,
                updates=updates,
                rtol=rtol,
            )
        W = ridge.solve(step.phiF)
        Wphi = W.T @ phi
        H, C, E = step.H, step.C, step.E
        solution.h_solves[step.how] += 1
        solution.smallest_kept = min(solution.smallest_kept, step.kept)
        solution.largest_dropped = max(solution.largest_dropped, step.dropped)
        # F: multiplicative update
        F = F * (Wphi + step.YQ) / step.FA - step.excess * Y / step.FA
        FCt = F @ C.T
        FL_new = np.asarray((L @ F.T).T)
        loss = (
            float(np.sum((Wphi - F) ** 2))
            + float(np.sum((step.YQ - F) ** 2))
            + float(np.sum((Y - step.Z @ C) ** 2))
            + float(np.einsum("ij,ij->", G, C.T))  # G is symmetric
            + alpha * float(np.abs(step.T).sum())
            + beta * float(np.einsum("ij,ij->", FL_new, FCt))
            + lam * float(np.sum(W * W))
        )
        solution.losses.append(loss)
        solution.W, solution.F, solution.C = W, F, C
        if iteration <= keep_stages:
            solution.stages.append({"W": W, "F": F, "C": C})
        if iteration > 5:
            previous = solution.losses[-2]
            if (previous - loss) / previous < tol:
                break
    return solution


def refusal_message(n: int, max_train: int | None) -> str | None:
    """One line naming the cap a training set of n instances exceeds; None within it."""
    if max_train is None or n <= max_train:
        return None
    gib = 5 * n * n * 8 / 2**30
    return (
        f"pml_plr refuses {n} training instances (method.max_train = {max_train}): every "
        f"iteration solves an n x n system and multiplies n x n matrices (about {gib:.1f} GiB "
        f"of them at n = {n}), so above the cap one split exceeds the suite's budget "
        f"({BUDGET_NOTE}); "
        f"set method.max_train={n} (or null) to run it anyway"
    )


def initial_values(
    seed: int | None, n: int, d: int, n_labels: int, ratio: float
) -> tuple[np.ndarray, np.ndarray]:
    """The random parts of a fit: the anchor rows (``randsample(n, nAnchors)``, 0-based) and
    the start of H (m x n standard normal, ``randn(m, n)``, m = ⌈ratio·l⌉), from ``seed``. The
    anchors are drawn first, so they do not depend on ``ratio``."""
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    anchors = rng.choice(n, size=n_anchors(n, d), replace=False)
    m = math.ceil(n_labels * ratio)
    return anchors, rng.standard_normal((m, n))


class SharedWork(shared_work.SharedWork):
    """What PML-PLR's fits on one training set share (:mod:`pmlbench.numerics.shared_work`):
    the scaling, the random draws, kernel features, squared distances and kNN graph, φφᵀ and
    its factorisation per λ, the QR factor of Yᵀ and the first iteration's λ-free step.

    ``X`` dense float64 training features, ``Y`` (n x l) their 0/1 candidate labels.
    """

    def __init__(self, X: np.ndarray, Y: np.ndarray):
        super().__init__(X, Y)
        self.scale = minmax_fit(X)
        self.Xs = minmax_apply(X, *self.scale)

    def initial_values(self, model: PMLPLR) -> tuple[np.ndarray, np.ndarray]:
        """The anchor rows and H's start (:func:`initial_values`)."""
        n, d = self.X.shape
        seed, ratio = self.seed(model), float(model.ratio)
        return self._once(
            ("draws", seed, ratio), lambda: initial_values(seed, n, d, self.Y.shape[1], ratio)
        )

    def kernel(self, model: PMLPLR, anchors: np.ndarray) -> tuple[KernelMap, np.ndarray]:
        """``Kernel_mapping.m`` on the anchors the seed draws (they do not depend on ratio)."""
        return self._once(
            ("kernel", self.seed(model)),
            lambda: KernelMap.fit(self.Xs, anchors, method="pml_plr"),
        )

    def distances(self) -> np.ndarray:
        return self._once(("G",), lambda: pairwise_squared_distances(self.Xs))

    def laplacian(self, k: int) -> sp.csr_matrix:
        return self._once(("L", k), lambda: knn_laplacian(self.Xs, k))

    def ridge(self, model: PMLPLR, phi: np.ndarray, lam: float, rtol: float) -> ShiftedInverse:
        """``pinv(φφᵀ + λI)`` factored, from φφᵀ computed once per kernel map."""
        seed = self.seed(model)
        gram = self._once(("phi_gram", seed), lambda: kernel_gram(phi))
        return self._once(("ridge", seed, lam, rtol), lambda: ridge_inverse(gram, phi, lam, rtol))

    def label_qr(self) -> np.ndarray:
        return self._once(("Ry",), lambda: label_qr(self.Y.T))

    def first_step(
        self, model: PMLPLR, phi: np.ndarray, G: np.ndarray, L: sp.csr_matrix, H0: np.ndarray
    ) -> Step:
        """The first iteration's :class:`Step`, which every λ shares (its start is fixed)."""

        def compute() -> Step:
            Y = np.asarray(self.Y.T, dtype=np.float64)  # as plr_solve makes it: same layout
            F, C, E = plr_start(Y, Y.shape[1])
            return lambda_free_step(
                phi,
                G,
                sp.csr_matrix(L),
                Y,
                sp.csr_matrix(Y),
                self.label_qr(),
                F,
                C,
                E,
                H0,
                alpha=float(model.alpha),
                beta=float(model.beta),
                mu=float(model.mu),
                updates=model.updates,
                rtol=float(model.rtol),
            )

        key = (
            "first",
            self.seed(model),
            float(model.ratio),
            int(model.n_neighbors),
            float(model.alpha),
            float(model.beta),
            float(model.mu),
            model.updates,
            float(model.rtol),
        )
        return self._once(key, compute)


class PMLPLR(SharedWorkFitting, ValidatedParameters, BaseEstimator):
    """PML-PLR (Chen et al., IJCAI 2025): pseudo-labels reconstructed through an instance
    correlation learned from the candidate labels, and a kernel ridge predictor on them.

    Args:
        alpha: α, weight of the ℓ1 term on ``Y − PᵀH`` (demo: 0.1), >= 0.
        beta: β, weight of the manifold term ``tr(F L C Fᵀ)`` (demo: 0.01), >= 0.
        lam: λ, ridge weight on W (demo: 1), >= 0.
        ratio: m = ⌈ratio·l⌉ rows of P and H (demo: 0.8), in (0, 1].
        mu: μ, the fixed penalty on ``E = Y − PᵀH`` (code: 1000), > 0.
        n_neighbors: k of the kNN graph (code: 5).
        max_iter: iterations at most (demo: 40).
        tol: after the fifth iteration, stop when the loss decreased by less than this
            fraction of its previous value (code: 1e-4), >= 0.
        updates: "code" (default: the H, C and E steps as the authors' code computes them) or
            "objective" (the stationary points of the loss the code evaluates; see the module
            docstring and docs/methods/pml_plr.md).
        threshold: ``predict`` keeps labels whose score is at least this (demo: 0.5).
        rtol: a singular value counts as zero in a pseudo-inverse or polar factor when it is
            at most this times the largest, in (0, 1).
        max_train: largest training set ``fit`` accepts (None: no cap); above it ``fit``
            refuses before any work (n x n dense matrices, O(n³) per iteration).
        random_state: seeds the kernel anchors and the start of H, an integer in [0, 2³²) or
            None; the runner fills in the split's seed.
        blas_threads: BLAS threads during fit and predict (None: the library default).
    """

    work_type = SharedWork
    default_bipartition = {"rule": "method"}
    # λ as params_settings.m sets it per dataset (0.01-10), without the 0.01 of the datasets
    # pmlbench lacks or refuses (docs/methods/pml_plr.md, "Tuning grid")
    default_tuning_grid = {"lam": [0.1, 1.0, 10.0]}
    parameter_constraints = {
        "alpha": NON_NEGATIVE,
        "beta": NON_NEGATIVE,
        "lam": NON_NEGATIVE,
        "ratio": [Interval(float, 0, 1, closed="right")],
        "mu": POSITIVE,
        "n_neighbors": [Interval(int, 1, None)],
        "max_iter": [Interval(int, 1, None)],
        "tol": NON_NEGATIVE,
        "updates": [Options(UPDATES)],
        "threshold": [Interval(float)],
        "rtol": [Interval(float, 0, 1, closed="neither")],
        "max_train": CAP,
        "random_state": SEED,
        "blas_threads": BLAS_THREADS,
    }

    def __init__(
        self,
        alpha: float = 0.1,
        beta: float = 0.01,
        lam: float = 1.0,
        ratio: float = 0.8,
        mu: float = 1e3,
        n_neighbors: int = 5,
        max_iter: int = 40,
        tol: float = 1e-4,
        updates: str = "code",
        threshold: float = 0.5,
        rtol: float = 1e-10,
        max_train: int | None = MAX_TRAIN,
        random_state: int | None = None,
        blas_threads: int | None = 1,
    ):
        self.alpha = alpha
        self.beta = beta
        self.lam = lam
        self.ratio = ratio
        self.mu = mu
        self.n_neighbors = n_neighbors
        self.max_iter = max_iter
        self.tol = tol
        self.updates = updates
        self.threshold = threshold
        self.rtol = rtol
        self.max_train = max_train
        self.random_state = random_state
        self.blas_threads = blas_threads

    def n_anchors(self, n: int, d: int) -> int:
        """``Kernel_mapping.m``: 5 anchors per feature, at most the training instances."""
        return n_anchors(n, d)

    def initial_values(self, n: int, d: int, n_labels: int) -> tuple[np.ndarray, np.ndarray]:
        """The random parts of a fit (:func:`initial_values`) from ``random_state``."""
        return initial_values(self.random_state, n, d, n_labels, float(self.ratio))

    def _checked(self, X, Y) -> tuple[np.ndarray, np.ndarray]:
        """Validated parameters and inputs (dense float64 features, 0/1 labels); refusals
        before any work."""
        self._validate_params()
        n = X.shape[0]
        refusal = refusal_message(n, self.max_train)
        if refusal is not None:
            raise NotApplicable(refusal)
        X = as_dense(check_features(X), dtype=np.float64)
        Y = check_label_matrix(Y, what="candidate labels", n_rows=n)
        check_neighbours(int(self.n_neighbors), n, key="method.n_neighbors")
        return X, Y

    def _fit(self, work: SharedWork, start: float) -> None:
        """Scale, map, build the graph and run the iterations on the candidate labels."""
        X, Y = work.X, work.Y
        self.scale_low_, self.scale_span_ = work.scale
        anchors, H0 = work.initial_values(self)
        self.kernel_, phi = work.kernel(self, anchors)
        G = work.distances()
        L = work.laplacian(int(self.n_neighbors))
        lam, rtol = float(self.lam), float(self.rtol)
        ridge = work.ridge(self, phi, lam, rtol)
        prepared = time.perf_counter()
        solution = plr_solve(
            phi,
            G,
            L,
            Y.T,
            H0,
            alpha=float(self.alpha),
            beta=float(self.beta),
            lam=lam,
            mu=float(self.mu),
            max_iter=int(self.max_iter),
            tol=float(self.tol),
            updates=self.updates,
            rtol=rtol,
            ridge=ridge,
            Ry=work.label_qr(),
            first=work.first_step(self, phi, G, L, H0),
        )
        self.W_ = solution.W
        self.pseudo_labels_ = solution.F.T  # n x l
        self.disambiguation_scores_ = self.pseudo_labels_
        self.correlation_ = solution.C
        self.losses_ = solution.losses
        self.n_features_in_ = X.shape[1]
        iterations = len(solution.losses)
        self.diagnostics_ = {
            "iterations": iterations,
            "stopped_by_tol": iterations < int(self.max_iter),
            "loss": float(f"{solution.losses[-1]:.6g}"),
            "n_anchors": int(anchors.size),
            "m": int(H0.shape[0]),
            "pinv_smallest_kept": float(f"{solution.smallest_kept:.3g}"),
            "pinv_largest_dropped": float(f"{solution.largest_dropped:.3g}"),
            **{f"h_solves_{how}": count for how, count in solution.h_solves.items()},
            "prepare_seconds": round(prepared - start, 3),
            "fit_seconds": round(time.perf_counter() - start, 3),
        }

    def decision_function(self, X) -> np.ndarray:
        """``Wᵀφ(x)`` (n x l), the scores of ``main_PML.m``."""
        X = as_dense(check_features(X), dtype=np.float64)
        check_feature_count(X, self.n_features_in_, method="PML-PLR")
        Xs = minmax_apply(X, self.scale_low_, self.scale_span_)
        with threadpool_limits(self.blas_threads, user_api="blas"):
            return (self.W_.T @ self.kernel_.transform(Xs)).T

    def predict(self, X) -> np.ndarray:
        """Labels whose score is at least ``threshold`` (the demo's ``Y_pred >= 0.5``)."""
        return (self.decision_function(X) >= self.threshold).astype(np.uint8)
