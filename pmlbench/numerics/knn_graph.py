"""The heat-kernel k-nearest-neighbour weights of ``knn_S.m``, the graph function that
CcAmbiguous's PML programs share (used by PML-PLR, which takes its Laplacian, and PML-MA,
which adds the identity and symmetrises it), and the neighbours, distances and width it
starts from, which PML-LRIG's local reconstruction (``PML_LR.m``) weights otherwise.

``knn_S(X, k)`` sorts each row's squared distances ascending (MATLAB's stable ``sort``: ties
by the lower index), takes positions 2..k+1 as the row's neighbours (the instance itself is
first unless an identical row precedes it) and weights them ``exp(−d/(2σ²))``, σ the mean
over rows of the second-smallest squared distance (:func:`nearest_rows`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from pmlbench.errors import PmlbenchError
from pmlbench.numerics.exact import squared_distances
from pmlbench.numerics.neighbors import kneighbors


class NearestRows(NamedTuple):
    """Each row's k + 1 nearest rows of X, itself included (:func:`nearest_rows`)."""

    neighbours: np.ndarray  # n x (k + 1) row indices, nearest first
    distances: np.ndarray  # n x (k + 1) their exact squared distances
    width: float  # σ: the mean over rows of the squared distance to the second nearest


def nearest_rows(X: np.ndarray, k: int, *, method: str) -> NearestRows:
    """The k + 1 nearest rows of each row of X by (squared distance, index), so itself
    first unless an identical row precedes it, as MATLAB's stable ``sort`` of ``pdist2``
    ranks them; their squared distances and the width σ, the mean over rows of the
    second-smallest (``knn_S.m``, ``PML_LR.m``).

    The order and the squared distances are :func:`pmlbench.numerics.neighbors.kneighbors`'
    (re-measured without BLAS near the k-th, so no CPU decides a tie). ``method`` names the
    caller in the error raised when σ is 0 (every row has an identical twin).
    """
    n = X.shape[0]
    neighbours = kneighbors(X, X, k + 1)
    rows = np.repeat(np.arange(n), k + 1)
    distances = squared_distances(X, X, rows, neighbours.ravel()).reshape(n, k + 1)
    width = float(distances[:, 1].sum()) / n
    if not width > 0:
        raise PmlbenchError(
            f"{method}: every training instance has an identical twin, so the kNN graph's "
            "width (mean squared distance to the nearest other instance) is 0; remove "
            "duplicate rows"
        )
    return NearestRows(neighbours, distances, width)


def heat_kernel_neighbours(X: np.ndarray, k: int, *, method: str) -> sp.csr_matrix:
    """R (n x n): row i holds the heat-kernel weights of i's k nearest rows (``knn_S.m``),
    not symmetrised, with no self link: where an identical row precedes i, so that i itself
    is among its k neighbours, its weight exp(0) = 1 falls on the diagonal, which the callers
    fill or cancel themselves.

    Neighbours, squared distances and σ are :func:`nearest_rows`'; ``method`` names the
    caller in its error.
    """
    n = X.shape[0]
    order, D, sigma = nearest_rows(X, k, method=method)
    rows, cols = np.repeat(np.arange(n), k), order[:, 1:].ravel()
    weights = np.exp(-D[:, 1:].ravel() / (2.0 * sigma**2))
    off = rows != cols
    return sp.csr_matrix((weights[off], (rows[off], cols[off])), shape=(n, n))
