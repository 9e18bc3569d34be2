"""The Euclidean projection onto the probability simplex by the Newton iteration of
``EProjSimplex_new.m`` (the function CcAmbiguous's PML programs share; used by PML-PLR and
PML-DDA).
"""

from __future__ import annotations

import numpy as np

PROJECTION_TOL = 1e-10  # EProjSimplex_new.m: Newton stops when |sum(x) - 1| <= 1e-10
PROJECTION_STEPS = 100  # ... or after 100 steps


def _count_above(A: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """For rows of ``A`` sorted in descending order, how many entries exceed ``shift``
    (vectorised binary search)."""
    rows = np.arange(A.shape[0])
    lo = np.zeros(A.shape[0], dtype=np.int64)
    hi = np.full(A.shape[0], A.shape[1], dtype=np.int64)
    while (lo < hi).any():
        mid = (lo + hi) // 2
        open_ = lo < hi
        above = A[rows, np.minimum(mid, A.shape[1] - 1)] > shift
        lo = np.where(open_ & above, mid + 1, lo)
        hi = np.where(open_ & ~above, mid, hi)
    return lo


def project_rows_to_simplex(V: np.ndarray) -> np.ndarray:
    """``EProjSimplex_new.m`` applied to every row of ``V`` (in place): the Euclidean
    projection onto {x >= 0, Σx = 1} by the authors' Newton iteration on the shift λ of
    ``x = max(v0 − λ, 0)`` (at most 100 steps; stop when the sum is within 1e-10 of 1).

    The same Newton steps, each in O(log n) per row: with every row sorted once, the number
    of entries above λ and their sum come from a binary search and a cumulative sum.
    """
    n = V.shape[1]
    V -= V.mean(axis=1, keepdims=True) - 1.0 / n
    rows = np.flatnonzero(V.min(axis=1) < 0)  # the others are on the simplex already
    if rows.size:
        A = np.sort(V[rows], axis=1)[:, ::-1]  # descending
        prefix = np.cumsum(A, axis=1)
        shift = np.zeros(rows.size)
        final = np.zeros(rows.size)
        active = np.arange(rows.size)
        for step in range(1, PROJECTION_STEPS + 1):
            count = np.maximum(_count_above(A[active], shift[active]), 1)
            f = prefix[active, count - 1] - count * shift[active] - 1.0
            done = (np.abs(f) <= PROJECTION_TOL) | (step == PROJECTION_STEPS)
            final[active[done]] = shift[active[done]]
            keep = ~done
            shift[active[keep]] += f[keep] / count[keep]
            active = active[keep]
            if active.size == 0:
                break
        V[rows] = np.maximum(V[rows] - final[:, None], 0.0)
    return V
