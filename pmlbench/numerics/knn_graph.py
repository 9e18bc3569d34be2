"""The heat-kernel k-nearest-neighbour weights of ``knn_S.m``, the graph function that
CcAmbiguous's PML programs share (used by PML-PLR, which takes its Laplacian, and PML-MA,
which adds the identity and symmetrises it).

``knn_S(X, k)`` sorts each row's squared distances ascending (MATLAB's stable ``sort``: ties
by the lower index), takes positions 2..k+1 as the row's neighbours (the instance itself is
first unless an identical row precedes it) and weights them ``exp(−d/(2σ²))``, σ the mean
over rows of the second-smallest squared distance.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from pmlbench.errors import PmlbenchError
from pmlbench.numerics.exact import squared_distances
from pmlbench.numerics.neighbors import kneighbors


def heat_kernel_neighbours(X: np.ndarray, k: int, *, method: str) -> sp.csr_matrix:
    """R (n x n): row i holds the heat-kernel weights of i's k nearest rows (``knn_S.m``),
    not symmetrised, with no self link: where an identical row precedes i, so that i itself
    is among its k neighbours, its weight exp(0) = 1 falls on the diagonal, which the callers
    fill or cancel themselves.

    The order and the squared distances are :func:`pmlbench.numerics.neighbors.kneighbors`'
    (re-measured without BLAS near the k-th, so no CPU decides a tie). ``method`` names the
    caller in the error raised when σ is 0 (every row has an identical twin).
    """
    n = X.shape[0]
    order = kneighbors(X, X, k + 1)
    rows = np.repeat(np.arange(n), k + 1)
    D = squared_distances(X, X, rows, order.ravel()).reshape(n, k + 1)
    sigma = float(D[:, 1].sum()) / n
    if sigma <= 0:
        raise PmlbenchError(
            f"{method}: every training instance has an identical twin, so the kNN graph's "
            "width (mean distance to the nearest other instance) is 0; remove duplicate rows"
        )
    rows, cols = rows.reshape(n, k + 1)[:, 1:].ravel(), order[:, 1:].ravel()
    weights = np.exp(-D[:, 1:].ravel() / (2.0 * sigma**2))
    off = rows != cols
    return sp.csr_matrix((weights[off], (rows[off], cols[off])), shape=(n, n))
