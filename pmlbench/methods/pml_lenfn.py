"""PML-LENFN: near-far neighbourhood label enhancement and nonlinear guidance (Chen, Wu, Han,
Fang, Chen & Wen, ACM MM 2024), trained on candidate labels.

The paper's full text could not be read while this module was written, so no equation
numbers are cited: the formulas are the ones the authors' MATLAB code computes (github
CcAmbiguous/Partial-Multi-label-Learning-Based-On-Near-Far-Neighborhood-Label-Enhancement-
And-Nonlinear-Guidance: ``main_PML.m``, ``LENF.m``, ``PML_train.m``, ``PML_test.m``,
``function/``). Three stages:

1. **Features** (``main_PML.m``): every feature mapped to [-1, 1] with the training rows'
   minimum and maximum (MATLAB's ``mapminmax``; the test rows get the same map), then a bias
   column of ones.
2. **Label enhancement** (``LENF.m``, ``knn_S.m``): similarities ``S_ij = exp(−d_ij / 2s²)``
   of the Euclidean distances d, with s the mean distance of an instance to its nearest
   other instance (note: d, not d², over 2s²). For instance i, with ``mn = max_j S_ij`` (1,
   itself) and ``mf = min_j S_ij``, its near neighbours are the j with
   ``S_ij >= mn − μ(mn − mf)`` and its far ones those with ``S_ij <= mf + μ(mn − mf)``;
   ``a`` is the mean candidate vector of the near ones, ``b`` the mean non-candidate vector
   ``1 − y_j`` of the far ones, and the enhanced labels are
   ``J_i = (α y_i + (1 − α − β) a + β b) ∘ y_i`` (only candidates keep a value).
3. **Model** (``PML_train.m``): with X the scaled features plus bias,
   ``H = sigmoid(XV)`` and the label Laplacian ``L = D − P`` of ``P_jk = J_j·J_k / ‖J_j‖²``,

       min ‖XW − J‖² + ‖XW − HU‖² + λ1‖W‖² + λ2 tr(W L Wᵀ) + λ3‖U‖² + λ4‖V‖²,

   by alternating: W exactly (the Sylvester equation
   ``2XᵀX W + W(λ1 I + λ2 (L + Lᵀ)/2) = Xᵀ(HU + J)``, ``lyap`` in the code), U exactly
   (``(λ3 I + HᵀH)⁺ Hᵀ XW``) and one gradient step on V (step 0.001, with half the gradient
   of the objective, as the code), from random U and V (``randn``), until the objective's
   relative decrease falls below 1e-3 after the fifth iteration (at most 200).
   Scores are ``XW`` min-max scaled per instance to [0, 1] (``mapminmax``); a label is
   predicted where its scaled score is at least 0.9 (``PML_test.m``).

**Solver.** ``XᵀX`` and ``(L + Lᵀ)/2`` are symmetric, so the Sylvester equation is
diagonal in the product of their eigenbases and each iteration's W costs two products;
with fewer training instances than features the same runs on ``XXᵀ`` (W = XᵀZ). The
decisions of stage 2 are taken by explicit rules rather than by rounding (see
:func:`enhance_labels`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.linalg
import scipy.special
from sklearn.base import BaseEstimator
from threadpoolctl import threadpool_limits

from pmlbench.core.checks import as_dense, check_feature_count, check_features, check_label_matrix
from pmlbench.core.parameters import Interval, Options, ValidatedParameters
from pmlbench.errors import NotApplicable, PmlbenchError
from pmlbench.methods._constraints import (
    BLAS_THREADS,
    BUDGET_NOTE,
    FLAG,
    NON_NEGATIVE,
    POSITIVE,
    SEED,
)
from pmlbench.numerics.gridpoints import groups_by, point_models

NEIGHBOURHOODS = ("code", "others")
# MATLAB's mapminmax treats a row whose gain would exceed this as constant (gain 1)
MAPMINMAX_MAX_GAIN = 1e14
# Stage 2 decides "S_ij at least / at most a threshold" with this absolute slack on the
# similarities (which lie in (0, 1]): a comparison that is a tie in exact arithmetic (the
# instance itself and exact duplicates when mu = 0, equal distances of 0/1 features) stays
# one whatever the last bits of the distances; rounding moves similarities by < 1e-11.
SIMILARITY_SLACK = 1e-9
# pairs closer than this fraction of ‖a‖² + ‖b‖² get their squared distance from the
# differences, not from the Gram matrix (which cancels all digits for near-duplicates)
_CLOSE_PAIR = 1e-4
_BLOCK_ENTRIES = 4_000_000  # distance entries held at once (32 MB of float64)
# Caps above which one tuned split exceeds the suite's budget (docs/protocol.md, "Budget";
# measurements in docs/scaling.md, "The one budget"): the work of the iterations allowed
# (multiply-adds, :func:`work`) and the number of features, over which the label enhancement
# computes n x n distances and every iteration its dense products. Tuned, corel16k001 (work
# 5.8e11, 500 features) took 36 times ML-kNN's CPU time; corel5k (7.2e11) 105 times, bibtex
# (9.6e11) 120 times, and the yeast GO sets (6139 features, work 4.5e11-2.6e12) 124-135.
MAX_WORK = 6.5e11
MAX_FEATURES = 5000
# Parameters that the scaled features and the W step's eigenbasis depend on, and those the
# enhanced labels depend on besides (fit_grid computes each once per setting).
FEATURE_PARAMETERS = ("scale_features", "blas_threads")
ENHANCEMENT_PARAMETERS = ("alpha", "beta", "mu", "neighbourhood", "enhance_candidates_only")


# ---------------------------------------------------------------------------------------
# MATLAB's mapminmax


def minmax_map(low: np.ndarray, high: np.ndarray, ymin: float, ymax: float):
    """``(offset, gain)`` of MATLAB's ``mapminmax`` from ``[low, high]`` to ``[ymin, ymax]``:
    ``y = (x − offset)·gain + ymin``. A constant (or nearly constant: gain > 1e14) row keeps
    gain 1 and offset ``ymin``, so it passes through unchanged."""
    span = high - low
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = (ymax - ymin) / span
    fix = ~np.isfinite(span) | (span == 0) | ~(np.abs(gain) <= MAPMINMAX_MAX_GAIN)
    return np.where(fix, ymin, low), np.where(fix, 1.0, gain)


def minmax_rows(raw: np.ndarray) -> np.ndarray:
    """Each row mapped to [0, 1] as ``mapminmax(Outputs, 0, 1)`` in ``PML_test.m`` (which
    works on rows: instances); a constant row passes through, as in MATLAB."""
    offset, gain = minmax_map(raw.min(axis=1), raw.max(axis=1), 0.0, 1.0)
    return (raw - offset[:, None]) * gain[:, None]


# ---------------------------------------------------------------------------------------
# stage 2: near-far neighbourhood label enhancement


def _exact_squared_distances(X: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``‖x_r − x_c‖²`` for the given pairs from the differences (no BLAS), in chunks."""
    out = np.empty(rows.size)
    step = max(1, _BLOCK_ENTRIES // max(X.shape[1], 1))
    for start in range(0, rows.size, step):
        stop = min(start + step, rows.size)
        diff = X[rows[start:stop]] - X[cols[start:stop]]
        out[start:stop] = np.einsum("ij,ij->i", diff, diff)
    return out


class _Distances:
    """Euclidean distances of the training rows, block by block of rows.

    Exact duplicates get distance 0 (also an instance to itself), pairs closer than
    ``_CLOSE_PAIR`` of ``‖a‖² + ‖b‖²`` are recomputed from their differences, the rest come
    from the Gram matrix of the centred rows: distances that do not depend on the BLAS kernel
    beyond relative rounding (ties of equal distances stay ties where the data make them
    exact: duplicates, 0/1 features)."""

    def __init__(self, X: np.ndarray):
        self.original = X
        self.X = X - X.mean(axis=0)
        self.norms = np.einsum("ij,ij->i", self.X, self.X)
        _, self.group = np.unique(X, axis=0, return_inverse=True)
        self.group = self.group.ravel()
        self.block = max(1, _BLOCK_ENTRIES // max(X.shape[0], 1))

    def blocks(self):
        n = self.X.shape[0]
        for start in range(0, n, self.block):
            stop = min(start + self.block, n)
            yield start, stop, self.rows(start, stop)

    def rows(self, start: int, stop: int) -> np.ndarray:
        sq_a, sq_b = self.norms[start:stop, None], self.norms[None, :]
        D2 = sq_a + sq_b - 2.0 * (self.X[start:stop] @ self.X.T)
        close = D2 < _CLOSE_PAIR * (sq_a + sq_b)
        same = self.group[start:stop, None] == self.group[None, :]
        close &= ~same
        r, c = np.nonzero(close)
        D2[r, c] = _exact_squared_distances(self.original, r + start, c)
        D2[same] = 0.0
        np.maximum(D2, 0.0, out=D2)
        return np.sqrt(D2, out=D2)


@dataclass
class Enhancement:
    """Output of :func:`enhance_labels` (stage 2)."""

    J: np.ndarray  # n x c enhanced labels
    width: float  # s, the mean nearest-other distance
    n_near: np.ndarray  # near neighbours per instance (before the empty-set fallback)
    n_far: np.ndarray  # far neighbours per instance
    near: np.ndarray | None = field(default=None, repr=False)  # n x n masks when kept
    far: np.ndarray | None = field(default=None, repr=False)


def enhance_labels(
    X: np.ndarray,
    Y: np.ndarray,
    alpha: float,
    beta: float,
    mu: float,
    *,
    neighbourhood: str = "code",
    candidates_only: bool = True,
    keep_masks: bool = False,
) -> Enhancement:
    """``LENF.m``: the near-far neighbourhood label enhancement of the candidates ``Y``.

    ``neighbourhood="code"`` takes neighbours among the instances 2..n, as ``LENF.m``'s loop
    ``for j = 2:N`` does: the instance itself counts (it is always near: S_ii = 1) and the
    first training instance is nobody's neighbour. ``"others"`` takes every instance but
    the one enhanced. An empty near (far) set is replaced by one neighbour with every label
    (every non-label), as the code does. ``candidates_only`` multiplies by ``Y`` at the end
    (the code's default; its comment offers dropping it to enhance every label).

    Decisions: the thresholds are compared with ``SIMILARITY_SLACK`` in favour of
    membership (``S_ij >= t_near − slack``, ``S_ij <= t_far + slack``), and the distances
    are exact for duplicates and the instance itself (:class:`_Distances`), so rounding of
    the distance products cannot move an instance in or out of a neighbourhood.
    """
    n, c = Y.shape
    if n < 2:
        raise PmlbenchError(
            f"pml_lenfn needs at least 2 training instances (a similarity width from each "
            f"instance's nearest other one), got {n}; use more training data"
        )
    Yf = Y.astype(np.float64)
    distances = _Distances(X)
    nearest = np.empty(n)
    for start, stop, D in distances.blocks():
        D[np.arange(stop - start), np.arange(start, stop)] = np.inf
        nearest[start:stop] = D.min(axis=1)
    # knn_S.m: the second smallest distance of each row (the first is the row's own 0)
    width = float(nearest.sum() / n)
    if not width > 0:
        raise PmlbenchError(
            "pml_lenfn: every training instance has an exact duplicate, so the similarity "
            "width (mean distance to the nearest other instance) is 0; deduplicate the "
            "features or use another method"
        )
    scale = 1.0 / (2.0 * width**2)
    allowed = np.ones(n, dtype=bool)
    if neighbourhood == "code":
        allowed[0] = False
    A = np.empty((n, c))
    B = np.empty((n, c))
    n_near = np.empty(n, dtype=np.int64)
    n_far = np.empty(n, dtype=np.int64)
    near_all = np.zeros((n, n), dtype=bool) if keep_masks else None
    far_all = np.zeros((n, n), dtype=bool) if keep_masks else None
    for start, stop, D in distances.blocks():
        S = np.exp(-D * scale)
        mn = S.max(axis=1, keepdims=True)
        mf = S.min(axis=1, keepdims=True)
        sigma = (mn - mf) * mu
        near = S >= (mn - sigma) - SIMILARITY_SLACK
        far = S <= (mf + sigma) + SIMILARITY_SLACK
        near &= allowed[None, :]
        far &= allowed[None, :]
        if neighbourhood == "others":
            rows = np.arange(stop - start)
            near[rows, rows + start] = False
            far[rows, rows + start] = False
        if near_all is not None and far_all is not None:
            near_all[start:stop], far_all[start:stop] = near, far
        # counts of 0/1 values: exact in any summation order
        A[start:stop] = near.astype(np.float64) @ Yf
        B[start:stop] = far.astype(np.float64) @ (1.0 - Yf)
        n_near[start:stop] = near.sum(axis=1)
        n_far[start:stop] = far.sum(axis=1)
    no_near, no_far = n_near == 0, n_far == 0
    A[no_near] = 1.0
    B[no_far] = 1.0
    A /= np.maximum(n_near, 1)[:, None]
    B /= np.maximum(n_far, 1)[:, None]
    J = alpha * Yf + (1.0 - beta - alpha) * A + beta * B
    if candidates_only:
        J *= Yf
    return Enhancement(J, width, n_near, n_far, near_all, far_all)


# ---------------------------------------------------------------------------------------
# stage 3: the linear model with nonlinear guidance


def label_laplacian(J: np.ndarray) -> np.ndarray:
    """``label_correlation.m``: ``L = diag(P 1) − P`` with ``P_jk = J_j·J_k / J_j·J_j``
    (a row of zeros for a label no instance keeps: its column of J is all zero)."""
    G = J.T @ J
    diag = np.diag(G).copy()
    empty = ~np.any(J != 0, axis=0)
    P = G / np.where(empty, 1.0, diag)[:, None]
    P[empty] = 0.0
    return np.diag(P.sum(axis=1)) - P


@dataclass
class TrainResult:
    """Output of :func:`train`."""

    W: np.ndarray  # (d+1) x c
    U: np.ndarray  # k x c
    V: np.ndarray  # (d+1) x k
    losses: list[float]
    form: str
    min_denominator: float  # smallest eigenvalue sum of the Sylvester operator


def sigmoid(A: np.ndarray) -> np.ndarray:
    """``ml_sigmoid``: 1 / (1 + exp(−A)), without overflow."""
    return scipy.special.expit(A)


def _sigmoid_slope(A: np.ndarray) -> np.ndarray:
    """``exp(−A) / (1 + exp(−A))²``, the sigmoid's derivative, evaluated at −|A| (it is even)
    so that it never overflows."""
    e = np.exp(-np.abs(A))
    return e / (1.0 + e) ** 2


def _u_step(H: np.ndarray, XW: np.ndarray, lambda3: float) -> np.ndarray:
    """``pinv(λ3 I + HᵀH) Hᵀ XW``. The matrix is symmetric positive semi-definite; MATLAB's
    ``pinv`` drops eigenvalues below k·‖M‖·eps. When λ3 exceeds that cut-off (bounded with
    the trace) nothing is dropped and a Cholesky solve gives the same; otherwise pinvh with
    MATLAB's cut-off."""
    k = H.shape[1]
    M = H.T @ H
    M[np.diag_indices_from(M)] += lambda3
    rhs = H.T @ XW
    if lambda3 > k * float(np.trace(M)) * np.finfo(float).eps:
        return scipy.linalg.cho_solve(scipy.linalg.cho_factor(M, check_finite=False), rhs)
    return scipy.linalg.pinvh(M, atol=0.0, rtol=k * np.finfo(float).eps) @ rhs


@dataclass
class FeatureBasis:
    """The eigenbasis of ``XᵀX = Q diag(θ) Qᵀ`` (primal) or of ``XXᵀ`` (dual) that the W step
    of :func:`train` works in, with ``P`` = ``XQ`` (primal) or ``Q √θ`` (dual): it depends on
    the features only, so a grid of fits on the same features computes it once."""

    dual: bool
    theta: np.ndarray
    Q: np.ndarray
    P: np.ndarray


def feature_basis(X: np.ndarray, form: str = "auto") -> FeatureBasis:
    """:class:`FeatureBasis` of the features with bias ``X``; ``form`` "auto" takes the dual
    when there are fewer rows than columns."""
    n, d = X.shape
    dual = n < d if form == "auto" else form == "dual"
    if dual:
        theta, Q = scipy.linalg.eigh(X @ X.T, check_finite=False, driver="evd")
        theta = np.clip(theta, 0.0, None)
        P = Q * np.sqrt(theta)  # X = P Sᵀ with orthonormal S = XᵀQ / √θ
    else:
        theta, Q = scipy.linalg.eigh(X.T @ X, check_finite=False, driver="evd")
        theta = np.clip(theta, 0.0, None)
        P = X @ Q
    return FeatureBasis(dual, theta, Q, P)


def label_basis(J: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(ℓ, R)`` with ``(L + Lᵀ)/2 = R diag(ℓ) Rᵀ``, L the label Laplacian of ``J``
    (:func:`label_laplacian`); it depends on the enhanced labels only."""
    L = label_laplacian(J)
    Lsym = 0.5 * (L + L.T)
    return scipy.linalg.eigh(Lsym, check_finite=False)


def train(
    X: np.ndarray,
    J: np.ndarray,
    U0: np.ndarray,
    V0: np.ndarray,
    *,
    lambda1: float,
    lambda2: float,
    lambda3: float,
    lambda4: float,
    step: float,
    max_iter: int,
    tol: float,
    form: str = "auto",
    features: FeatureBasis | None = None,
    labels: tuple[np.ndarray, np.ndarray] | None = None,
) -> TrainResult:
    """``PML_train.m`` from the start ``U0`` (k x c), ``V0`` ((d+1) x k) on the features
    with bias ``X`` (n x (d+1)) and the enhanced labels ``J`` (n x c).

    The W step solves ``2XᵀX W + W B = Xᵀ(F + J)``, B = λ1 I + λ2 (L + Lᵀ)/2, in the
    eigenbases of ``XᵀX = Q diag(θ) Qᵀ`` (or of ``XXᵀ`` when n < d+1: W = XᵀZ) and
    ``B = R diag(b) Rᵀ``: ``W = Q [(Qᵀ Xᵀ(F + J) R) / (2θ_i + b_j)] Rᵀ``, the unique solution
    that ``lyap`` computes whenever every ``2θ_i + b_j`` is nonzero. ``features``
    (:func:`feature_basis` of ``X`` with ``form``) and ``labels`` (:func:`label_basis` of
    ``J``) may be passed when already computed: they do not depend on the λs.
    """
    ell, R = label_basis(J) if labels is None else labels
    b = lambda1 + lambda2 * ell
    basis = feature_basis(X, form) if features is None else features
    dual, theta, Q, P = basis.dual, basis.theta, basis.Q, basis.P
    denominator = 2.0 * theta[:, None] + b[None, :]
    if not np.all(np.abs(denominator) > 0):
        raise PmlbenchError(
            "pml_lenfn: the W step's Sylvester equation is singular (2·eig(XᵀX) + "
            "eig(λ1 I + λ2 sym(L)) has a zero); raise method.lambda1"
        )
    # in these coordinates W = Q Ŵ Rᵀ (primal) and XW = P Ŵ Rᵀ, ‖W‖² = ‖Ŵ‖² and
    # tr(W L Wᵀ) = Σ Ŵ² ℓ; the dual's Ŵ is √θ times the coordinates of Z
    U, V = U0.copy(), V0.copy()
    XV = X @ V
    H = sigmoid(XV)
    F = H @ U
    losses: list[float] = []
    What = np.zeros((P.shape[1], J.shape[1]))
    for t in range(max_iter):
        What = ((P.T @ (F + J)) @ R) / denominator
        XW = P @ (What @ R.T)
        U = _u_step(H, XW, lambda3)
        HU = H @ U
        grad = X.T @ (_sigmoid_slope(XV) * ((HU - XW) @ U.T)) + lambda4 * V
        V = V - step * grad
        XV = X @ V
        H = sigmoid(XV)
        F = H @ U  # the loss's HU with the new V, and the next iteration's F
        loss = (
            _sq(XW - J)
            + _sq(XW - F)
            + lambda1 * _sq(What)
            + lambda2 * float(np.sum(What**2 * ell[None, :]))
            + lambda3 * _sq(U)
            + lambda4 * _sq(V)
        )
        losses.append(loss)
        if t >= 5 and (losses[-2] - loss) / losses[-2] < tol:
            break
    if dual:
        positive = theta > 0
        Z = np.zeros_like(What)
        Z[positive] = What[positive] / np.sqrt(theta[positive])[:, None]
        W = X.T @ (Q @ Z @ R.T)
    else:
        W = Q @ What @ R.T
    return TrainResult(
        W=W,
        U=U,
        V=V,
        losses=losses,
        form="dual" if dual else "primal",
        min_denominator=float(np.abs(denominator).min()),
    )


def _sq(A: np.ndarray) -> float:
    """Squared Frobenius norm."""
    return float(np.einsum("ij,ij->", A, A))


def _lift(value: float) -> str:
    """``value`` rounded up to three significant digits (a cap set to it admits the fit)."""
    unit = 10.0 ** (math.floor(math.log10(value)) - 2)
    return f"{math.ceil(value / unit) * unit:.3g}"


def work(n: int, d: int, c: int, k: int, max_iter: int) -> float:
    """Multiply-adds of ``max_iter`` iterations on n instances, d features, c labels and k
    hidden columns: per iteration two n x (d+1) by (d+1) x k products (XV, the gradient),
    two n x r by r x c ones (the W step, r = min(n, d+1)), HᵀH and four n x k by k x c."""
    r = min(n, d + 1)
    return float(max_iter) * n * (2.0 * (d + 1) * k + 2.0 * r * c + k * k + 4.0 * k * c)


class PMLLENFN(ValidatedParameters, BaseEstimator):
    """PML-LENFN (Chen et al., ACM MM 2024): near-far neighbourhood label enhancement of the
    candidates, then a linear classifier guided by a nonlinear sigmoid model, as the
    authors' ``main_PML.m`` with its defaults.

    Args:
        alpha: α, weight of an instance's own candidates in its enhanced labels (demo: 0.7),
            in [0, 1].
        beta: β, weight of the far neighbours' non-candidates (demo: 0.1), in [0, 1]; the
            near neighbours' candidates get 1 − α − β.
        mu: μ, the relative distance regulating factor: the near (far) neighbours are within
            the fraction μ of an instance's similarity range from its largest (smallest)
            similarity (demo: 0.2), in [0, 1].
        neighbourhood: "code" (the default: neighbours among training instances 2..n, the
            instance itself included, as ``LENF.m``'s loop) or "others" (every other
            instance); docs/methods/pml_lenfn.md.
        enhance_candidates_only: keep the enhanced values only on the candidates (the code's
            ``J = J.*Y``, default) or enhance every label (the code's commented option).
        lambda1: λ1, ridge weight on W (demo: 10), > 0.
        lambda2: λ2, weight of the label-correlation term tr(W L Wᵀ) (demo: 1), >= 0.
        lambda3: λ3, ridge weight on U (demo: 0.01), >= 0.
        lambda4: λ4, ridge weight on V (demo: 10), >= 0.
        n_hidden: k, columns of the nonlinear map's V (the demo: the number of labels,
            None); an integer >= 1.
        step: the gradient step on V (code: 0.001), > 0.
        max_iter: most iterations (demo: 200).
        tol: stop once the objective's relative decrease is below this, from the sixth
            iteration on (code: 1e-3), >= 0.
        threshold: ``predict`` keeps labels whose scaled score is at least this (code: 0.9).
        scale_features: map each feature to [-1, 1] with the training minimum and maximum
            first (``main_PML.m``; default true).
        max_work: largest ``max_iter x n x c x (min(n, d) + c)`` (training instances n,
            features d, labels c) ``fit`` accepts (None: no cap); above it ``fit`` refuses
            before any work: one split would exceed the suite's budget (docs/protocol.md,
            "Budget").
        max_features: the most features ``fit`` accepts (None: no cap); above it ``fit``
            refuses before any work, for the same budget.
        random_state: seeds the random start of U and V (standard normal, as ``randn``), an
            integer in [0, 2³²) or None; the runner fills in the split's seed.
        blas_threads: BLAS threads during fit and predict (None: the library default).
    """

    default_bipartition = {"rule": "method"}
    default_tuning_grid = {"lambda1": [10.0, 100.0, 1000.0]}
    parameter_constraints = {
        "alpha": [Interval(float, 0, 1)],
        "beta": [Interval(float, 0, 1)],
        "mu": [Interval(float, 0, 1)],
        "neighbourhood": [Options(NEIGHBOURHOODS)],
        "enhance_candidates_only": FLAG,
        "lambda1": POSITIVE,
        "lambda2": NON_NEGATIVE,
        "lambda3": NON_NEGATIVE,
        "lambda4": NON_NEGATIVE,
        "n_hidden": [None, Interval(int, 1, None)],
        "step": POSITIVE,
        "max_iter": [Interval(int, 1, None)],
        "tol": NON_NEGATIVE,
        "threshold": [Interval(float, 0, 1)],
        "scale_features": FLAG,
        "max_work": [None, Interval(float, 1, None)],
        "max_features": [None, Interval(int, 1, None)],
        "random_state": SEED,
        "blas_threads": BLAS_THREADS,
    }

    def __init__(
        self,
        alpha: float = 0.7,
        beta: float = 0.1,
        mu: float = 0.2,
        neighbourhood: str = "code",
        enhance_candidates_only: bool = True,
        lambda1: float = 10.0,
        lambda2: float = 1.0,
        lambda3: float = 0.01,
        lambda4: float = 10.0,
        n_hidden: int | None = None,
        step: float = 0.001,
        max_iter: int = 200,
        tol: float = 1e-3,
        threshold: float = 0.9,
        scale_features: bool = True,
        max_work: float | None = MAX_WORK,
        max_features: int | None = MAX_FEATURES,
        random_state: int | None = None,
        blas_threads: int | None = 1,
    ):
        self.alpha = alpha
        self.beta = beta
        self.mu = mu
        self.neighbourhood = neighbourhood
        self.enhance_candidates_only = enhance_candidates_only
        self.lambda1 = lambda1
        self.lambda2 = lambda2
        self.lambda3 = lambda3
        self.lambda4 = lambda4
        self.n_hidden = n_hidden
        self.step = step
        self.max_iter = max_iter
        self.tol = tol
        self.threshold = threshold
        self.scale_features = scale_features
        self.max_work = max_work
        self.max_features = max_features
        self.random_state = random_state
        self.blas_threads = blas_threads

    def initial_values(self, n_columns: int, n_labels: int) -> tuple[np.ndarray, np.ndarray]:
        """The random start of a fit: U (k x c) and V (n_columns x k), standard normal (as
        ``randn``), from ``random_state``; ``n_columns`` counts the bias. The code also
        draws a W first, which its first step overwrites unread; pmlbench draws none."""
        k = n_labels if self.n_hidden is None else int(self.n_hidden)
        rng = np.random.default_rng(self.random_state)
        U0 = rng.standard_normal((k, n_labels))
        V0 = rng.standard_normal((n_columns, k))
        return U0, V0

    def _refusal(self, n: int, d: int, c: int) -> str | None:
        if self.max_features is not None and d > self.max_features:
            return (
                f"pml_lenfn refuses {n} training instances x {d} features "
                f"(method.max_features = {self.max_features}): the label enhancement measures "
                f"n x n distances over the d features and every iteration multiplies the n x d "
                f"features, over the suite's budget ({BUDGET_NOTE}); set "
                f"method.max_features={d} (or null) to run it anyway"
            )
        if self.max_work is None:
            return None
        k = c if self.n_hidden is None else int(self.n_hidden)
        amount = work(n, d, c, k, int(self.max_iter))
        if amount <= self.max_work:
            return None
        return (
            f"pml_lenfn refuses {n} training instances x {d} features x {c} labels "
            f"(method.max_work = {self.max_work:.3g}): up to {self.max_iter} iterations, "
            f"each a few products of the n x d features with n x c matrices, {amount:.3g} "
            f"multiply-adds in all here, over the suite's budget ({BUDGET_NOTE}); set "
            f"method.max_work={_lift(amount)} (or null) to run it anyway"
        )

    def _check_parameters(self, X, Y) -> None:
        """Validated parameters and the cost cap, before any work."""
        self._validate_params()
        n = X.shape[0]
        shape: tuple[int, ...] = tuple(getattr(Y, "shape", ()))
        n_labels = shape[1] if len(shape) == 2 else 1
        refusal = self._refusal(n, X.shape[1] if len(X.shape) == 2 else 1, n_labels)
        if refusal is not None:
            raise NotApplicable(refusal)

    def fit(self, X, Y) -> PMLLENFN:
        """Scale the features, enhance the candidates (``LENF.m``), train (``PML_train.m``)."""
        self._check_parameters(X, Y)
        start = time.perf_counter()
        X, Y = _checked_data(X, Y)
        with threadpool_limits(self.blas_threads, user_api="blas"):
            features = self._features(X)
            enhanced = self._enhanced(features, Y, start)
            self._train(features, enhanced, Y.shape[1], start)
        return self

    def fit_grid(self, X, Y, points: Sequence[Mapping[str, Any]]) -> Iterator[tuple[int, PMLLENFN]]:
        """Every grid point fitted on the same training data (tuning's hook).

        Work that depends only on the features (their scaling and the eigenbasis of the W
        step, :class:`FeatureBasis`) is done once per ``scale_features`` and
        ``blas_threads``; the label enhancement and the label Laplacian's eigenbasis once per
        setting of :data:`ENHANCEMENT_PARAMETERS`; only ``PML_train.m``'s iterations run per
        point (from the point's own random start, as a fit from scratch). Each estimator
        yielded is identical to ``clone(self).set_params(**point).fit(X, Y)``.
        """
        models = point_models(self, points)
        for model in models:
            model._check_parameters(X, Y)
        X, Y = _checked_data(X, Y)
        groups = groups_by(models, FEATURE_PARAMETERS + ENHANCEMENT_PARAMETERS)
        features: dict[tuple, _Features] = {}
        for key, indices in groups.items():
            enhanced = None
            for index in indices:
                model, start = models[index], time.perf_counter()
                feature_key = key[: len(FEATURE_PARAMETERS)]
                with threadpool_limits(model.blas_threads, user_api="blas"):
                    if feature_key not in features:
                        features[feature_key] = model._features(X)
                    if enhanced is None:
                        enhanced = model._enhanced(features[feature_key], Y, start)
                    model._train(features[feature_key], enhanced, Y.shape[1], start)
                yield index, model

    def _features(self, X: np.ndarray) -> _Features:
        """Stage 1 (``main_PML.m``'s ``mapminmax``) and the W step's eigenbasis."""
        start = time.perf_counter()
        self.feature_map_ = (
            minmax_map(X.min(axis=0), X.max(axis=0), -1.0, 1.0) if self.scale_features else None
        )
        Xs = self._scale(X)
        Xb = np.hstack([Xs, np.ones((X.shape[0], 1))])
        return _Features(self.feature_map_, Xs, Xb, feature_basis(Xb), time.perf_counter() - start)

    def _enhanced(self, features: _Features, Y: np.ndarray, start: float) -> _Enhanced:
        """Stage 2 (``LENF.m``) and the label Laplacian's eigenbasis."""
        mark = time.perf_counter()
        enhancement = enhance_labels(
            features.Xs,
            Y,
            float(self.alpha),
            float(self.beta),
            float(self.mu),
            neighbourhood=self.neighbourhood,
            candidates_only=bool(self.enhance_candidates_only),
        )
        labels = label_basis(enhancement.J)
        return _Enhanced(enhancement, labels, time.perf_counter() - mark)

    def _train(self, features: _Features, enhanced: _Enhanced, n_labels: int, start: float) -> None:
        """Stage 3 (``PML_train.m``) from this estimator's random start; sets the fitted
        attributes."""
        mark = time.perf_counter()
        Xb, enhancement = features.Xb, enhanced.enhancement
        U0, V0 = self.initial_values(Xb.shape[1], n_labels)
        result = train(
            Xb,
            enhancement.J,
            U0,
            V0,
            lambda1=float(self.lambda1),
            lambda2=float(self.lambda2),
            lambda3=float(self.lambda3),
            lambda4=float(self.lambda4),
            step=float(self.step),
            max_iter=int(self.max_iter),
            tol=float(self.tol),
            features=features.basis,
            labels=enhanced.labels,
        )
        train_seconds = time.perf_counter() - mark
        self.feature_map_ = features.feature_map
        self.W_, self.U_, self.V_ = result.W, result.U, result.V
        self.enhanced_labels_ = enhancement.J
        # the fitted model's own scores on its training rows (PML_test.m's scaling), not J:
        # under uniform noise J ranks candidates by label rarity, false ones first
        # (docs/methods/pml_lenfn.md, "Disambiguation scores")
        with threadpool_limits(self.blas_threads, user_api="blas"):
            self.disambiguation_scores_ = minmax_rows(Xb @ result.W)
        self.losses_ = np.asarray(result.losses)
        self.n_features_in_ = features.Xs.shape[1]
        iterations = len(result.losses)
        self.diagnostics_ = {
            "iterations": iterations,
            "stopped_by_tol": iterations < int(self.max_iter) or _stopped(result.losses, self),
            "objective": float(f"{result.losses[-1]:.6g}"),
            "form": result.form,
            "similarity_width": round(enhancement.width, 6),
            "mean_near": round(float(enhancement.n_near.mean()), 3),
            "mean_far": round(float(enhancement.n_far.mean()), 3),
            "empty_near": int(np.count_nonzero(enhancement.n_near == 0)),
            "empty_far": int(np.count_nonzero(enhancement.n_far == 0)),
            "sylvester_min_denominator": float(f"{result.min_denominator:.3g}"),
            "features_seconds": round(features.seconds, 3),
            "enhancement_seconds": round(enhanced.seconds, 3),
            "train_seconds": round(train_seconds, 3),
            "fit_seconds": round(time.perf_counter() - start, 3),
        }

    def _scale(self, X: np.ndarray) -> np.ndarray:
        """``mapminmax('apply', ...)`` with the training map (``-1`` is its ``ymin``)."""
        if self.feature_map_ is None:
            return X
        offset, gain = self.feature_map_
        return (X - offset) * gain - 1.0

    def raw_scores(self, X) -> np.ndarray:
        """``[X, 1] W`` on the scaled features (n x c), before the per-instance scaling."""
        X = as_dense(check_features(X), dtype=np.float64)
        check_feature_count(X, self.n_features_in_, method="PML-LENFN")
        with threadpool_limits(self.blas_threads, user_api="blas"):
            return self._scale(X) @ self.W_[:-1] + self.W_[-1]

    def decision_function(self, X) -> np.ndarray:
        """The raw scores min-max scaled per instance to [0, 1] (``PML_test.m``)."""
        return minmax_rows(self.raw_scores(X))

    def predict(self, X) -> np.ndarray:
        """Labels whose scaled score is at least ``threshold`` (``PML_test.m``: >= 0.9)."""
        return (self.decision_function(X) >= self.threshold).astype(np.uint8)


def _stopped(losses: list[float], model: PMLLENFN) -> bool:
    """Whether the last iteration met the stopping test (it may be the last allowed)."""
    return len(losses) > 5 and (losses[-2] - losses[-1]) / losses[-2] < float(model.tol)


def _checked_data(X, Y) -> tuple[np.ndarray, np.ndarray]:
    """The dense float features and the checked candidate matrix."""
    X = as_dense(check_features(X), dtype=np.float64)
    return X, check_label_matrix(Y, what="candidate labels", n_rows=X.shape[0])


@dataclass
class _Features:
    """What a fit computes from the features alone (:meth:`PMLLENFN._features`)."""

    feature_map: tuple[np.ndarray, np.ndarray] | None
    Xs: np.ndarray  # scaled features
    Xb: np.ndarray  # scaled features and the bias column
    basis: FeatureBasis
    seconds: float


@dataclass
class _Enhanced:
    """The enhanced labels and their Laplacian's eigenbasis (:meth:`PMLLENFN._enhanced`)."""

    enhancement: Enhancement
    labels: tuple[np.ndarray, np.ndarray]
    seconds: float
