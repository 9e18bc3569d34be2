"""Label enrichment by propagation over a kNN reconstruction graph (PML3ER Stage 1).

Li & Wang, IJCAI 2020, Algorithm 1, also the propagation scheme of PARTICLE:

1. :func:`knn_graph`: k nearest neighbours of every training instance (not itself).
2. :func:`nnls_weights`: reconstruction weights (Eq. 2), non-negative least squares over the
   k neighbours, rows normalised to sum 1; a sparse n x n matrix V with k entries a row.
3. :func:`propagate`: ``F(t) = alpha * P F(t-1) + (1 - alpha) * Y0`` (Eq. 4 with ``P = V^T``)
   followed by a pluggable row normalisation: :func:`pml3er_normalize` (Eq. 5) or
   :func:`particle_normalize`.
4. :func:`enrich`: the enriched label matrix (Eq. 6), in [0, 1] on candidates and [-1, 0]
   elsewhere.

:func:`label_enrichment` chains the four steps as PML3ER uses them.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from pmlbench.core.workcache import cached_array
from pmlbench.errors import PmlbenchError
from pmlbench.numerics.exact import canonical_nnls_batch, row_grams, row_groups
from pmlbench.numerics.neighbors import kneighbors, shared_knn_graph


def knn_graph(X, k: int = 10, exclude_self: bool = True) -> np.ndarray:
    """Indices (n x k) of the k nearest rows of X for every row, nearest first (Alg. 1, step 1)."""
    return kneighbors(X, X, int(k), exclude_self=exclude_self)


def nnls_weights(X, neighbors: np.ndarray) -> sp.csr_matrix:
    """Reconstruction weights V (Eq. 2): n x n CSR, non-negative, k entries a row, rows sum 1.

    Row i minimises ``||x_i - sum_j v_ij x_j||^2`` over ``v_ij >= 0``, j among the neighbours
    of i, from the (k+1) x (k+1) Gram matrix of the neighbours and x_i. Eq. 2 does not always
    have one minimiser: identical neighbours (frequent with binary features) can share their
    weight in any proportion, and on another machine rounding would pick another share. So
    the minimiser is chosen by rules (pmlbench.numerics.exact), the same on every machine:

    - neighbours that are identical rows are one column; its weight is split equally;
    - when x_i itself has identical copies among its neighbours (and is not zero), they
      reconstruct it exactly and share weight 1;
    - otherwise Lawson-Hanson NNLS with stated tie rules
      (:func:`~pmlbench.numerics.exact.canonical_nnls`, run for all rows at once by
      :func:`~pmlbench.numerics.exact.canonical_nnls_batch`) on exact Gram matrices
      (:func:`~pmlbench.numerics.exact.row_grams`).

    A row whose weights are all zero (e.g. x_i = 0, or neighbours that cannot reconstruct it)
    gets uniform weights 1/k over its neighbours.
    """
    neighbors = np.asarray(neighbors, dtype=np.int64)
    n, k = neighbors.shape
    groups = row_groups(X)
    grams = row_grams(X, np.hstack([neighbors, np.arange(n)[:, None]]))
    weights = np.zeros((n, k))
    reconstructable = grams[:, k, k] > 0  # x_i = 0: no reconstruction; uniform below
    ids = groups[neighbors]
    copies = ids == groups[:, None]
    rebuilt = reconstructable & copies.any(axis=1)
    if rebuilt.any():
        share = 1.0 / np.count_nonzero(copies[rebuilt], axis=1)
        weights[rebuilt] = np.where(copies[rebuilt], share[:, None], 0.0)
    rows = np.flatnonzero(reconstructable & ~rebuilt)
    if rows.size:
        ids = ids[rows]
        same = ids[:, :, None] == ids[:, None, :]
        first = ~np.any(same & np.tri(k, k, -1, dtype=bool), axis=2)  # first of its group
        # one column per distinct row, nearest first: the first members, then padding
        order = np.argsort(~first, axis=1, kind="stable")
        at = np.arange(rows.size)[:, None]
        G = grams[rows]
        v = canonical_nnls_batch(
            G[at[:, :, None], order[:, :, None], order[:, None, :]],
            G[at, order, k],
            G[:, k, k],
            np.count_nonzero(first, axis=1),
        )
        # each neighbour takes its group's weight over the group's size
        column = np.cumsum(first, axis=1) - 1  # of each first member
        leader = np.argmax(same, axis=2)  # first member of each neighbour's group
        weights[rows] = v[at, column[at, leader]] / np.count_nonzero(same, axis=2)
    return weight_graph(weights, neighbors)


def weight_graph(weights: np.ndarray, neighbors: np.ndarray) -> sp.csr_matrix:
    """The n x n CSR matrix of one row of non-negative ``weights`` per instance over its
    ``neighbors`` (both n x k), each row scaled to sum 1; a row whose weights are all zero
    spreads 1 evenly over its k neighbours. ``weights`` is scaled in place."""
    n, k = neighbors.shape
    totals = weights.sum(axis=1)
    degenerate = ~(totals > 0)
    weights[degenerate] = 1.0
    totals[degenerate] = k
    weights /= totals[:, None]
    V = sp.csr_matrix(
        (weights.ravel(), neighbors.ravel(), np.arange(0, n * k + 1, k)), shape=(n, n)
    )
    V.sum_duplicates()  # no-op for a valid kNN graph (distinct neighbours)
    return V


def shared_nnls_weights(X, neighbors: np.ndarray) -> sp.csr_matrix:
    """:func:`nnls_weights` through the shared-work cache (pmlbench.core.workcache): the one
    owner of the ``nnls_weights`` cache key, used by PML3ER's enrichment and PARTICLE."""
    return cached_array(
        "nnls_weights", {"X": X, "neighbors": neighbors}, lambda: nnls_weights(X, neighbors)
    )


def pml3er_normalize(F: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Row normalisation of Eq. 5: ``min(1, (f_ij - vmin_i) / (cvmax_i - vmin_i))``.

    vmin_i is the minimum of row i over all labels, cvmax_i its maximum over the candidate
    labels. A row with ``cvmax_i == vmin_i`` (or no candidate) becomes its candidate indicator.
    """
    candidates = Y > 0
    vmin = F.min(axis=1, keepdims=True)
    cvmax = np.where(candidates, F, -np.inf).max(axis=1, keepdims=True)
    spread = cvmax - vmin
    ok = spread > 0
    out = np.minimum(1.0, (F - vmin) / np.where(ok, spread, 1.0))
    return np.where(ok, out, candidates.astype(F.dtype))


def particle_normalize(F: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """PARTICLE's normalisation: zero the non-candidates, then scale each row to sum 1.

    A row whose candidate entries sum to zero becomes uniform over its candidates (all zero
    if it has none).
    """
    candidates = (Y > 0).astype(F.dtype)
    G = F * candidates
    totals = G.sum(axis=1, keepdims=True)
    counts = candidates.sum(axis=1, keepdims=True)
    uniform = np.divide(candidates, counts, out=np.zeros_like(candidates), where=counts > 0)
    return np.where(totals > 0, G / np.where(totals > 0, totals, 1.0), uniform)


def _change(D: np.ndarray, stop_norm: str) -> float:
    if stop_norm == "max":
        return float(np.abs(D).max()) if D.size else 0.0
    # spectral norm via the smaller Gram matrix: sqrt of its largest eigenvalue
    small = D.T @ D if D.shape[0] >= D.shape[1] else D @ D.T
    return float(np.sqrt(max(np.linalg.eigvalsh(small)[-1], 0.0))) if small.size else 0.0


def propagate(
    P,
    Y: np.ndarray,
    alpha: float,
    normalize: Callable[[np.ndarray, np.ndarray], np.ndarray],
    *,
    max_iter: int = 1000,
    tol: float = 1e-6,
    stop_norm: str = "max",
    F0: np.ndarray | None = None,
) -> tuple[np.ndarray, int]:
    """Iterate ``F(t) = normalize(alpha * P @ F(t-1) + (1 - alpha) * Y0, Y)`` (Eqs. 4-5).

    Args:
        P: n x n propagation operator (dense or sparse); PML3ER passes ``V.T`` as Eq. 4 is
            written, PARTICLE its row-normalised similarity matrix.
        Y: n x l candidate indicator, passed to ``normalize``.
        alpha: propagation rate in [0, 1).
        normalize: row normalisation ``(F, Y) -> F``.
        max_iter, tol: stop after ``max_iter`` steps or when the change between consecutive
            iterates is below ``tol``, measured as the largest absolute entry (``"max"``) or
            the matrix 2-norm (``"spectral"``).
        F0: the starting point ``F(0)``, which is also the anchor ``Y0`` of the update
            (both papers anchor on the initial labelling); default ``Y``.
    Returns:
        (F, number of steps taken).
    """
    if not 0.0 <= alpha < 1.0:
        raise PmlbenchError(f"propagation rate alpha = {alpha} must lie in [0, 1); e.g. alpha=0.5")
    if stop_norm not in ("max", "spectral"):
        raise PmlbenchError(f"unknown stop_norm {stop_norm!r}; use 'max' or 'spectral'")
    Yf = np.asarray(Y, dtype=np.float64)
    anchor = Yf if F0 is None else np.asarray(F0, dtype=np.float64)
    anchor_term = (1.0 - alpha) * anchor
    F = anchor.copy()
    steps = 0
    for steps in range(1, int(max_iter) + 1):  # noqa: B007 (steps is returned)
        F_new = normalize(alpha * (P @ F) + anchor_term, Yf)
        change = _change(F_new - F, stop_norm)
        F = F_new
        if change < tol:
            break
    return np.asarray(F), steps


def enrich(F: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Enriched labels (Eq. 6): ``f_ij`` on candidates, ``f_ij - 1`` elsewhere."""
    return np.where(Y > 0, F, F - 1.0)


def label_enrichment(
    X,
    Y: np.ndarray,
    *,
    k: int = 10,
    alpha: float = 0.5,
    max_iter: int = 1000,
    tol: float = 1e-6,
    transpose: bool = True,
) -> tuple[np.ndarray, dict]:
    """Algorithm 1 end to end: (Yhat, diagnostics with stage timings and propagation steps).

    ``transpose`` propagates with Vᵀ as Eq. 4 is written; False uses V (each instance
    collects from its own neighbours, as in PARTICLE-style propagation).

    The kNN graph and V go through the shared-work cache (pmlbench.core.workcache), which is active
    only when a cache directory is configured.
    """
    timings = {}
    start = time.perf_counter()
    neighbors = shared_knn_graph(X, k)
    timings["knn"] = time.perf_counter() - start
    start = time.perf_counter()
    V = shared_nnls_weights(X, neighbors)
    timings["nnls"] = time.perf_counter() - start
    start = time.perf_counter()
    P = V.T.tocsr() if transpose else V
    F, steps = propagate(P, Y, alpha, pml3er_normalize, max_iter=max_iter, tol=tol)
    timings["propagation"] = time.perf_counter() - start
    return enrich(F, Y), {"seconds": timings, "propagation_iterations": steps}
