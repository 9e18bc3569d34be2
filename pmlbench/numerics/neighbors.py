"""Exact k-nearest-neighbour search with MATLAB-compatible tie-breaking.

Shared by ML-kNN, PML3ER's label enrichment and PARTICLE. Neighbours are ordered by
Euclidean distance, ties broken by the lower training index (MATLAB's stable ``sort``),
and an instance is never its own neighbour when ``exclude_self`` is set (exact duplicates
of it still are). scikit-learn's tree searches break ties in another order, hence this
module.

Distances are screened with scikit-learn's ``euclidean_distances`` (BLAS, sparse aware),
whose last bits depend on the BLAS kernel: two identical reference rows can come out a
rounding error apart, and the tie would then be broken by the CPU rather than by index.
So every reference row within a rounding margin of the k-th distance
(:func:`pmlbench.numerics.exact.gemm_distance_margin`) is a candidate, and where two
candidates lie within that margin of each other (where rounding could decide their order)
both are measured again without BLAS (:func:`pmlbench.numerics.exact.squared_distances`)
and ordered by those values; candidates further apart keep their BLAS order, which is then
the exact one. The distances returned are measured again too: the same neighbours, in the
same order, with the same distances, on every machine.

Integer-valued features whose squared norms stay below 2**50 (binary and count data: most
bundled datasets) need no second measurement: every product and partial sum of the BLAS
distance is then an integer below 2**53, so BLAS computes it exactly in any order and its
value already is the one :func:`~pmlbench.numerics.exact.squared_distances` gives.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.metrics.pairwise import euclidean_distances

from pmlbench.core.workcache import cached_array
from pmlbench.errors import PmlbenchError
from pmlbench.numerics.exact import (
    gemm_distance_margin,
    squared_distances,
    squared_row_norms,
    whole_numbers,
)

_BLOCK_ENTRIES = 8_000_000  # distance entries held at once (64 MB of float64)
# Largest sum of two squared row norms for which BLAS distances of integer rows are exact:
# |x.x - 2 x.y + y.y| and every partial sum stay below 2 * (|x|^2 + |y|^2) < 2**53.
_EXACT_NORM_SUM = 2.0**50


def _refined_smallest(
    D: np.ndarray,
    k: int,
    bound: np.ndarray | None,
    X_query,
    X_ref,
    offset: int,
    exclude_self: bool,
    with_distances: bool,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Indices (and exact squared distances) of the k nearest, ordered by (distance, column).

    ``D`` holds BLAS distances of the query block starting at row ``offset``; ``bound`` (one
    per row) bounds their rounding error. Every column within twice that bound of the k-th
    value is a candidate. Two candidates whose BLAS values lie more than twice the bound
    apart are in that order exactly too, so only runs of candidates closer than that (ties
    and near-ties, where rounding could decide) are measured again without BLAS and ordered
    by those values, then by column; the returned distances (``with_distances``) of the k
    kept are exact. ``bound`` None says ``D`` is exact: the candidates are the columns up to
    the k-th value and their distances are read from ``D``.
    """
    kth = np.partition(D, k - 1, axis=1)[:, k - 1 : k]
    margin = 0.0 if bound is None else 2.0 * bound[:, None]
    rows, cols = np.nonzero(D <= kth + margin)  # row-major: columns ascending
    if exclude_self:
        keep = cols != rows + offset
        rows, cols = rows[keep], cols[keep]
    values = D[rows, cols]
    order = np.lexsort((cols, values, rows))
    rows, cols, values = rows[order], cols[order], values[order]
    exact = np.full(len(rows), bound is None)  # whether values[t] is the exact distance
    if bound is not None:
        # runs of candidates within 2 * bound of the next one: their order is decided by
        # exact values; between runs the BLAS order is the exact one
        close = (rows[1:] == rows[:-1]) & (values[1:] - values[:-1] <= 2.0 * bound[rows[1:]])
        run = np.cumsum(np.concatenate([[True], ~close])) - 1
        exact = np.bincount(run)[run] > 1
        if exact.any():
            values[exact] = squared_distances(X_query, X_ref, rows[exact] + offset, cols[exact])
        order = np.lexsort((cols, np.where(exact, values, 0.0), run))
        rows, cols, values, exact = rows[order], cols[order], values[order], exact[order]
    starts = np.searchsorted(rows, np.arange(D.shape[0]))
    position = np.arange(len(rows)) - starts[rows]
    keep = position < k
    indices = cols[keep].reshape(D.shape[0], k)
    if not with_distances:
        return indices, None
    rows, cols, values, exact = rows[keep], cols[keep], values[keep], exact[keep]
    if not exact.all():
        values[~exact] = squared_distances(X_query, X_ref, rows[~exact] + offset, cols[~exact])
    return indices, values.reshape(D.shape[0], k)


def kneighbors(
    X_query, X_ref, k: int, *, exclude_self: bool = False, return_distance: bool = False
):
    """The k nearest rows of ``X_ref`` for every row of ``X_query``.

    Args:
        X_query, X_ref: dense arrays or sparse matrices with the same number of columns.
        k: number of neighbours.
        exclude_self: X_query is X_ref and row i may not be its own neighbour.
        return_distance: also return the (n_query x k) Euclidean distances.
    Returns:
        (n_query x k) int array of indices into X_ref, nearest first; optionally distances.
    """
    n_ref = X_ref.shape[0]
    available = n_ref - 1 if exclude_self else n_ref
    if k < 1 or k > available:
        raise PmlbenchError(
            f"k = {k} neighbours requested but only {available} training instances are "
            f"available; use k <= {available} or more training data"
        )
    itself = X_query is X_ref
    ref_sq = _squared_norms(X_ref)
    query_sq = ref_sq if exclude_self or itself else _squared_norms(X_query)
    n_query = X_query.shape[0]
    blas_is_exact = (
        _integer_valued(X_ref)
        and (itself or _integer_valued(X_query))
        and float(query_sq.max(initial=0.0)) + float(ref_sq.max(initial=0.0)) < _EXACT_NORM_SUM
    )
    block = max(1, _BLOCK_ENTRIES // max(n_ref, 1))
    indices = np.empty((n_query, k), dtype=np.int64)
    distances = np.empty((n_query, k)) if return_distance else None
    for start in range(0, n_query, block):
        stop = min(start + block, n_query)
        D = euclidean_distances(
            X_query[start:stop], X_ref, Y_norm_squared=ref_sq[None, :], squared=True
        )
        if exclude_self:
            D[np.arange(stop - start), np.arange(start, stop)] = np.inf
        bound = None if blas_is_exact else gemm_distance_margin(query_sq[start:stop], ref_sq.max())
        idx, exact = _refined_smallest(
            D, k, bound, X_query, X_ref, start, exclude_self, return_distance
        )
        indices[start:stop] = idx
        if distances is not None and exact is not None:  # asked for with return_distance
            distances[start:stop] = np.sqrt(exact)
    return (indices, distances) if return_distance else indices


def shared_knn_graph(X, k: int, exclude_self: bool = True) -> np.ndarray:
    """:func:`kneighbors` of the training rows among themselves (n x k indices, nearest
    first), through the shared-work cache (pmlbench.core.workcache).

    The one owner of the ``knn_graph`` cache key: ML-kNN, PML3ER's enrichment and PARTICLE
    ask for the graph of a training split here, so one computation serves them all. The key
    of the usual graph (``exclude_self``) is ``{"X": X, "k": k}``.
    """
    k = int(k)  # a plain Python number for the key
    key = {"X": X, "k": k} if exclude_self else {"X": X, "k": k, "exclude_self": False}
    return cached_array("knn_graph", key, lambda: kneighbors(X, X, k, exclude_self=exclude_self))


_integer_valued = whole_numbers  # a module name of its own: tests and benchmarks replace it
_squared_norms = squared_row_norms


def neighbor_counts(neighbors: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """For each query row, how many of its neighbours carry each label (n_query x l)."""
    n_query, k = neighbors.shape
    A = sp.csr_matrix(
        (np.ones(neighbors.size), neighbors.ravel(), np.arange(0, n_query * k + 1, k)),
        shape=(n_query, Y.shape[0]),
    )
    return np.asarray(A @ Y, dtype=np.int64)
