"""Computations whose results do not depend on the BLAS kernel, the thread count or the CPU.

OpenBLAS picks its kernels by CPU (Haswell, SkylakeX, ...), and each kernel sums products in
its own order, so a BLAS result can differ in its last bits from one machine to the next.
That is harmless for a value, but not for a *decision* that hinges on an exact tie or zero:
which of two equidistant neighbours comes first, which of several equally good non-negative
least-squares solutions is returned, which of two equidistant centres a point joins. The
helpers here decide such cases by an explicit rule, from values computed without BLAS
(element-wise numpy operations and reductions in a fixed order, identical on every machine):

- :func:`row_groups`: which rows of a matrix are identical (exactly, entry by entry).
- :func:`squared_distances`: ``||a_i - b_i||^2`` for pairs of rows, without BLAS.
- :func:`gemm_distance_margin`: how far a BLAS-computed squared distance
  ``||a||^2 + ||b||^2 - 2 a.b`` can be from the exact one; candidates within this margin of a
  decision boundary are re-decided with :func:`squared_distances`.
- :func:`row_grams`: Gram matrices of small row sets, without BLAS.
- :func:`canonical_nnls`: Lawson-Hanson NNLS on a Gram matrix with every choice made by a
  stated rule, in plain floating point of a fixed order.

docs/protocol.md, "Reproducibility", lists where each rule is used.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

# A BLAS dot product of length d errs by at most about d * 2^-53 * sum |a_j b_j|; this margin
# (relative to ||a||^2 + ||b||^2) covers d up to about 10^6 with a factor 10 to spare.
GEMM_RELATIVE_MARGIN = 1e-9

# Lawson-Hanson: a gradient entry within this fraction of its scale is zero (the residual is
# orthogonal to that column), and a Cholesky pivot below this fraction of its diagonal means
# the column lies in the span of the passive ones.
NNLS_RELATIVE_TOL = 1e-10


def row_groups(X) -> np.ndarray:
    """Group id of every row of X: equal ids exactly for entry-wise identical rows.

    Ids are numbered by first occurrence (row 0 has id 0). Dense or sparse input; -0.0 and
    0.0 are the same value, explicit zeros of a sparse matrix are ignored.
    """
    n = X.shape[0]
    ids = np.empty(n, dtype=np.int64)
    seen: dict[bytes, int] = {}
    if sp.issparse(X):
        A = sp.csr_matrix(X, copy=True)
        A.eliminate_zeros()
        A.sort_indices()
        for i in range(n):
            lo, hi = A.indptr[i], A.indptr[i + 1]
            key = (
                A.indices[lo:hi].astype(np.int64).tobytes()
                + (A.data[lo:hi].astype(np.float64) + 0.0).tobytes()
            )
            ids[i] = seen.setdefault(key, len(seen))
    else:
        dense = np.ascontiguousarray(X, dtype=np.float64) + 0.0  # + 0.0 turns -0.0 into 0.0
        for i in range(n):
            ids[i] = seen.setdefault(dense[i].tobytes(), len(seen))
    return ids


def _dense_rows(X, rows: np.ndarray) -> np.ndarray:
    Z = X[rows]
    return Z.toarray() if sp.issparse(Z) else np.asarray(Z, dtype=np.float64)


def squared_distances(A, B, pairs_a: np.ndarray, pairs_b: np.ndarray) -> np.ndarray:
    """``||A[pairs_a[t]] - B[pairs_b[t]]||^2`` for every t, by element-wise operations only.

    Two identical rows of B give bit-identical distances to any row of A, on every machine.
    """
    pairs_a = np.asarray(pairs_a, dtype=np.int64)
    pairs_b = np.asarray(pairs_b, dtype=np.int64)
    out = np.empty(pairs_a.size)
    d = A.shape[1]
    chunk = max(1, 4_000_000 // max(d, 1))
    for start in range(0, pairs_a.size, chunk):
        stop = start + chunk
        diff = _dense_rows(A, pairs_a[start:stop]) - _dense_rows(B, pairs_b[start:stop])
        out[start:stop] = np.sum(diff * diff, axis=1)
    return out


def gemm_distance_margin(norms_a: np.ndarray, norms_b: np.ndarray) -> np.ndarray:
    """An upper bound on the rounding error of a BLAS squared distance, by broadcasting.

    ``norms_a`` and ``norms_b`` are squared row norms; the result is
    :data:`GEMM_RELATIVE_MARGIN` ``* (||a||^2 + ||b||^2)`` plus the smallest normal number.
    """
    return GEMM_RELATIVE_MARGIN * (norms_a + norms_b) + np.finfo(np.float64).tiny


def row_grams(X, index: np.ndarray) -> np.ndarray:
    """Gram matrices ``Z_i Z_i^T`` (n x m x m) of the row sets ``Z_i = X[index[i]]``.

    Computed by ``numpy.einsum`` without its BLAS path, so the same on every machine.
    """
    n, m = index.shape
    d = X.shape[1]
    grams = np.empty((n, m, m))
    chunk = max(1, 4_000_000 // max(m * d, 1))
    for start in range(0, n, chunk):
        rows = index[start : start + chunk]
        Z = _dense_rows(X, rows.ravel()).reshape(len(rows), m, d)
        grams[start : start + chunk] = np.einsum("imd,ind->imn", Z, Z, optimize=False)
    return grams


def _cholesky_solve(G: list[list[float]], rhs: list[float], passive: list[int]):
    """Solve ``G[P, P] z = rhs[P]`` by Cholesky in a fixed order; None if a pivot vanishes."""
    m = len(passive)
    L = [[0.0] * m for _ in range(m)]
    for a in range(m):
        pa = passive[a]
        for b in range(a + 1):
            pb = passive[b]
            s = G[pa][pb]
            for c in range(b):
                s -= L[a][c] * L[b][c]
            if a == b:
                if s <= NNLS_RELATIVE_TOL * G[pa][pa]:
                    return None
                L[a][a] = math.sqrt(s)
            else:
                L[a][b] = s / L[b][b]
    y = [0.0] * m
    for a in range(m):
        s = rhs[passive[a]]
        for c in range(a):
            s -= L[a][c] * y[c]
        y[a] = s / L[a][a]
    z = [0.0] * m
    for a in range(m - 1, -1, -1):
        s = y[a]
        for c in range(a + 1, m):
            s -= L[c][a] * z[c]
        z[a] = s / L[a][a]
    return z


def canonical_nnls(G: np.ndarray, g: np.ndarray, b_norm: float, max_iter: int = 0) -> np.ndarray:
    """``argmin_{v >= 0} ||A v - b||^2`` from ``G = A^T A``, ``g = A^T b``, ``b_norm = ||b||^2``.

    Lawson & Hanson's active-set method (Solving Least Squares Problems, 1974, ch. 23) in the
    normal-equation form, with every choice made by a rule rather than by rounding:

    - the entering column has the largest gradient ``w_j = g_j - (G v)_j``, counted only when
      ``w_j > tol * sqrt(G_jj * ||b||^2)`` (tol = :data:`NNLS_RELATIVE_TOL`); equal gradients
      go to the lower index;
    - a column whose Cholesky pivot is below tol of its diagonal lies in the span of the
      passive columns (its gradient is zero in exact arithmetic) and never enters;
    - the step back stops at the first passive variable (lowest index among equal ratios).

    With linearly independent columns the solution is unique and this is the usual NNLS
    solution; otherwise it is the one these rules reach. All arithmetic is on Python floats in
    a fixed order, so the result is bit-identical on every machine.
    """
    m = G.shape[0]
    Gl = [[float(G[a, b]) for b in range(m)] for a in range(m)]
    gl = [float(x) for x in g]
    scale = [NNLS_RELATIVE_TOL * math.sqrt(max(Gl[j][j], 0.0) * max(b_norm, 0.0)) for j in range(m)]
    v = [0.0] * m
    passive: list[int] = []
    blocked: set[int] = set()
    limit = max_iter or 3 * m + 10
    for _ in range(limit):
        w = [gl[j] - sum(Gl[j][c] * v[c] for c in range(m)) for j in range(m)]
        entering, best = -1, 0.0
        for j in range(m):
            if j in passive or j in blocked or w[j] <= scale[j]:
                continue
            if entering < 0 or w[j] > best:
                entering, best = j, w[j]
        if entering < 0:
            break
        trial = sorted([*passive, entering])
        z = _cholesky_solve(Gl, gl, trial)
        if z is None:
            blocked.add(entering)
            continue
        passive = trial
        for _inner in range(limit):
            if all(zi > 0.0 for zi in z):
                for p, zi in zip(passive, z, strict=True):
                    v[p] = zi
                break
            step, stop_at = 1.0, -1
            for p, zi in zip(passive, z, strict=True):
                if zi <= 0.0:
                    ratio = v[p] / (v[p] - zi)
                    if stop_at < 0 or ratio < step:
                        step, stop_at = ratio, p
            for p, zi in zip(passive, z, strict=True):
                v[p] += step * (zi - v[p])
            v[stop_at] = 0.0
            passive = [p for p in passive if v[p] > 0.0]
            blocked.clear()
            if not passive:
                break
            z = _cholesky_solve(Gl, gl, passive)
            if z is None:  # cannot happen for a subset of independent columns; be safe
                break
    return np.array([max(x, 0.0) for x in v])
