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
- :func:`row_grams`: Gram matrices of small row sets, exact (whole numbers: from BLAS, whose
  integer sums are exact in any order) or without BLAS.
- :func:`canonical_nnls`: Lawson-Hanson NNLS on a Gram matrix with every choice made by a
  stated rule, in plain floating point of a fixed order; :func:`canonical_nnls_batch` runs
  it for many problems at once with the same operations, bit for bit.

Exactness is paid for only where it decides something: BLAS where its result is exact
(whole numbers), element-wise numpy operations in the scalar order elsewhere, and a second
measurement only for values within the rounding margin of a decision.

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

# Whole numbers whose squared row norms stay below this give exact BLAS dot products: every
# product and partial sum of a.b is an integer of size at most (|a|^2 + |b|^2) / 2 < 2**53.
EXACT_SQUARED_NORM = 2.0**50


def row_groups(X) -> np.ndarray:
    """Group id of every row of X: equal ids exactly for entry-wise identical rows.

    Ids are numbered by first occurrence (row 0 has id 0). Dense or sparse input; -0.0 and
    0.0 are the same value. A sparse matrix is compared in canonical form, on a copy:
    entries stored twice under one column are summed (as scipy reads them), indices sorted,
    explicit zeros dropped, so two storages of the same row are one group.
    """
    n = X.shape[0]
    ids = np.empty(n, dtype=np.int64)
    seen: dict[bytes, int] = {}
    if sp.issparse(X):
        A = sp.csr_matrix(X)
        # rebuilt from copies of the arrays, so that no canonical-format flag carried over
        # from X lets sum_duplicates skip its work
        A = sp.csr_matrix(
            (A.data.astype(np.float64), A.indices.copy(), A.indptr.copy()), shape=A.shape
        )
        A.sum_duplicates()  # also sorts the indices
        A.eliminate_zeros()
        for i in range(n):
            lo, hi = A.indptr[i], A.indptr[i + 1]
            key = A.indices[lo:hi].astype(np.int64).tobytes() + (A.data[lo:hi] + 0.0).tobytes()
            ids[i] = seen.setdefault(key, len(seen))
    else:
        dense = np.ascontiguousarray(X, dtype=np.float64) + 0.0  # + 0.0 turns -0.0 into 0.0
        for i in range(n):
            ids[i] = seen.setdefault(dense[i].tobytes(), len(seen))
    return ids


def whole_numbers(X) -> bool:
    """Whether ``X`` (dense or sparse) holds float64 or integer whole numbers only (lower
    precisions are left out: their products may round)."""
    values = X.data if sp.issparse(X) else np.asarray(X)
    if values.dtype.kind not in "iub" and values.dtype != np.float64:
        return False
    return bool(np.all(np.isfinite(values)) and np.all(values == np.round(values)))


def squared_row_norms(X) -> np.ndarray:
    """``||x_i||^2`` of every row (dense or sparse); exact for whole numbers below 2**53.
    Integer input is summed in float64, where it cannot overflow."""
    if not sp.issparse(X):
        X = np.asarray(X)
    if X.dtype.kind in "iub":
        X = X.astype(np.float64)
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", X, X)


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

    The same on every machine. Whole numbers whose squared row norms stay below 2**50 (binary
    and count features) have exact dot products whatever the order of the sums (every
    product and partial sum is an integer below 2**53): they are taken from BLAS, or for a
    sparse matrix from scipy's sparse products, one position pair at a time. Other values go
    through ``numpy.einsum`` without its BLAS path, in a fixed order.
    """
    index = np.asarray(index, dtype=np.int64)
    n, m = index.shape
    d = X.shape[1]
    rows_used = np.unique(index)
    whole = (
        whole_numbers(X)
        and float(squared_row_norms(X[rows_used]).max(initial=0.0)) < EXACT_SQUARED_NORM
    )
    if whole and sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        sets = [X[index[:, a]] for a in range(m)]
        grams = np.empty((n, m, m))
        for a in range(m):
            for b in range(a, m):
                dots = np.asarray(sets[a].multiply(sets[b]).sum(axis=1), dtype=np.float64)
                grams[:, a, b] = grams[:, b, a] = dots.ravel()
        return grams
    grams = np.empty((n, m, m))
    chunk = max(1, 4_000_000 // max(m * d, 1))
    for start in range(0, n, chunk):
        rows = index[start : start + chunk]
        Z = _dense_rows(X, rows.ravel()).reshape(len(rows), m, d)
        if whole:
            grams[start : start + chunk] = Z @ Z.transpose(0, 2, 1)
        else:
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


def _sequential_dot(row: list[float], v: list[float]) -> float:
    """``sum_c row[c] * v[c]`` added left to right from 0.0 (as ``sum()`` does up to Python
    3.11; later versions compensate, which would move the last bits)."""
    total = 0.0
    for a, b in zip(row, v, strict=True):
        total += a * b
    return total


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
        w = [gl[j] - _sequential_dot(Gl[j], v) for j in range(m)]
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


def _batch_cholesky_solve(
    G: np.ndarray, rhs: np.ndarray, S: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_cholesky_solve` for many systems at once, the same operations in the same order.

    System t solves ``G[t][P, P] z = rhs[t][P]`` with P the positions where ``S[t]`` holds,
    ascending. Every entry of the factor and of the two substitutions is the same sequence of
    subtractions, ascending over P, as in the scalar version, so the values are bit-identical;
    the factor is merely built column by column. Returns (z with zeros off P, whether every
    pivot passed). A pivot that passes is positive (``s > tol * G_bb`` with ``s <= G_bb``),
    so the square roots are those of ``math.sqrt``.
    """
    n, m = S.shape
    positions = np.arange(m)
    L = np.ones((n, m, m))
    ok = np.ones(n, dtype=bool)
    for b in range(m):
        s = G[:, b:, b].copy()  # s[:, a - b] = G[a][b] for a >= b
        for c in range(b):
            s = np.where(S[:, c, None], s - L[:, b:, c] * L[:, b, c, None], s)
        on = S[:, b]
        ok &= ~(on & (s[:, 0] <= NNLS_RELATIVE_TOL * G[:, b, b]))
        pivot = np.sqrt(np.where(on & ok, s[:, 0], 1.0))
        L[:, b, b] = pivot
        L[:, b + 1 :, b] = s[:, 1:] / pivot[:, None]
    y = np.zeros((n, m))
    s = rhs.copy()
    for c in range(m):
        y[:, c] = s[:, c] / L[:, c, c]
        later = S[:, c, None] & (positions > c)
        s = np.where(later, s - L[:, :, c] * y[:, c, None], s)
    z = np.zeros((n, m))
    for a in range(m - 1, -1, -1):
        t = y[:, a]
        for c in range(a + 1, m):
            t = np.where(S[:, c], t - L[:, c, a] * z[:, c], t)
        z[:, a] = np.where(S[:, a], t / L[:, a, a], 0.0)
    return z, ok


_OUTER, _INNER, _DONE = 0, 1, 2


def canonical_nnls_batch(
    G: np.ndarray, g: np.ndarray, b_norm: np.ndarray, sizes: np.ndarray | None = None
) -> np.ndarray:
    """:func:`canonical_nnls` of many problems at once, bit-identical to one call per problem.

    Problem t is ``canonical_nnls(G[t, :s, :s], g[t, :s], b_norm[t])`` with ``s = sizes[t]``
    (default: all m columns); its result fills ``out[t, :s]``, the rest of the row is 0.
    The problems advance in lockstep through the same Lawson-Hanson steps, each step as
    element-wise numpy operations over all problems that take it: every float operation of
    the scalar version, in its order (no BLAS, no reassociation), so the same numbers on every
    machine at a fraction of the interpreter's cost. A problem that leaves the usual path (an
    iteration limit reached, a step back without a blocking variable, which only non-finite
    values cause) is solved again by :func:`canonical_nnls` itself.
    """
    G = np.asarray(G, dtype=np.float64)
    g = np.asarray(g, dtype=np.float64)
    b_norm = np.asarray(b_norm, dtype=np.float64)
    n, m = g.shape
    sizes = np.full(n, m, dtype=np.int64) if sizes is None else np.asarray(sizes, np.int64)
    positions = np.arange(m)
    valid = positions[None, :] < sizes[:, None]
    diag = np.diagonal(G, axis1=1, axis2=2)
    with np.errstate(all="ignore"):
        # max(x, 0.0) as Python evaluates it: x unless 0.0 > x
        scale = NNLS_RELATIVE_TOL * np.sqrt(
            np.where(0.0 > diag, 0.0, diag) * np.where(0.0 > b_norm, 0.0, b_norm)[:, None]
        )
    limit = 3 * sizes + 10
    v = np.zeros((n, m))
    z = np.zeros((n, m))
    passive = np.zeros((n, m), dtype=bool)
    blocked = np.zeros((n, m), dtype=bool)
    phase = np.full(n, _OUTER)
    outer_steps = np.zeros(n, dtype=np.int64)
    inner_steps = np.zeros(n, dtype=np.int64)
    entering = np.full(n, -1)
    redo = np.zeros(n, dtype=bool)  # solved again by canonical_nnls
    with np.errstate(all="ignore"):
        while True:
            # the inner loop's test: accept z, or step back towards it
            t = np.flatnonzero(phase == _INNER)
            solve_rows, solve_sets = [], []
            if t.size:
                inner_steps[t] += 1
                over = inner_steps[t] > limit[t]
                redo[t[over]] = True
                phase[t[over]] = _DONE
                t = t[~over]
                zt, Pt, vt = z[t], passive[t], v[t]
                accept = np.all(~Pt | (zt > 0.0), axis=1)
                vt = np.where(Pt & accept[:, None], zt, vt)
                phase[t[accept]] = _OUTER
                back = ~accept
                step = np.ones(t.size)
                stop = np.full(t.size, -1)
                for p in range(m):
                    ratio = vt[:, p] / (vt[:, p] - zt[:, p])
                    take = back & Pt[:, p] & (zt[:, p] <= 0.0) & ((stop < 0) | (ratio < step))
                    step = np.where(take, ratio, step)
                    stop = np.where(take, p, stop)
                lost = back & (stop < 0)
                redo[t[lost]] = True
                phase[t[lost]] = _DONE
                back &= ~lost
                moved = np.where(Pt & back[:, None], vt + step[:, None] * (zt - vt), vt)
                rows = np.flatnonzero(back)
                moved[rows, stop[rows]] = 0.0
                v[t] = moved
                passive[t[back]] = Pt[back] & (moved[back] > 0.0)
                blocked[t[back]] = False
                empty = back & ~passive[t].any(axis=1)
                phase[t[empty]] = _OUTER
                again = t[back & ~empty]
                solve_rows.append(again)
                solve_sets.append(passive[again])
            # an outer iteration: the gradient, the entering column, the trial set
            o = np.flatnonzero(phase == _OUTER)
            if o.size:
                outer_steps[o] += 1
                finished = outer_steps[o] > limit[o]
                phase[o[finished]] = _DONE
                o = o[~finished]
                vo, Go, Vo = v[o], G[o], valid[o]
                acc = np.zeros((o.size, m))
                for c in range(m):
                    acc = np.where(Vo[:, c, None], acc + Go[:, :, c] * vo[:, c, None], acc)
                w = g[o] - acc
                eligible = Vo & ~passive[o] & ~blocked[o] & ~(w <= scale[o])
                enter = np.full(o.size, -1)
                best = np.zeros(o.size)
                for j in range(m):
                    take = eligible[:, j] & ((enter < 0) | (w[:, j] > best))
                    enter = np.where(take, j, enter)
                    best = np.where(take, w[:, j], best)
                none = enter < 0
                phase[o[none]] = _DONE
                o, enter = o[~none], enter[~none]
                entering[o] = enter
                trial = passive[o].copy()
                trial[np.arange(o.size), enter] = True
                solve_rows.append(o)
                solve_sets.append(trial)
            rows = np.concatenate(solve_rows) if solve_rows else np.empty(0, dtype=np.int64)
            if rows.size == 0:
                if not np.any(phase != _DONE):
                    break
                continue
            sets = np.concatenate(solve_sets)
            solution, ok = _batch_cholesky_solve(G[rows], g[rows], sets)
            from_outer = phase[rows] == _OUTER
            # outer: a trial set whose pivot fails blocks its entering column
            fail = rows[from_outer & ~ok]
            blocked[fail, entering[fail]] = True
            good = from_outer & ok
            passive[rows[good]] = sets[good]
            inner_steps[rows[good]] = 0
            # inner: a failing pivot leaves the inner loop
            phase[rows[~from_outer & ~ok]] = _OUTER
            z[rows[ok]] = solution[ok]
            phase[rows[ok]] = _INNER
    out = np.where(0.0 > v, 0.0, v)
    out[~valid] = 0.0
    for row in np.flatnonzero(redo).tolist():
        size = int(sizes[row])
        out[row] = 0.0
        out[row, :size] = canonical_nnls(G[row, :size, :size], g[row, :size], float(b_norm[row]))
    return out
