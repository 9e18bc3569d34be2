"""PMNDP: negative-driven propagations for PML (Zhong et al., IEEE TMM 2024).

"Negative Label Is Also Useful: Negative-Driven Propagations for Partial Multi-Label
Learning". The paper's full text could not be read while this module was written, so no
equation numbers are cited: the formulas below are the ones the authors' MATLAB code
(github zhongjingyu1/PMNDP, ``PMNDP/function/``) computes, and docs/methods/pmndp.md lists
where that code departs from what its own expressions suggest.

Two stages, on the training part only (the authors' ``PMNDP.m`` runs stage 1 on every
instance, test ones included, before its folds; pmlbench does not):

1. ``Truth_label_export.m``: propagated labels. With X (n x d), the candidate matrix Y, the
   non-candidate matrix Ȳ = 1 − Y, L the Laplacian of the instances' kNN graph
   (``constructW.m``: each instance and its k nearest others, heat-kernel weights
   ``exp(−‖x_i − x_j‖² / 2t²)``, t = 10⁴, symmetrised by the maximum) and R the q x q cosine
   distances between the columns of Ȳ (``pdist2(Ȳᵀ + eps, 'cosine')``):

   - H solves the Sylvester equation ``(XᵀX + μ1·J) H + H (μ2 R) = −XᵀȲ`` (``lyap``), J the
     all-ones d x d matrix;
   - ``P = (L + δI)⁻¹ (δ1 + γXH) − (δ(L + δI))⁻¹ Ȳ`` (the code's operator precedence: the
     negative part is scaled by 1/δ);
   - each row of P is min-max scaled and divided by its sum (+ eps): the confidences;
     an instance gets its top label and every label whose confidence exceeds ``tar``.

2. ``PMNDP_train.m``: a linear model W (d x q) fitted to the propagated labels Y* by FISTA on::

       ½‖XW − Y*‖² + β‖W‖₁ + ½α tr(WᵀL_f W) − ½αθ‖W − H‖² + λ tr(R* Wᵀ H)

   with L_f the Laplacian of the features' kNN graph (``constructW(X')``: features as points)
   and R* the cosine distances between the columns of Y*; started from the ridge solution
   ``(XᵀX + εI)⁻¹XᵀY*``, step 1/Lip with ``Lip = 2·sqrt(‖XᵀX‖₂² + ‖α(L_f − θ·J)‖₂²)``, at most
   100 iterations, stopped when the objective (with ½β on the ℓ1 term, as the code writes it)
   changes by less than 10⁻³ relative.

Scores are ``XW``; a label is predicted where its score exceeds 0.5 (``PMNDP_predict.m``).

**Decisions that rounding cannot flip.** Neighbours are ranked by squared distances rounded
to a grid of step τ (the power of two at or below 10⁻⁹ x the largest squared norm of the
points), ties by the lower index, each point's distance to itself exactly 0 (the authors'
``constructW`` ranks exact values the same way: ``min`` returns the first index). A row of
P whose range is within 10⁻⁹ of its largest magnitude is flat; labels whose confidence is
within 10⁻⁹ of the row's best are tied (the lowest index is the top label), and a confidence
within 10⁻⁹ relative of ``tar`` does not exceed it. Identical feature columns (all-zero ones
included) are merged exactly before the Sylvester solve (:func:`negative_sylvester`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from sklearn.base import BaseEstimator
from threadpoolctl import threadpool_limits

from pmlbench.core.checks import as_dense, check_feature_count, check_features, check_label_matrix
from pmlbench.core.parameters import Interval, Options, ValidatedParameters
from pmlbench.errors import NotApplicable
from pmlbench.methods._constraints import (
    BLAS_THREADS,
    BUDGET_NOTE,
    CAP,
    NON_NEGATIVE,
    POSITIVE,
    POSITIVE_INT,
    check_neighbours,
)
from pmlbench.numerics import shared_work
from pmlbench.numerics.matlab import MATLAB_EPS
from pmlbench.numerics.shared_work import SharedWorkFitting

HEAT_T = 1e4  # constructW's options.t in both of the authors' graphs
TIE_RTOL = 1e-9  # values this close (relative) are ties: see the module docstring
FORMULAS = ("code", "intended")
_BLOCK_ENTRIES = 8_000_000  # distance entries held at once (64 MB of float64)


def _grid_step(largest_square: float) -> float:
    """τ: the power of two at or below ``TIE_RTOL`` x the largest squared norm."""
    if largest_square <= 0:
        return 1.0
    return float(2.0 ** np.floor(np.log2(TIE_RTOL * largest_square)))


def _smallest_by_key(keys: np.ndarray, m: int) -> np.ndarray:
    """Column indices of the m smallest keys of each row, ordered by (key, column)."""
    kth = np.partition(keys, m - 1, axis=1)[:, m - 1 : m]
    rows, cols = np.nonzero(keys <= kth)
    order = np.lexsort((cols, keys[rows, cols], rows))
    rows, cols = rows[order], cols[order]
    starts = np.searchsorted(rows, np.arange(keys.shape[0]))
    keep = np.arange(rows.size) - starts[rows] < m
    return cols[keep].reshape(keys.shape[0], m)


def heat_knn_graph(
    squared_norms: np.ndarray, inner_rows: Callable[[int, int], np.ndarray], k: int
) -> sp.csr_matrix:
    """``constructW`` with ``NeighborMode='KNN'``, ``WeightMode='HeatKernel'``, t = 10⁴.

    Points are given by their squared norms and a function returning the rows
    ``start:stop`` of their inner-product matrix. Each point is linked to the k + 1 nearest
    points by (rounded squared distance, index), itself included at distance 0, with weight
    ``exp(−d² / 2t²)``; self links are dropped and the graph is symmetrised by the maximum.
    """
    m = squared_norms.size
    step = _grid_step(float(squared_norms.max(initial=0.0)))
    block = max(1, _BLOCK_ENTRIES // max(m, 1))
    rows, cols, weights = [], [], []
    for start in range(0, m, block):
        stop = min(start + block, m)
        local = np.arange(stop - start)
        D = inner_rows(start, stop) * -2.0
        D += squared_norms[start:stop, None]
        D += squared_norms[None, :]
        np.maximum(D, 0.0, out=D)
        D[local, local + start] = 0.0
        nearest = _smallest_by_key(np.round(D / step), k + 1)
        r = np.repeat(local, k + 1)
        c = nearest.ravel()
        keep = r + start != c
        rows.append(r[keep] + start)
        cols.append(c[keep])
        weights.append(np.exp(-D[r[keep], c[keep]] / (2.0 * HEAT_T**2)))
    S = sp.csr_matrix(
        (np.concatenate(weights), (np.concatenate(rows), np.concatenate(cols))), shape=(m, m)
    )
    return S.maximum(S.T).tocsr()


def laplacian(S: sp.csr_matrix) -> sp.csr_matrix:
    """``L = diag(sum(S)) − S``."""
    return (sp.diags(np.asarray(S.sum(axis=0)).ravel()) - S).tocsr()


def cosine_distances(columns: np.ndarray) -> np.ndarray:
    """``pdist2(M' + eps, M' + eps, 'cosine')`` for the columns of M (q x q), as Octave's
    statistics package computes it (``1 − x̂ŷᵀ``, clipped at 0); the diagonal is exactly 0."""
    U = columns + MATLAB_EPS
    U = U / np.sqrt(np.einsum("ij,ij->j", U, U))[None, :]
    R = U.T @ U
    np.subtract(1.0, R, out=R)
    np.maximum(R, 0.0, out=R)
    R = 0.5 * (R + R.T)
    np.fill_diagonal(R, 0.0)
    return R


@dataclass
class Sylvester:
    """Solution of ``A H + H B = C`` for symmetric A, B, with its separation."""

    H: np.ndarray
    separation: float  # min |λ_i(A) + λ_j(B)| / max |λ_i(A) + λ_j(B)|


def solve_symmetric_sylvester(A: np.ndarray, B: np.ndarray, C: np.ndarray) -> Sylvester:
    """``A H + H B = C`` through the eigendecompositions of the symmetric A and B.

    The same solution as Bartels-Stewart (``scipy.linalg.solve_sylvester``, Octave's
    ``lyap``), whose Schur forms of symmetric matrices are their eigendecompositions; about
    three times faster, and the eigenvalues give the conditioning for free.
    """
    a, U = scipy.linalg.eigh(A, check_finite=False)
    b, V = scipy.linalg.eigh(B, check_finite=False)
    denominator = a[:, None] + b[None, :]
    H = U @ (((U.T @ C) @ V) / denominator) @ V.T
    magnitude = np.abs(denominator)
    return Sylvester(H=H, separation=float(magnitude.min() / max(magnitude.max(), 1e-300)))


def identical_columns(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Classes of bitwise identical columns (all-zero ones among them): the first column of
    each class, and each column's class."""
    columns = np.ascontiguousarray(X.T)
    keys = columns.view(np.dtype((np.void, columns.dtype.itemsize * columns.shape[1])))
    _, first, classes = np.unique(keys.ravel(), return_index=True, return_inverse=True)
    return first, classes.ravel()


def negative_sylvester(
    X: np.ndarray, negative: np.ndarray, *, mu1: float, mu2: float, formula: str = "code"
) -> Sylvester:
    """H with ``(XᵀX + μ1·J) H + H (μ2 R) = −XᵀȲ`` (``μ1·I`` for ``formula="intended"``).

    Identical feature columns (all-zero ones on the training rows are the common case) give
    ``XᵀX`` null vectors ``e_i − e_j`` which the right-hand side does not touch, so H has no
    component along them: the rows of H of one class of identical columns are equal. The
    equation is solved on one coordinate per class (``H = QK`` with Q the normalised class
    indicators, ``QᵀAQ K + K B = −QᵀC``), the same solution without the zero eigenvalues of
    A whose near-coincidences with −eig(B) would amplify rounding (and so depend on the
    BLAS kernel): exactly what the full equation has in exact arithmetic.
    """
    first, classes = identical_columns(X)
    sizes = np.bincount(classes).astype(np.float64)
    roots = np.sqrt(sizes)
    Xq = X[:, first] * roots[None, :]  # X Q
    A = Xq.T @ Xq
    if formula == "intended":
        A[np.diag_indices_from(A)] += mu1
    else:
        A += mu1 * np.outer(roots, roots)  # Qᵀ J Q
    reduced = solve_symmetric_sylvester(A, mu2 * cosine_distances(negative), -(Xq.T @ negative))
    return Sylvester(H=reduced.H[classes] / roots[classes, None], separation=reduced.separation)


@dataclass
class Propagation:
    """Output of :func:`propagate` (``Truth_label_export.m``)."""

    labels: np.ndarray  # n x q uint8, the propagated labels Y*
    confidences: np.ndarray  # n x q, each row min-max scaled and divided by its sum
    position: np.ndarray  # n x q, P before the scaling
    H: np.ndarray  # d x q, the Sylvester solution
    separation: float
    flat_rows: int


def truth_labels(position: np.ndarray, tar: float) -> tuple[np.ndarray, np.ndarray, int]:
    """Confidences and labels from P (``Truth_label_export.m``'s last three loops).

    Explicit rules where the code's comparisons are exact ties: a row whose range is at most
    ``TIE_RTOL`` x its largest magnitude is flat (the code divides 0 by 0 there: confidences
    NaN, only the first label); the top label is the first whose scaled value is within
    ``TIE_RTOL`` of the row's maximum; a confidence exceeds ``tar`` when it is above
    ``tar·(1 + TIE_RTOL)``.
    """
    low = position.min(axis=1, keepdims=True)
    high = position.max(axis=1, keepdims=True)
    span = high - low
    flat = span <= TIE_RTOL * np.maximum(np.abs(low), np.abs(high))
    scaled = np.where(flat, 0.0, (position - low) / np.where(flat, 1.0, span))
    confidences = scaled / (scaled.sum(axis=1, keepdims=True) + MATLAB_EPS)
    labels = confidences > tar * (1.0 + TIE_RTOL)
    top = np.argmax(scaled >= 1.0 - TIE_RTOL, axis=1)  # flat rows: all False, so label 0
    labels[np.arange(position.shape[0]), top] = True
    return labels.astype(np.uint8), confidences, int(flat.sum())


def propagate(
    X: np.ndarray,
    Y: np.ndarray,
    *,
    k: int,
    delta: float,
    gamma: float,
    mu1: float,
    mu2: float,
    tar: float,
    formula: str = "code",
    work: SharedWork | None = None,
) -> Propagation:
    """Stage 1, ``Truth_label_export.m``, on the rows given (the training part).

    ``formula="intended"`` scales the negative propagation by δ (``δ(L + δI)⁻¹Ȳ``) and
    regularises the Sylvester equation with ``μ1·I`` instead of the all-ones ``μ1·J``.
    ``work`` holds what fits on the same X and Y share (:class:`SharedWork`); a fresh one
    otherwise.
    """
    work = SharedWork(X, Y) if work is None else work
    sylvester = work.sylvester(mu1, mu2, formula)
    position = work.position(k, delta, gamma, mu1, mu2, formula)
    labels, confidences, flat = truth_labels(position, tar)
    return Propagation(labels, confidences, position, sylvester.H, sylvester.separation, flat)


class SharedWork(shared_work.SharedWork):
    """What PMNDP's fits on one training set share (:mod:`pmlbench.numerics.shared_work`),
    each part once per distinct value of the parameters it depends on: both kNN graphs, the
    Sylvester solution H and XH, the factorised ``L + δI`` and the propagation, XᵀX, the step
    size and the ridge factorisation, and stage 2 per distinct set of propagated labels (for
    a grid over ``tar`` only the labels' threshold and stage 2's FISTA run per point).

    ``X``: dense float64 training features; ``Y``: their 0/1 candidate labels (stage 1 reads
    them; stage 2 alone may pass None).
    """

    def __init__(self, X: np.ndarray, Y: np.ndarray | None):
        # stage 2 alone has no candidate labels: Y stands in with no columns, which
        # :attr:`labels` refuses to hand to stage 1
        super().__init__(X, np.zeros((X.shape[0], 0), dtype=np.uint8) if Y is None else Y)
        self.has_labels = Y is not None

    @property
    def labels(self) -> np.ndarray:
        """The candidate labels; stage 1 needs them."""
        if not self.has_labels:
            raise ValueError("this shared work was made without candidate labels")
        return self.Y

    # stage 1 (Truth_label_export.m)
    def negative(self) -> np.ndarray:
        """Ȳ = 1 − Y."""
        return self._once(("negative",), lambda: 1.0 - self.labels.astype(np.float64))

    def instance_laplacian(self, k: int) -> sp.csr_matrix:
        """L of the instances' kNN graph."""

        def compute() -> sp.csr_matrix:
            X = self.X
            squared = np.einsum("ij,ij->i", X, X)
            return laplacian(heat_knn_graph(squared, lambda start, stop: X[start:stop] @ X.T, k))

        return self._once(("instance_laplacian", k), compute)

    def sylvester(self, mu1: float, mu2: float, formula: str) -> Sylvester:
        return self._once(
            ("sylvester", mu1, mu2, formula),
            lambda: negative_sylvester(self.X, self.negative(), mu1=mu1, mu2=mu2, formula=formula),
        )

    def classifier_outputs(self, mu1: float, mu2: float, formula: str) -> np.ndarray:
        """X H."""
        return self._once(
            ("XH", mu1, mu2, formula), lambda: self.X @ self.sylvester(mu1, mu2, formula).H
        )

    def propagation_solver(self, k: int, delta: float) -> spla.SuperLU:
        """``(L + δI)`` factorised (sparse, symmetric, positive definite)."""

        def compute() -> spla.SuperLU:
            L = self.instance_laplacian(k)
            M = (L + delta * sp.identity(L.shape[0], format="csr")).tocsc()
            return spla.splu(
                M,
                permc_spec="MMD_AT_PLUS_A",
                diag_pivot_thresh=0.0,
                options={"SymmetricMode": True},
            )

        return self._once(("solver", k, delta), compute)

    def position(
        self, k: int, delta: float, gamma: float, mu1: float, mu2: float, formula: str
    ) -> np.ndarray:
        """``P = (L + δI)⁻¹(δ1 + γXH) − s(L + δI)⁻¹Ȳ``, s = 1/δ (code) or δ (intended)."""

        def compute() -> np.ndarray:
            scale = delta if formula == "intended" else 1.0 / delta
            XH = self.classifier_outputs(mu1, mu2, formula)
            rhs = delta + gamma * XH - scale * self.negative()
            return self.propagation_solver(k, delta).solve(rhs)

        return self._once(("position", k, delta, gamma, mu1, mu2, formula), compute)

    # stage 2 (PMNDP_train.m)
    def gram(self) -> np.ndarray:
        """XᵀX."""
        return self._once(("gram",), lambda: self.X.T @ self.X)

    def feature_laplacian(self, k: int) -> sp.csr_matrix:
        """L_f of the features' kNN graph (features as points, from XᵀX)."""

        def compute() -> sp.csr_matrix:
            G = self.gram()
            return laplacian(
                heat_knn_graph(np.diag(G).copy(), lambda start, stop: G[start:stop], k)
            )

        return self._once(("feature_laplacian", k), compute)

    def lipschitz(self, k: int, alpha: float, theta: float, formula: str) -> float:
        """``2·sqrt(‖XᵀX‖₂² + ‖α(L_f − θ·J)‖₂²)`` (``θI`` for ``formula="intended"``)."""

        def compute() -> float:
            d = self.X.shape[1]
            L = self.feature_laplacian(k)
            shifted = alpha * (
                L.toarray() - (theta * np.eye(d) if formula == "intended" else theta)
            )
            norms = self.gram_norm(), spectral_norm_symmetric(shifted)
            return 2.0 * float(np.sqrt(norms[0] ** 2 + norms[1] ** 2))

        return self._once(("lipschitz", k, alpha, theta, formula), compute)

    def training(self, key: tuple, compute: Callable[[], Training]) -> Training:
        """Stage 2 for the propagated labels, H and parameters that ``key`` names."""
        return self._once(("training", *key), compute)

    def gram_norm(self) -> float:
        return self._once(("gram_norm",), lambda: spectral_norm_symmetric(self.gram()))

    def ridge_factor(self, enaf: float) -> tuple[np.ndarray, bool]:
        """The Cholesky factor of ``XᵀX + enaf·I``, for the ridge start."""

        def compute() -> tuple[np.ndarray, bool]:
            ridge = self.gram().copy()
            ridge[np.diag_indices_from(ridge)] += enaf
            return scipy.linalg.cho_factor(ridge, overwrite_a=True, check_finite=False)

        return self._once(("ridge", enaf), compute)


@dataclass
class Training:
    """Output of :func:`pmndp_train` (``PMNDP_train.m``)."""

    W: np.ndarray
    objective: list[float] = field(default_factory=list)
    changes: list[float] = field(default_factory=list)  # relative objective changes
    lipschitz: float = 0.0

    @property
    def iterations(self) -> int:
        return len(self.objective)


def spectral_norm_symmetric(M: np.ndarray) -> float:
    """``norm(M)`` (largest singular value) of a symmetric matrix: its largest |eigenvalue|."""
    values = scipy.linalg.eigvalsh(M, check_finite=False)
    return float(max(abs(values[0]), abs(values[-1]))) if values.size else 0.0


def pmndp_train(
    X: np.ndarray,
    Y: np.ndarray,
    H: np.ndarray,
    *,
    alpha: float,
    beta: float,
    lam: float,
    enaf: float,
    theta: float,
    k: int,
    max_iter: int = 100,
    tol: float = 1e-3,
    formula: str = "code",
    work: SharedWork | None = None,
) -> Training:
    """Stage 2, ``PMNDP_train.m``: FISTA on the objective in the module docstring.

    ``formula="intended"`` uses ``α(L_f − θI)`` in the Lipschitz constant (the gradient's own
    term) instead of ``α(L_f − θ·J)``, and β instead of ½β on the ℓ1 term of the objective
    that the stopping test reads (the step's soft threshold is β/Lip in both). ``work``
    holds what fits on the same X share (:class:`SharedWork`): XᵀX, the feature graph, the
    step size and the ridge factorisation; a fresh one otherwise.
    """
    work = SharedWork(X, None) if work is None else work
    G = work.gram()
    Yf = Y.astype(np.float64)
    L = work.feature_laplacian(k)
    R = cosine_distances(Yf)
    XtY = X.T @ Yf
    lip = work.lipschitz(k, alpha, theta, formula)
    # C-ordered, as scipy.linalg.solve returns it: the products' rounding follows the layout
    W = np.ascontiguousarray(
        scipy.linalg.cho_solve(work.ridge_factor(enaf), XtY, check_finite=False)
    )
    HR = H @ R
    l1_weight = beta if formula == "intended" else 0.5 * beta
    fit_constant = float(np.sum(Yf * Yf))
    GW, LW = G @ W, L @ W
    W_old, GW_old, LW_old = W, GW, LW
    bk = bk_old = 1.0
    previous = 1.0
    result = Training(W=W, lipschitz=lip)
    for iteration in range(1, max_iter + 1):
        c = (bk_old - 1.0) / bk
        Ws = W + c * (W - W_old)
        gradient = (
            GW
            + c * (GW - GW_old)
            - XtY
            + alpha * (LW + c * (LW - LW_old))
            - alpha * theta * (Ws - H)
            + lam * HR
        )
        step = Ws - gradient / lip
        bk_old, bk = bk, (1.0 + np.sqrt(4.0 * bk * bk + 1.0)) / 2.0
        W_old, GW_old, LW_old = W, GW, LW
        W = np.maximum(step - beta / lip, 0.0) - np.maximum(-step - beta / lip, 0.0)
        GW, LW = G @ W, L @ W
        objective = (
            0.5 * (float(np.sum(W * GW)) - 2.0 * float(np.sum(W * XtY)) + fit_constant)
            + l1_weight * float(np.abs(W).sum())
            + 0.5 * alpha * float(np.sum(W * LW))
            - 0.5 * alpha * theta * float(np.sum((W - H) ** 2))
            + lam * float(np.sum(W * HR))
        )
        change = abs((objective - previous) / previous)
        previous = objective
        result.objective.append(objective)
        result.changes.append(change)
        if change < tol and iteration >= 2:
            break
    result.W = W
    return result


class PMNDP(SharedWorkFitting, ValidatedParameters, BaseEstimator):
    """PMNDP (Zhong et al., IEEE TMM 2024): labels propagated from the candidates and, driven
    by them, from the non-candidates; then a sparse linear model fitted to the propagated
    labels with a feature graph and the propagation's Sylvester solution H as a prior.

    Args:
        k: neighbours in the instance graph and in the feature graph (demo: 5).
        delta: δ, the propagation's anchor weight in ``(L + δI)`` (demo: 0.5), > 0.
        gamma: γ, weight of the classifier term γXH in the propagation (demo: 0.1), >= 0.
        mu1: μ1, regulariser of the Sylvester equation's feature side (demo: 0.5), >= 0.
        mu2: μ2, weight of the label distances R in the Sylvester equation (demo: 0.5), >= 0.
        tar: a label is propagated to an instance when its confidence exceeds ``tar`` (or
            it is the instance's top label) (demo: 0.25), in [0, 1].
        alpha: α, weight of the feature-graph and H terms (demo: 2^2 = 4), >= 0.
        beta: β, ℓ1 weight on W (demo: 2^-10), >= 0.
        lam: λ, weight of the label-correlation term tr(R Wᵀ H) (demo: 2^-10), >= 0.
        enaf: ridge weight of the initial W (demo: 1), > 0.
        theta: θ, pull of W towards H (demo: 0.5), >= 0.
        max_iter: FISTA iterations at most (authors: 100).
        tol: stop when the objective changes by less than this, relative (authors: 1e-3).
        threshold: ``predict`` keeps labels whose score XW exceeds this (demo: 0.5).
        formula: "code" (what the authors' code computes) or "intended" (the three places
            where the code's expressions read differently from their evident intent; see
            docs/methods/pmndp.md).
        max_features: the largest feature count PMNDP takes on: it eigendecomposes three d x d
            matrices, holds about five (0.25 GB at 2500) and multiplies by one in each
            iteration. Larger inputs are refused before any work with
            :class:`~pmlbench.errors.NotApplicable` (None: no cap). The default 2500 admits
            bibtex (1,836 features: 3.0 times ML-kNN's time for a split) and refuses the
            yeast GO sets (6,139 features: 29 times ML-kNN's time, whose exact kNN on
            whole-number features takes about a second there).
        max_instances: the largest training set PMNDP takes on (the instance graph and its
            sparse factorisation); None: no cap. The default 10000 admits every bundled
            dataset; the largest, delicious (8,052 training instances), took 0.9 times
            ML-kNN's CPU time.
        blas_threads: BLAS threads during fit and predict (None: the library default).
    """

    work_type = SharedWork
    default_bipartition = {"rule": "method"}
    # tar: the authors' per-dataset range (select_parameter.m, commits f5844c4-86c743d: 0.1-0.8,
    # every value from 0.5 up keeping only the top label) with the demo's 0.25, widened below
    # for many labels (docs/methods/pmndp.md, "Tuning grid")
    default_tuning_grid = {"tar": [0.02, 0.05, 0.1, 0.25, 0.5]}
    parameter_constraints = {
        "k": POSITIVE_INT,
        "delta": POSITIVE,
        "gamma": NON_NEGATIVE,
        "mu1": NON_NEGATIVE,
        "mu2": NON_NEGATIVE,
        "tar": [Interval(float, 0, 1)],
        "alpha": NON_NEGATIVE,
        "beta": NON_NEGATIVE,
        "lam": NON_NEGATIVE,
        "enaf": POSITIVE,
        "theta": NON_NEGATIVE,
        "max_iter": POSITIVE_INT,
        "tol": NON_NEGATIVE,
        "threshold": [Interval(float)],
        "formula": [Options(FORMULAS)],
        "max_features": CAP,
        "max_instances": CAP,
        "blas_threads": BLAS_THREADS,
    }

    def __init__(
        self,
        k: int = 5,
        delta: float = 0.5,
        gamma: float = 0.1,
        mu1: float = 0.5,
        mu2: float = 0.5,
        tar: float = 0.25,
        alpha: float = 4.0,
        beta: float = 2.0**-10,
        lam: float = 2.0**-10,
        enaf: float = 1.0,
        theta: float = 0.5,
        max_iter: int = 100,
        tol: float = 1e-3,
        threshold: float = 0.5,
        formula: str = "code",
        max_features: int | None = 2500,
        max_instances: int | None = 10000,
        blas_threads: int | None = 1,
    ):
        self.k = k
        self.delta = delta
        self.gamma = gamma
        self.mu1 = mu1
        self.mu2 = mu2
        self.tar = tar
        self.alpha = alpha
        self.beta = beta
        self.lam = lam
        self.enaf = enaf
        self.theta = theta
        self.max_iter = max_iter
        self.tol = tol
        self.threshold = threshold
        self.formula = formula
        self.max_features = max_features
        self.max_instances = max_instances
        self.blas_threads = blas_threads

    def _refuse_over_caps(self, n: int, d: int) -> None:
        if self.max_features is not None and d > self.max_features:
            raise NotApplicable(
                f"PMNDP on {d:,} features eigendecomposes three {d:,} x {d:,} matrices and "
                f"multiplies by one in each of up to {self.max_iter} iterations, over "
                f"method.max_features={self.max_features} (set for the suite's budget, "
                f"{BUDGET_NOTE}); set method.max_features=null to run it anyway"
            )
        if self.max_instances is not None and n > self.max_instances:
            raise NotApplicable(
                f"PMNDP on {n:,} training instances factorises a {n:,} x {n:,} graph "
                f"Laplacian, over method.max_instances={self.max_instances} (set for the suite's "
                f"budget, {BUDGET_NOTE}; measured up to 8,052 instances); set "
                "method.max_instances=null to run it anyway"
            )

    def _checked(self, X, Y) -> tuple[np.ndarray, np.ndarray]:
        """Validated parameters and inputs (dense float64 features, 0/1 labels); refusals
        before any work."""
        self._validate_params()
        X = check_features(X)
        Y = check_label_matrix(Y, what="candidate labels", n_rows=X.shape[0])
        n, d = X.shape
        self._refuse_over_caps(n, d)
        k = int(self.k)
        check_neighbours(k, n)
        check_neighbours(k, d, data="the feature graph (features as points)")
        return as_dense(X, dtype=np.float64), Y

    def _fit(self, work: SharedWork, start: float) -> None:
        """Propagate labels on the training rows (stage 1), then fit W to them (stage 2)."""
        X, Y = work.X, work.labels
        d = X.shape[1]
        k = int(self.k)
        formula = str(self.formula)
        stage1 = propagate(
            X,
            Y,
            k=k,
            delta=float(self.delta),
            gamma=float(self.gamma),
            mu1=float(self.mu1),
            mu2=float(self.mu2),
            tar=float(self.tar),
            formula=formula,
            work=work,
        )
        train: dict[str, Any] = {
            "alpha": float(self.alpha),
            "beta": float(self.beta),
            "lam": float(self.lam),
            "enaf": float(self.enaf),
            "theta": float(self.theta),
            "k": k,
            "max_iter": int(self.max_iter),
            "tol": float(self.tol),
            "formula": formula,
        }
        # stage 2 reads stage 1's labels and H only: points that propagate the same labels
        # (every tar above the confidences on many labels) share one stage 2
        key = (stage1.labels.tobytes(), float(self.mu1), float(self.mu2), *train.values())
        stage2 = work.training(
            key, lambda: pmndp_train(X, stage1.labels, stage1.H, **train, work=work)
        )
        self.W_ = stage2.W
        self.H_ = stage1.H
        self.propagated_labels_ = stage1.labels
        self.disambiguation_scores_ = stage1.confidences
        self.objective_ = stage2.objective
        self.n_features_in_ = d
        propagated = stage1.labels.astype(bool)
        candidates = Y.astype(bool)
        kept = int((propagated & candidates).sum())
        tested = stage2.changes[1:]  # the stopping test is not read in the first iteration
        tol = float(self.tol)
        margin = min((abs(c - tol) / tol for c in tested), default=float("inf")) if tol else None
        self.diagnostics_ = {
            "formula": formula,
            "propagated_labels": int(propagated.sum()),
            "candidates_kept": round(kept / max(int(candidates.sum()), 1), 4),
            "off_candidates": int((propagated & ~candidates).sum()),
            "flat_rows": stage1.flat_rows,
            "sylvester_separation": float(f"{stage1.separation:.3g}"),
            "iterations": stage2.iterations,
            "converged": bool(stage2.iterations >= 2 and stage2.changes[-1] < self.tol),
            # how far the stopping test was from flipping, relative to tol (None: never read)
            "stop_margin": float(f"{margin:.3g}") if margin not in (None, float("inf")) else None,
            "fit_seconds": round(time.perf_counter() - start, 3),
        }

    def decision_function(self, X) -> np.ndarray:
        """``X W`` (n x q), as ``PMNDP_predict.m`` scores."""
        X = check_features(X)
        check_feature_count(X, self.n_features_in_, method="PMNDP")
        with threadpool_limits(self.blas_threads, user_api="blas"):
            return np.asarray(X @ self.W_)

    def predict(self, X) -> np.ndarray:
        """Labels whose score is strictly above ``threshold`` (the code's rule, 0.5)."""
        return (self.decision_function(X) > self.threshold).astype(np.uint8)
