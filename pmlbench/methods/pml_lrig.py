"""PML-LRIG: local reconstruction and indirect guidance for PML (Chen et al., 2025).

"Partial Multi-Label Learning with Local Reconstruction and Indirect Guidance", by the
authors of PML-PLR; the paper was under review when this module was written and could not be
read, so no equation numbers are cited: the formulas below are what the authors' MATLAB code
(github CcAmbiguous/PML-LRIG: ``demo.m``, ``PML_LR.m``, ``PML_IG.m``,
``functions/Kernel_mapping.m``, ``functions/Feature_similarity.m``) computes, and
docs/methods/pml_lrig.md lists where pmlbench departs from it and by how much.

Per training split (``demo.m``): the features are min-max scaled to [-1, 1] per feature on
the training rows (``mapminmax``), then two stages.

1. **Local reconstruction** (``PML_LR.m``): label confidences D (n x q) from the candidates Y.
   ``A = RRᵀ`` marks the pairs of instances in one k-means cluster (q clusters); ``N`` the
   k + 1 nearest instances of each (itself included), ``Q`` the squared distances and
   ``S = exp(−Q/σ²)`` with σ the mean squared distance to the second nearest. From
   ``S_new = N ⊙ (S + A)`` and ``D = Y``, five rounds of::

       S     ← S ⊙ (N ⊙ S_new) ⊘ (N ⊙ (A + S) + Q + eps)
       S_new ← S_new ⊙ (N ⊙ (A + S) + DYᵀ/k) ⊘ (S_new + S_new Y Yᵀ/k² + eps)
       D     ← min(S_new Y / k, 1) on the candidates, 0 elsewhere

   Every matrix but DYᵀ and S_new YYᵀ is zero off N after the first round (the updates are
   multiplicative), so each round costs O(n k q) here: the n x n matrices are never formed.

2. **Indirect guidance** (``PML_IG.m``) on kernel features X (n x h: RBF on min(5d, n) random
   training rows as anchors, width the mean squared training-anchor distance, centred on the
   training rows, plus a column of ones; ``Kernel_mapping.m``). The loss the code evaluates::

       ‖XHM − D‖² + λ(‖M‖² + ‖H‖²) + α(‖DP − F‖² + ‖FFᵀ − δDDᵀ‖²) + β‖D − FC‖²
           + γ(tr(HᵀL_k H) + 2 tr(M L_c1 Mᵀ + M L_c2 Mᵀ))

   H (h x l, l = ⌈ratio·h⌉) and M (l x q) a factored linear model on the kernel features,
   L_k the Laplacian of the features' cosine kNN graph (``Feature_similarity.m``), F the
   disambiguated labels, C (q x q) a label correlation started at the cosine similarities of
   D's columns, L_c1 and L_c2 its Laplacians by column and by row sums, P orthogonal,
   δ = ‖F‖²/‖D‖². From F = D and a standard normal M, each iteration:

   - H: ``(γ T L_k) H + H (MMᵀ + λI) = T XᵀD Mᵀ`` with ``T = pinv(XᵀX)`` (the code's
     Sylvester equation, whose first coefficient carries T where the loss's gradient has
     ``XᵀX H MMᵀ``);
   - M: ``(XH)ᵀ(XH) M + M (λI + γ(L_c1 + L_c2)) = (XH)ᵀD``;
   - P: the polar factor ``VUᵀ`` of ``FᵀD = UΣVᵀ``;
   - F: ``F ← F ⊙ B_F ⊘ A_F − max(F − D, 0) ⊙ D ⊘ A_F`` with
     ``A_F = 4αFFᵀF + 2αF + 2βFCCᵀ`` and ``B_F = 4αδDDᵀF + 2αDP + 2βDCᵀ``, then δ;
   - C: ``C ← C ⊙ 2βFᵀD ⊘ (2βFᵀFC + γO + eps)``, O the squared distances between M's columns;

   at most 20 iterations; from the sixth on it stops as soon as the loss did not grow by
   1e-4 of its previous value (the code's test is signed). Scores are ``X W`` with
   ``W = HM``; a label is predicted where its score is at least 0.5 (``PML_test.m``).

**Linear algebra.** ``T = pinv(XᵀX)`` is never formed: with the thin SVD ``X = U S Vᵀ`` over
the singular values kept (``s²`` above MATLAB's ``pinv`` tolerance ``h·eps(s_max²)``, or
``rtol·s_max²``), H has no component outside ``range(V)`` and ``H = VZ`` with Z solving the
r x r equation ``γ S⁻²(VᵀL_kV) Z + Z(MMᵀ + λI) = S⁻¹UᵀD Mᵀ``. Its first coefficient does not
change between iterations: its real Schur form is computed once per fit (per training set
in ``fit_grid``, scaled by γ), and each iteration diagonalises the symmetric ``MMᵀ + λI`` and
solves a quasi-triangular Sylvester equation (LAPACK ``trsyl``), O(r²l). XH, ‖H‖ and
``tr(HᵀL_kH)`` come from ``U S Z``, ‖Z‖ and ``VᵀL_kV``; ``FFᵀF``, ``DDᵀF`` and
``‖FFᵀ − δDDᵀ‖²`` from q x q products, so no n x n matrix is formed anywhere. F starts at D
and its multiplicative update keeps a zero a zero, so F and D are both zero off D's support
(the candidates stage 1 kept): every product with F or D is a sparse product over that
support (:class:`CandidateSupport`, scipy's sparse kernels, no BLAS), nnz(D)·q work where a
dense product takes n·q² (on delicious nnz(D)/(nq) is about 4 %); ``FᵀF`` and ``FᵀD`` are
taken once per F and reused by the next iteration's P and F steps, and ``DᵀF = (FᵀD)ᵀ``.

**Decisions that rounding cannot flip.** The instances' neighbours come from pmlbench's exact
kNN search (:func:`pmlbench.numerics.neighbors.kneighbors`: MATLAB's stable sort of the exact
squared distances, ties to the lower index), the k-means groups from
:func:`pmlbench.numerics.kmeans.kmeans_labels`. The feature graph ranks cosine similarities
computed with BLAS and measures again, without BLAS, those within 1e-9 of each other near
the cut, ordering ties as the code's ascending stable sort does (the highest index counts as
largest); identical kernel columns have similarity exactly 1 and the bias column exactly 0
with every centred kernel column (both hold in exact arithmetic).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.linalg.lapack import dtrsyl
from sklearn.base import BaseEstimator
from threadpoolctl import threadpool_limits

from pmlbench.core.checks import as_dense, check_feature_count, check_features, check_label_matrix
from pmlbench.core.parameters import Interval, ValidatedParameters
from pmlbench.errors import NotApplicable, PmlbenchError
from pmlbench.methods._constraints import (
    BLAS_THREADS,
    BUDGET_NOTE,
    CAP,
    NON_NEGATIVE,
    POSITIVE,
    POSITIVE_INT,
    SEED,
    check_neighbours,
)
from pmlbench.numerics import shared_work
from pmlbench.numerics.exact import row_groups
from pmlbench.numerics.kernel_features import KernelMap, constant_features, minmax_fit, n_anchors
from pmlbench.numerics.kmeans import kmeans_labels
from pmlbench.numerics.knn_graph import nearest_rows
from pmlbench.numerics.linalg import thin_svd
from pmlbench.numerics.matlab import MATLAB_EPS
from pmlbench.numerics.shared_work import SharedWorkFitting

# cosine similarities within this of each other near the feature graph's cut are measured
# again without BLAS (a BLAS dot product of length n errs by about n·2⁻⁵³ relative)
COSINE_MARGIN = 1e-9
# The order h of the kernel features' Gram matrix (anchors + bias) fitted by default. A tuned
# split's CPU time grows as h³ (SVD, Schur form, H steps): 49.7 times ML-kNN's at h = 2496
# (corel5k), 95.4 times at h = 3070 (yeastbp); 60 times falls near h = 2650
# (docs/methods/pml_lrig.md, "Cost").
MAX_ORDER = 2600


# ---------------------------------------------------------------- preprocessing (demo.m)


def minmax_apply(X: np.ndarray, low: np.ndarray, span: np.ndarray) -> np.ndarray:
    """``mapminmax``: each feature mapped linearly to [-1, 1] on the training rows (test rows
    may fall outside), in its order of operations, ``(x − min)·gain − 1`` with
    ``gain = 2/range``. A feature constant on the training rows (or whose gain would exceed
    1e14) passes through unchanged, as ``mapminmax`` leaves it (gain 1, offset −1:
    ``(x + 1) − 1``), so ``demo.m``'s NaN-to-0 step finds no NaN."""
    with np.errstate(divide="ignore"):
        gain = 2.0 / span
    constant = constant_features(span)
    return (X - np.where(constant, -1.0, low)) * np.where(constant, 1.0, gain) - 1.0


# ---------------------------------------------------------------- stage 1 (PML_LR.m)


@dataclass
class Reconstruction:
    """Output of :func:`local_reconstruction`: D and the graph it was reconstructed on."""

    D: np.ndarray  # n x q label confidences
    neighbours: np.ndarray  # n x (k + 1) column indices of N's ones, nearest first
    distances: np.ndarray  # n x (k + 1) squared distances Q on N
    same_cluster: np.ndarray  # n x (k + 1) A on N
    S: np.ndarray  # n x (k + 1) the final S on N (zero elsewhere)
    S_new: np.ndarray  # n x (k + 1) the final S_new on N (zero elsewhere)
    width: float  # σ: the mean squared distance to the second nearest instance


def _gathered_products(P: np.ndarray, Y: np.ndarray, neighbours: np.ndarray) -> np.ndarray:
    """``(P Yᵀ)[i, neighbours[i, t]]`` for every i and t: row-wise dot products, no BLAS."""
    out = np.empty(neighbours.shape)
    for t in range(neighbours.shape[1]):
        out[:, t] = np.einsum("ij,ij->i", P, Y[neighbours[:, t]])
    return out


def _rows_times(weights: np.ndarray, Y: np.ndarray, neighbours: np.ndarray) -> np.ndarray:
    """``W Y`` for the n x n W whose row i holds ``weights[i]`` at ``neighbours[i]``."""
    out = np.zeros((neighbours.shape[0], Y.shape[1]))
    for t in range(neighbours.shape[1]):
        out += weights[:, t, None] * Y[neighbours[:, t]]
    return out


def local_reconstruction(
    X: np.ndarray, Y: np.ndarray, clusters: np.ndarray, *, k: int, rounds: int = 5
) -> Reconstruction:
    """``PML_LR.m`` on the N support (module docstring, stage 1).

    ``X`` the scaled training features, ``Y`` their 0/1 candidates, ``clusters`` each
    instance's k-means group. N's ones are each instance's k + 1 nearest by (exact squared
    distance, index), so itself first unless an identical row precedes it, as the code's
    stable ``sort`` of ``pdist2`` ranks them; N, Q and σ are those of the ``knn_S.m`` graph
    (:func:`pmlbench.numerics.knn_graph.nearest_rows`), weighted here ``exp(−Q/σ²)``.
    """
    Yf = np.asarray(Y, dtype=np.float64)
    neighbours, Q, width = nearest_rows(X, k, method="pml_lrig")
    A = (clusters[:, None] == clusters[neighbours]).astype(np.float64)
    S = np.exp(-Q / width**2)
    S_new = S + A
    D = Yf.copy()
    for _ in range(rounds):
        S = S * S_new / ((A + S) + Q + MATLAB_EPS)
        numerator = (A + S) + _gathered_products(D, Yf, neighbours) / k
        SY = _rows_times(S_new, Yf, neighbours)
        S_new = (
            S_new
            * numerator
            / ((S_new + _gathered_products(SY, Yf, neighbours) / k**2) + MATLAB_EPS)
        )
        D = _rows_times(S_new, Yf, neighbours) / k
        np.minimum(D, 1.0, out=D)
        D[Yf == 0] = 0.0
    return Reconstruction(D, neighbours, Q, A, S, S_new, width)


# ---------------------------------------------------------------- the feature graph


def _pair_cosines(
    K: np.ndarray, norms: np.ndarray, groups: np.ndarray, rows: np.ndarray, cols: np.ndarray
) -> np.ndarray:
    """Cosine similarities of the column pairs (rows[t], cols[t]) of K without BLAS, with the
    exact values of :func:`cosine_similarities` where they apply."""
    out = np.empty(rows.size)
    chunk = max(1, 4_000_000 // max(K.shape[0], 1))
    for start in range(0, rows.size, chunk):
        a, b = rows[start : start + chunk], cols[start : start + chunk]
        out[start : start + chunk] = np.sum(K[:, a] * K[:, b], axis=0)
    denominator = norms[rows] * norms[cols]
    out = out / np.where(denominator == 0, 1.0, denominator)
    return _exact_cosines(out, norms, groups, rows, cols, K.shape[1] - 1)


def _exact_cosines(
    values: np.ndarray,
    norms: np.ndarray,
    groups: np.ndarray,
    rows: np.ndarray,
    cols: np.ndarray,
    bias: int,
) -> np.ndarray:
    """Identical columns: 1 (0 if zero); the bias column against a centred one: 0."""
    values = np.where(groups[rows] == groups[cols], np.where(norms[rows] > 0, 1.0, 0.0), values)
    return np.where((rows == bias) != (cols == bias), 0.0, values)


def cosine_similarities(K: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``Feature_similarity.m``'s ``dist``: cosine similarities of the columns of K (h x h),
    ``A/B`` with ``B = 1`` where a norm is 0, from one BLAS product; identical columns have
    exactly 1 (0 if they are zero) and the bias column (the last) exactly 0 with every other
    (the kernel columns are centred on the training rows). Also the norms and the classes
    of identical columns."""
    norms = np.sqrt(np.einsum("ij,ij->j", K, K))
    groups = row_groups(np.ascontiguousarray(K.T))
    denominator = np.outer(norms, norms)
    denominator[denominator == 0] = 1.0
    cosines = (K.T @ K) / denominator
    h = K.shape[1]
    identical = groups[:, None] == groups[None, :]
    cosines[identical] = np.where(norms > 0, 1.0, 0.0)[np.nonzero(identical)[0]]
    cosines[-1, :-1] = 0.0
    cosines[:-1, -1] = 0.0
    if h and norms[-1] > 0:
        cosines[-1, -1] = 1.0
    return cosines, norms, groups


def feature_laplacian(K: np.ndarray, k: int) -> tuple[sp.csr_matrix, np.ndarray]:
    """``Feature_similarity.m``: ``L_k = diag(rowsum(K̃)) − K̃`` (h x h, not symmetric).

    Row i of K̃ holds the cosine similarities of column i to the columns at positions
    h−1, ..., h−k−1 of the row sorted ascending with ties in index order (MATLAB's stable
    ``sort``): in the order (similarity descending, index descending), the k + 1 after the
    first, which is the column itself unless an identical column has a higher index. Values
    within :data:`COSINE_MARGIN` of each other near the cut are measured again without BLAS
    (:func:`_pair_cosines`) before they are ordered. The diagonal of K̃ cancels in L_k.
    Returns L_k and the h x (k + 1) selected columns.
    """
    cosines, norms, groups = cosine_similarities(K)
    h = cosines.shape[0]
    m = k + 2
    keys = -cosines
    kth = np.partition(keys, m - 1, axis=1)[:, m - 1 : m]
    rows, cols = np.nonzero(keys <= kth + COSINE_MARGIN)
    values = keys[rows, cols]
    order = np.lexsort((-cols, values, rows))
    rows, cols, values = rows[order], cols[order], values[order]
    close = (rows[1:] == rows[:-1]) & (values[1:] - values[:-1] <= COSINE_MARGIN)
    run = np.cumsum(np.concatenate([[True], ~close])) - 1
    again = np.bincount(run)[run] > 1
    if again.any():
        values[again] = -_pair_cosines(K, norms, groups, rows[again], cols[again])
    order = np.lexsort((-cols, np.where(again, values, 0.0), run))
    rows, cols, values = rows[order], cols[order], values[order]
    starts = np.searchsorted(rows, np.arange(h))
    position = np.arange(rows.size) - starts[rows]
    chosen = (position >= 1) & (position < m)
    rows, cols, weights = rows[chosen], cols[chosen], -values[chosen]
    off = rows != cols
    W = sp.csr_matrix((weights[off], (rows[off], cols[off])), shape=(h, h))
    L = sp.diags(np.asarray(W.sum(axis=1)).ravel()) - W
    return sp.csr_matrix(L), cols.reshape(h, k + 1)


# ---------------------------------------------------------------- stage 2 (PML_IG.m)


def pinv_tolerance(s_max: float, h: int, rtol: float | None) -> float:
    """The eigenvalue of ``XᵀX`` at or below which ``pinv`` treats it as zero: MATLAB's
    ``max(size(A))·eps(norm(A))`` for ``A = XᵀX`` (h x h, norm ``s_max²``), or
    ``rtol·s_max²``."""
    top = s_max * s_max
    return float(rtol * top) if rtol is not None else float(h * np.spacing(top))


@dataclass
class FeatureSide:
    """What the H step needs from the kernel features X (n x h) and L_k alone, computed once:
    the thin SVD ``X = U S Vᵀ`` over the kept singular values (r of them), ``VᵀL_kV`` and the
    real Schur form ``Q T Qᵀ`` of ``S⁻²VᵀL_kV`` (the H step's first coefficient over γ)."""

    U: np.ndarray  # n x r
    s: np.ndarray  # r
    V: np.ndarray  # h x r
    VLV: np.ndarray  # r x r, VᵀL_kV
    T: np.ndarray  # r x r quasi-triangular
    Q: np.ndarray  # r x r orthogonal
    h: int
    smallest_kept: float  # over s_max²: the smallest eigenvalue of XᵀX kept
    largest_dropped: float  # ... and the largest treated as zero (0: none)
    cutoff: float  # the tolerance over s_max²

    @classmethod
    def of(cls, X: np.ndarray, L: sp.csr_matrix, rtol: float | None) -> FeatureSide:
        U, s, Vt = thin_svd(X)
        h = X.shape[1]
        tol = pinv_tolerance(float(s[0]) if s.size else 0.0, h, rtol)
        keep = s * s > tol
        top = float(s[0] * s[0]) if s.size and s[0] > 0 else 1.0
        ratios = s * s / top
        U, s, V = U[:, keep], s[keep], Vt[keep].T
        VLV = V.T @ np.asarray(L @ V)
        T, Q = scipy.linalg.schur(VLV / (s * s)[:, None], output="real", check_finite=False)
        return cls(
            U=U,
            s=s,
            V=V,
            VLV=VLV,
            T=T,
            Q=Q,
            h=h,
            smallest_kept=float(ratios[keep].min()) if keep.any() else 0.0,
            largest_dropped=float(ratios[~keep].max()) if (~keep).any() else 0.0,
            cutoff=tol / top,
        )

    @property
    def rank(self) -> int:
        return int(self.s.size)


SYLVESTER_BLOCK = 96  # rows of T per block in :func:`shifted_schur_solve`
SYLVESTER_COLUMNS = 32  # ... and columns of the right-hand side per LAPACK call


def shifted_schur_solve(T: np.ndarray, b: np.ndarray, C: np.ndarray) -> np.ndarray:
    """Y with ``T Y + Y diag(b) = C`` for an upper quasi-triangular T (a real Schur form).

    Bartels-Stewart's back substitution by blocks of rows: the coupling to the rows below a
    block is one matrix product (BLAS 3), the block itself LAPACK ``trsyl`` on a few columns
    at a time (``trsyl`` on the whole of T runs at BLAS 2 speed, several times slower, and
    works on ``diag(b)`` as on a full matrix). Block boundaries never split a 2 x 2 diagonal
    block of T.
    """
    r = T.shape[0]
    bounds = [0]
    while bounds[-1] < r:
        cut = min(bounds[-1] + SYLVESTER_BLOCK, r)
        if cut < r and T[cut, cut - 1] != 0.0:
            cut += 1
        bounds.append(cut)
    Y = np.empty_like(C)
    for lo, hi in reversed(list(zip(bounds[:-1], bounds[1:], strict=True))):
        rhs = C[lo:hi] - T[lo:hi, hi:] @ Y[hi:] if hi < r else C[lo:hi]
        for first in range(0, C.shape[1], SYLVESTER_COLUMNS):
            last = min(first + SYLVESTER_COLUMNS, C.shape[1])
            block, scale, info = dtrsyl(T[lo:hi, lo:hi], np.diag(b[first:last]), rhs[:, first:last])
            if info < 0:
                raise PmlbenchError(f"pml_lrig: LAPACK trsyl rejected argument {-info}")
            Y[lo:hi, first:last] = block / scale if scale != 1.0 else block
    return Y


def schur_sylvester(
    schur: tuple[np.ndarray, np.ndarray], eig: tuple[np.ndarray, np.ndarray], C: np.ndarray
) -> np.ndarray:
    """X with ``A X + X B = C`` from the real Schur form ``A = Q T Qᵀ`` and the
    eigendecomposition ``B = P·diag(b)·Pᵀ`` of a symmetric B: ``X = Q Y Pᵀ`` with
    ``T Y + Y diag(b) = Qᵀ C P`` (:func:`shifted_schur_solve`)."""
    (T, Q), (b, P) = schur, eig
    return Q @ shifted_schur_solve(T, b, Q.T @ C @ P) @ P.T


def polar_factor(A: np.ndarray) -> np.ndarray:
    """``P = V Uᵀ`` from ``[U, ~, V] = svd(A)`` (the P step)."""
    U, _, Vt = thin_svd(A)
    return Vt.T @ U.T


def column_squared_distances(M: np.ndarray) -> np.ndarray:
    """``pdist2(Mᵀ, Mᵀ, 'squaredeuclidean')``: squared distances between the columns of M,
    non-negative, exactly 0 on the diagonal."""
    squares = np.einsum("ij,ij->j", M, M)
    distances = squares[:, None] + squares[None, :] - 2.0 * (M.T @ M)
    np.maximum(distances, 0.0, out=distances)
    np.fill_diagonal(distances, 0.0)
    return distances


def label_laplacians(C: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``L_c1 = diag(sum(C, 1)) − C`` and ``L_c2 = diag(sum(C, 2)) − C``."""
    return np.diag(C.sum(axis=0)) - C, np.diag(C.sum(axis=1)) - C


def cosine_start(D: np.ndarray) -> np.ndarray:
    """``cosineSimilarity(Dᵀ, Dᵀ)``: cosine similarities of D's columns (q x q); a column
    of zeros (a label no training instance has as a candidate) has similarity 0 with every
    column, itself included."""
    norms = np.sqrt(np.einsum("ij,ij->j", D, D))
    U = D / np.where(norms > 0, norms, 1.0)[None, :]
    return U.T @ U


class CandidateSupport:
    """The entries where the label confidences D are non-zero, on which D and every F of the
    guidance live: F starts at D and its multiplicative update keeps a zero a zero. Products
    with D or F are taken as sparse products over these entries (scipy's, without BLAS),
    about nnz(D)/(nq) of the dense products' work: 4 % on delicious (983 labels)."""

    def __init__(self, D: np.ndarray):
        self.pattern = sp.csr_matrix(D != 0)
        self.rows, self.cols = self.pattern.nonzero()

    def of(self, A: np.ndarray) -> sp.csr_matrix:
        """A (n x q, zero off the support) in CSR form on the support's pattern."""
        return sp.csr_matrix(
            (A[self.rows, self.cols], self.pattern.indices, self.pattern.indptr),
            shape=self.pattern.shape,
        )


@dataclass
class GuidanceSolution:
    """Output of :func:`indirect_guidance`."""

    W: np.ndarray  # h x q, H M of the last iteration
    F: np.ndarray  # n x q disambiguated labels
    C: np.ndarray  # q x q label correlation
    M: np.ndarray  # l x q
    Z: np.ndarray  # r x l, H = V Z
    losses: list[float]  # the code's loss(2:end)
    changes: list[float] = field(default_factory=list)  # what the stopping test read
    stages: list[dict[str, np.ndarray]] = field(default_factory=list)

    @property
    def iterations(self) -> int:
        return len(self.losses)


def indirect_guidance(
    side: FeatureSide,
    D: np.ndarray,
    M0: np.ndarray,
    *,
    alpha: float,
    beta: float,
    gamma: float,
    lam: float,
    max_iter: int = 20,
    tol: float = 1e-4,
    keep_stages: int = 0,
) -> GuidanceSolution:
    """The iterations of ``PML_IG.m`` (module docstring, stage 2) from M's start ``M0``
    (l x q). ``keep_stages`` keeps H, M, F, C and P after each of the first so many
    iterations (for comparison with the authors' code stopped there)."""
    n, q = D.shape
    latent = M0.shape[0]  # l
    U, s, T, Q = side.U, side.s, side.T, side.Q
    support = CandidateSupport(D)
    Ds = support.of(D)
    UtD = np.asarray(Ds.T @ U).T
    QtRz = Q.T @ (UtD / s[:, None])  # Qᵀ S⁻¹UᵀD: the H step's right-hand side is this x Mᵀ
    DtD = (Ds.T @ Ds).toarray()
    DtD_norm = float(np.sum(DtD * DtD))
    D_norm = float(np.sum(D * D))
    T_gamma = gamma * T
    identity = np.eye(latent)
    M = np.array(M0, dtype=np.float64)
    C = cosine_start(D)
    F = D.copy()
    Fs = Ds
    FtF = FtD = DtD  # at F = D
    delta = 1.0  # ‖F‖²/‖D‖² at F = D
    solution = GuidanceSolution(
        W=np.zeros((side.h, q)), F=F, C=C, M=M, Z=np.zeros((s.size, latent)), losses=[]
    )
    for iteration in range(1, max_iter + 1):
        Lc1, Lc2 = label_laplacians(C)
        # H = V Z: γ S⁻²(VᵀL_kV) Z + Z (MMᵀ + λI) = S⁻¹UᵀD Mᵀ
        b, Qb = scipy.linalg.eigh(M @ M.T + lam * identity, check_finite=False)
        Z = (Q @ shifted_schur_solve(T_gamma, b, QtRz @ (M.T @ Qb))) @ Qb.T
        SZ = s[:, None] * Z  # X H = U S Z
        # M: (XH)ᵀ(XH) M + M (λI + γ(L_c1 + L_c2)) = (XH)ᵀD
        a, Qa = scipy.linalg.eigh(SZ.T @ SZ, check_finite=False)
        # transposed: (λI + γ(L_c1 + L_c2))ᵀ Mᵀ + Mᵀ (XH)ᵀ(XH) = Dᵀ(XH)
        Mb_t = lam * np.eye(q) + gamma * (Lc1 + Lc2).T
        schur_m = scipy.linalg.schur(Mb_t, output="real", check_finite=False)
        M = schur_sylvester(schur_m, (a, Qa), UtD.T @ SZ).T
        # P: polar factor of FᵀD; only D P is used
        P = polar_factor(FtD)
        DP = Ds @ P
        # F: multiplicative update (FᵀF and FᵀD are the last iteration's: F has not moved)
        FA = 4.0 * alpha * (Fs @ FtF) + 2.0 * alpha * F + 2.0 * beta * (Fs @ (C @ C.T))
        FB = 4.0 * alpha * delta * (Ds @ FtD.T) + 2.0 * alpha * DP + 2.0 * beta * (Ds @ C.T)
        FC = np.maximum(F - D, 0.0) * D
        zero = FA == 0
        if zero.any():  # where F is 0 with no mass around it (an empty label or instance)
            FA = np.where(zero, 1.0, FA)
        F = F * FB / FA - FC / FA
        if zero.any():
            F[zero] = 0.0
        Fs = support.of(F)
        F_norm = float(np.sum(F * F))
        delta = F_norm / D_norm
        # C: multiplicative update
        FtF = (Fs.T @ Fs).toarray()
        FtD = (Fs.T @ Ds).toarray()
        spread = column_squared_distances(M)  # the code's O
        C = C * (2.0 * beta * FtD) / (2.0 * beta * (FtF @ C) + gamma * spread + MATLAB_EPS)
        # the code's loss, without n x n or n x h products
        SZM = SZ @ M
        # ‖XHM − D‖² = ‖SZM‖² − 2⟨SZM, UᵀD⟩ + ‖D‖² (U has orthonormal columns)
        fit = float(np.sum(SZM * SZM)) - 2.0 * float(np.sum(SZM * UtD)) + D_norm
        # ‖FFᵀ − δDDᵀ‖² = ‖FᵀF‖² − 2δ‖FᵀD‖² + δ²‖DᵀD‖²
        gram_gap = (
            float(np.sum(FtF * FtF))
            - 2.0 * delta * float(np.sum(FtD * FtD))
            + delta * delta * DtD_norm
        )
        graphs = float(np.sum(Z * (side.VLV @ Z))) + 2.0 * (  # tr(HᵀL_kH) = tr(ZᵀVᵀL_kVZ)
            float(np.sum((M @ Lc1) * M)) + float(np.sum((M @ Lc2) * M))
        )
        loss = (
            fit
            + lam * float(np.sum(M * M))
            + lam * float(np.sum(Z * Z))  # ‖H‖ = ‖Z‖
            + alpha * (float(np.sum((DP - F) ** 2)) + gram_gap)
            + beta * float(np.sum((D - Fs @ C) ** 2))
            + gamma * graphs
        )
        solution.losses.append(loss)
        if iteration <= keep_stages:
            solution.stages.append({"H": side.V @ Z, "M": M, "F": F, "C": C, "P": P})
        if iteration > 5:
            previous = solution.losses[-2]
            solution.changes.append((loss - previous) / previous)
            if solution.changes[-1] < tol:
                break
    solution.W = side.V @ (Z @ M)
    solution.F, solution.C, solution.M, solution.Z = F, C, M, Z
    return solution


# ---------------------------------------------------------------- the estimator


def initial_values(
    seed: int | None, n: int, d: int, n_labels: int, ratio: float
) -> tuple[int, np.ndarray, np.ndarray]:
    """The random parts of a fit, from ``seed``: the k-means seed (``kmeans``' k-means++
    start), the anchor rows (``randsample(n, anchors)``, 0-based) and M's start
    (``randn(l, q)``, l = ⌈ratio·h⌉, h = anchors + 1). ``PML_IG.m`` also draws H's start,
    which its first step overwrites before reading it (it enters only ``loss(1)``, which
    nothing reads), so none is drawn here. The draws before M's do not depend on ratio."""
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    kmeans_seed = int(rng.integers(2**32))
    anchors = rng.choice(n, size=n_anchors(n, d), replace=False)
    latent = math.ceil((anchors.size + 1) * ratio)  # l
    return kmeans_seed, anchors, rng.standard_normal((latent, n_labels))


def refusal_message(n: int, d: int, max_order: int | None) -> str | None:
    """One line naming the cap that the kernel features' order h = min(5d, n) + 1 exceeds;
    None within it."""
    h = n_anchors(n, d) + 1
    if max_order is None or h <= max_order:
        return None
    return (
        f"pml_lrig on {n:,} training instances with {d:,} features maps them onto {h - 1:,} "
        f"kernel anchors and solves against their {h:,} x {h:,} Gram matrix (an SVD and a "
        f"Schur decomposition), over method.max_order={max_order} (set for the suite's "
        f"budget, {BUDGET_NOTE}); set method.max_order=null to run it anyway"
    )


class SharedWork(shared_work.SharedWork):
    """What PML-LRIG's fits on one training set share (:mod:`pmlbench.numerics.shared_work`),
    each part once per distinct value of the parameters it depends on: the scaling, the random
    draws (``random_state``, ratio), the k-means groups and the local reconstruction, the
    kernel features, the feature graph, the SVD of the kernel features and the Schur form of
    the H step's coefficient. With ``random_state=None`` the fits share one draw.

    ``X`` dense float64 training features, ``Y`` (n x q) their 0/1 candidate labels.
    """

    def __init__(self, X: np.ndarray, Y: np.ndarray):
        super().__init__(X, Y)
        self.scale = minmax_fit(X)
        self.Xs = minmax_apply(X, *self.scale)

    def initial_values(self, model: PMLLRIG) -> tuple[int, np.ndarray, np.ndarray]:
        n, d = self.X.shape
        seed, ratio = self.seed(model), float(model.ratio)
        return self._once(
            ("draws", seed, ratio), lambda: initial_values(seed, n, d, self.Y.shape[1], ratio)
        )

    def clusters(self, model: PMLLRIG, kmeans_seed: int) -> np.ndarray:
        """``kmeans(X, q)``'s groups."""
        q = self.Y.shape[1]
        return self._once(
            ("kmeans", kmeans_seed),
            lambda: kmeans_labels(self.Xs, min(q, self.Xs.shape[0]), kmeans_seed),
        )

    def reconstruction(self, model: PMLLRIG, kmeans_seed: int) -> Reconstruction:
        k, rounds = int(model.n_neighbors), int(model.reconstruction_rounds)
        return self._once(
            ("reconstruction", kmeans_seed, k, rounds),
            lambda: local_reconstruction(
                self.Xs, self.Y, self.clusters(model, kmeans_seed), k=k, rounds=rounds
            ),
        )

    def kernel(self, model: PMLLRIG, anchors: np.ndarray) -> tuple[KernelMap, np.ndarray]:
        """``Kernel_mapping.m`` on the anchors the seed draws (they do not depend on ratio)."""
        return self._once(
            ("kernel", self.seed(model)),
            lambda: KernelMap.fit(self.Xs, anchors, method="pml_lrig", rows=True),
        )

    def feature_side(self, model: PMLLRIG, K: np.ndarray) -> tuple[FeatureSide, sp.csr_matrix]:
        k, rtol = int(model.feature_neighbors), model.rtol
        L = self._once(("L_k", self.seed(model), k), lambda: feature_laplacian(K, k)[0])
        side = self._once(("side", self.seed(model), k, rtol), lambda: FeatureSide.of(K, L, rtol))
        return side, L


class PMLLRIG(SharedWorkFitting, ValidatedParameters, BaseEstimator):
    """PML-LRIG (Chen et al., 2025): label confidences reconstructed from each instance's
    neighbours and k-means group, then a factored linear model on kernel features fitted to
    them, guided by a disambiguated label matrix and the label correlation it induces.

    Args:
        alpha: α, weight of the disambiguation terms ‖DP − F‖² + ‖FFᵀ − δDDᵀ‖² (demo: 1), > 0.
        beta: β, weight of the label reconstruction ‖D − FC‖² (demo: 1), >= 0.
        gamma: γ, weight of the feature and label graph terms (demo: 0.1), >= 0.
        lam: λ, ridge weight on H and M (demo: 1), > 0.
        ratio: l = ⌈ratio·h⌉ columns of H (demo: 0.2), in (0, 1].
        n_neighbors: k of the local reconstruction (``PML_LR(X, Y, 5)``), integer >= 1.
        feature_neighbors: k of the feature graph (``Feature_similarity(X, 5)``), integer >= 1.
        reconstruction_rounds: rounds of the local reconstruction (code: 5), integer >= 1.
        max_iter: iterations of the guidance at most (demo: 20).
        tol: from the sixth iteration, stop when the loss grew by less than this fraction of
            its previous value, or fell (code: 1e-4), >= 0.
        threshold: ``predict`` keeps labels whose score is at least this (code: 0.5).
        rtol: an eigenvalue of ``XᵀX`` counts as zero in ``pinv(XᵀX)`` when it is at most this
            times the largest; None (default): MATLAB's ``pinv`` tolerance ``h·eps(‖XᵀX‖)``.
        max_order: the largest order h of the kernel features' Gram matrix (anchors + bias,
            ``min(5d, n) + 1``) fitted; above it ``fit`` refuses before any work with
            :class:`~pmlbench.errors.NotApplicable` (None: no cap).
        random_state: seeds k-means, the kernel anchors and M's start, an integer in
            [0, 2³²) or None; the runner fills in the split's seed.
        blas_threads: BLAS threads during fit and predict (None: the library default).
    """

    work_type = SharedWork
    default_bipartition = {"rule": "method"}
    # λ and γ, the two parameters whose effect on held-out average precision was measured
    # to matter; no published setting exists (docs/methods/pml_lrig.md, "Tuning grid")
    default_tuning_grid = {"lam": [0.1, 1.0], "gamma": [0.1, 1.0, 10.0]}
    parameter_constraints = {
        "alpha": POSITIVE,
        "beta": NON_NEGATIVE,
        "gamma": NON_NEGATIVE,
        "lam": POSITIVE,
        "ratio": [Interval(float, 0, 1, closed="right")],
        "n_neighbors": POSITIVE_INT,
        "feature_neighbors": POSITIVE_INT,
        "reconstruction_rounds": POSITIVE_INT,
        "max_iter": POSITIVE_INT,
        "tol": NON_NEGATIVE,
        "threshold": [Interval(float)],
        "rtol": [None, Interval(float, 0, 1, closed="neither")],
        "max_order": CAP,
        "random_state": SEED,
        "blas_threads": BLAS_THREADS,
    }

    def __init__(
        self,
        alpha: float = 1.0,
        beta: float = 1.0,
        gamma: float = 0.1,
        lam: float = 1.0,
        ratio: float = 0.2,
        n_neighbors: int = 5,
        feature_neighbors: int = 5,
        reconstruction_rounds: int = 5,
        max_iter: int = 20,
        tol: float = 1e-4,
        threshold: float = 0.5,
        rtol: float | None = None,
        max_order: int | None = MAX_ORDER,
        random_state: int | None = None,
        blas_threads: int | None = 1,
    ):
        self.alpha = alpha
        self.beta = beta
        self.gamma = gamma
        self.lam = lam
        self.ratio = ratio
        self.n_neighbors = n_neighbors
        self.feature_neighbors = feature_neighbors
        self.reconstruction_rounds = reconstruction_rounds
        self.max_iter = max_iter
        self.tol = tol
        self.threshold = threshold
        self.rtol = rtol
        self.max_order = max_order
        self.random_state = random_state
        self.blas_threads = blas_threads

    def initial_values(self, n: int, d: int, n_labels: int) -> tuple[int, np.ndarray, np.ndarray]:
        """The random parts of a fit (:func:`initial_values`) from ``random_state``."""
        return initial_values(self.random_state, n, d, n_labels, float(self.ratio))

    def _checked(self, X, Y) -> tuple[np.ndarray, np.ndarray]:
        """Validated parameters and inputs (dense float64 features, 0/1 labels); refusals
        before any work."""
        self._validate_params()
        n, d = X.shape
        refusal = refusal_message(n, d, self.max_order)
        if refusal is not None:
            raise NotApplicable(refusal)
        X = as_dense(check_features(X), dtype=np.float64)
        Y = check_label_matrix(Y, what="candidate labels", n_rows=n)
        check_neighbours(int(self.n_neighbors), n, key="method.n_neighbors")
        anchors = n_anchors(n, d)
        if anchors < int(self.feature_neighbors) + 1:
            raise PmlbenchError(
                f"method.feature_neighbors = {self.feature_neighbors} neighbours requested but "
                f"the kernel features have {anchors + 1} columns (min(5 x {d} features, {n} "
                f"instances) anchors + bias), so each has at most {anchors - 1} neighbours "
                f"besides itself and the one sorted last; use method.feature_neighbors <= "
                f"{max(anchors - 1, 0)} or more training data"
            )
        return X, Y

    def _fit(self, work: SharedWork, start: float) -> None:
        """Scale, reconstruct the label confidences, map, and run the guidance iterations."""
        X = work.X
        self.scale_low_, self.scale_span_ = work.scale
        kmeans_seed, anchors, M0 = work.initial_values(self)
        reconstruction = work.reconstruction(self, kmeans_seed)
        self.kernel_, K = work.kernel(self, anchors)
        side, _ = work.feature_side(self, K)
        prepared = time.perf_counter()
        solution = indirect_guidance(
            side,
            reconstruction.D,
            M0,
            alpha=float(self.alpha),
            beta=float(self.beta),
            gamma=float(self.gamma),
            lam=float(self.lam),
            max_iter=int(self.max_iter),
            tol=float(self.tol),
        )
        self.W_ = solution.W
        self.label_confidences_ = reconstruction.D
        self.disambiguation_scores_ = reconstruction.D
        self.guidance_labels_ = solution.F
        self.correlation_ = solution.C
        self.losses_ = solution.losses
        self.n_features_in_ = X.shape[1]
        iterations = solution.iterations
        tol = float(self.tol)
        # how far the stopping test was from flipping, relative to tol (None: never read)
        margin = min((abs(c - tol) / tol for c in solution.changes), default=None) if tol else None
        self.diagnostics_ = {
            "iterations": iterations,
            "stopped_by_tol": iterations < int(self.max_iter),
            "stop_margin": float(f"{margin:.3g}") if margin is not None else None,
            "loss": float(f"{solution.losses[-1]:.6g}"),
            "n_anchors": int(anchors.size),
            "l": int(M0.shape[0]),
            "clusters": int(np.unique(work.clusters(self, kmeans_seed)).size),
            "pinv_rank": side.rank,
            "pinv_smallest_kept": float(f"{side.smallest_kept:.3g}"),
            "pinv_largest_dropped": float(f"{side.largest_dropped:.3g}"),
            "prepare_seconds": round(prepared - start, 3),
            "fit_seconds": round(time.perf_counter() - start, 3),
        }

    def decision_function(self, X) -> np.ndarray:
        """``X W`` on the kernel features (n x q), the scores of ``PML_test.m``."""
        X = as_dense(check_features(X), dtype=np.float64)
        check_feature_count(X, self.n_features_in_, method="PML-LRIG")
        Xs = minmax_apply(X, self.scale_low_, self.scale_span_)
        with threadpool_limits(self.blas_threads, user_api="blas"):
            return self.kernel_.transform(Xs) @ self.W_

    def predict(self, X) -> np.ndarray:
        """Labels whose score is at least ``threshold`` (``PML_test.m``: ``Outputs >= 0.5``)."""
        return (self.decision_function(X) >= self.threshold).astype(np.uint8)
