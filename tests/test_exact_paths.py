"""The fast exact paths give today's numbers bit for bit (docs/protocol.md, "Reproducibility").

Each kernel-independent decision has a slow reference (the scalar Lawson-Hanson in Python
floats, the re-measurement of every kNN candidate, the einsum Gram matrices) and a fast path
that must reproduce it exactly: the Lawson-Hanson steps run for all rows at once, Gram
matrices of whole numbers from BLAS or sparse products, kNN candidates re-measured only where
their BLAS distances are too close to order. Compared on real data with many duplicate rows
(genbase, medical, bibtex subsets), dense and sparse, through the bits of the float64 values.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import pmlbench.numerics.exact as exact
import pmlbench.numerics.neighbors as neighbors_module
from pmlbench.datasets.bundled import bibtex, genbase, medical, yeast
from pmlbench.numerics.enrichment import knn_graph, nnls_weights
from pmlbench.numerics.exact import (
    canonical_nnls,
    canonical_nnls_batch,
    row_grams,
    row_groups,
    squared_distances,
    squared_row_norms,
)


def bits(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


def same_bits(a, b) -> bool:
    return np.shape(a) == np.shape(b) and np.array_equal(bits(a), bits(b))


def scalar_nnls_weights(X, neighbors: np.ndarray) -> sp.csr_matrix:
    """nnls_weights as it was written before the batch solver: one row at a time, one
    canonical_nnls call per row, on Gram matrices from einsum (the reference numbers). The
    one copy lives in benchmarks/bench_exactness.py, which times the same reference."""
    return _bench_exactness().scalar_nnls_weights(X, neighbors)


@functools.cache
def _bench_exactness():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_exactness.py"
    spec = importlib.util.spec_from_file_location("bench_exactness", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def nnls_problems(rng, count: int, m: int, kind: str):
    """Padded NNLS problems (G, g, ||b||^2, sizes) of one kind."""
    G = np.zeros((count, m, m))
    g = np.zeros((count, m))
    b_norm = np.zeros(count)
    sizes = rng.integers(1, m + 1, size=count)
    for t, s in enumerate(sizes):
        d = int(rng.integers(1, 2 * m))
        if kind == "binary":  # repeated and nested columns: ties and dependent columns
            A = (rng.random((d, s)) < 0.3).astype(float)
            x = (rng.random(d) < 0.3).astype(float)
        elif kind == "dependent":  # columns nearly in the span of others: pivots fail
            B = rng.normal(size=(d, max(1, s // 2)))
            A = B @ rng.random((B.shape[1], s)) + 1e-6 * rng.normal(size=(d, s))
            x = B @ rng.random(B.shape[1]) if t % 2 else rng.normal(size=d)
        else:
            A, x = rng.normal(size=(d, s)), rng.normal(size=d)
        G[t, :s, :s] = np.einsum("di,dj->ij", A, A)
        g[t, :s] = np.einsum("di,d->i", A, x)
        b_norm[t] = float(x @ x)
    return G, g, b_norm, sizes


def record_solves(monkeypatch) -> list[tuple[int, bool]]:
    """(size of the solved set, whether its pivots passed) for each scalar Cholesky solve."""
    calls: list[tuple[int, bool]] = []
    original = exact._cholesky_solve

    def recording(G, rhs, passive):
        z = original(G, rhs, passive)
        calls.append((len(passive), z is not None))
        return z

    monkeypatch.setattr(exact, "_cholesky_solve", recording)
    return calls


@pytest.mark.parametrize("kind", ["normal", "binary", "dependent"])
def test_the_batch_lawson_hanson_is_the_scalar_one_bit_for_bit(monkeypatch, kind):
    G, g, b_norm, sizes = nnls_problems(np.random.default_rng(7), 400, 10, kind)
    fast = canonical_nnls_batch(G, g, b_norm, sizes)
    calls = record_solves(monkeypatch)
    reference = np.zeros_like(fast)
    steps_back = failed_pivots = 0
    for t, s in enumerate(sizes):
        calls.clear()
        reference[t, :s] = canonical_nnls(G[t, :s, :s], g[t, :s], b_norm[t])
        sets = [size for size, _ in calls]
        steps_back += any(b < a for a, b in zip(sets, sets[1:], strict=False))
        failed_pivots += not all(passed for _, passed in calls)
    assert same_bits(fast, reference)
    # the problems take every branch: steps back (a smaller set solved next) and, where
    # columns depend on each other, failing pivots
    assert steps_back > 0
    assert failed_pivots > 0 or kind != "dependent"


def test_the_batch_lawson_hanson_hands_odd_rows_to_the_scalar_one():
    G, g, b_norm, sizes = nnls_problems(np.random.default_rng(8), 60, 6, "normal")
    G[3, 0, 1] = G[3, 1, 0] = np.nan  # a step back without a blocking variable
    g[5, 0] = np.inf
    fast = canonical_nnls_batch(G, g, b_norm, sizes)
    for t, s in enumerate(sizes):
        assert same_bits(fast[t, :s], canonical_nnls(G[t, :s, :s], g[t, :s], b_norm[t]))


def test_the_batch_lawson_hanson_without_sizes_solves_every_column():
    G, g, b_norm, _ = nnls_problems(np.random.default_rng(9), 30, 5, "binary")
    fast = canonical_nnls_batch(G, g, b_norm)
    for t in range(30):
        assert same_bits(fast[t], canonical_nnls(G[t], g[t], b_norm[t]))


def training_half(dataset, rows: int | None = None):
    X = sp.csr_matrix(dataset().X)
    X = X[: X.shape[0] // 2]
    return X if rows is None else X[:rows]


@pytest.mark.parametrize(
    ("dataset", "rows"),
    [(genbase, None), (medical, None), (bibtex, 900), (yeast, 400)],
    ids=["genbase", "medical", "bibtex", "yeast"],
)
@pytest.mark.parametrize("form", ["sparse", "dense"])
def test_nnls_weights_are_the_row_by_row_numbers_on_real_data(dataset, rows, form):
    X = training_half(dataset, rows)
    X = X if form == "sparse" else X.toarray()
    N = knn_graph(X, 10)
    fast, reference = nnls_weights(X, N), scalar_nnls_weights(X, N)
    assert np.array_equal(fast.indptr, reference.indptr)
    assert np.array_equal(fast.indices, reference.indices)
    assert same_bits(fast.data, reference.data)
    if dataset is genbase:  # duplicate rows everywhere: copies, shared weights, x_i = 0
        groups = row_groups(X)
        assert len(np.unique(groups)) < 0.7 * X.shape[0]


def test_gram_matrices_of_whole_numbers_are_the_einsum_ones():
    rng = np.random.default_rng(2)
    binary = training_half(genbase)
    counts = sp.csr_matrix(rng.poisson(0.8, size=(150, 40)) * rng.choice([-1, 1], size=(150, 40)))
    for X in (binary, counts):
        index = rng.integers(0, X.shape[0], size=(X.shape[0], 7))
        dense = X.toarray()
        reference = np.einsum("imd,ind->imn", dense[index], dense[index], optimize=False)
        for form in (X, dense, X.astype(np.int64), dense.astype(np.int32)):
            assert same_bits(row_grams(form, index), reference)


def test_whole_numbers_in_integer_arrays_do_not_overflow():
    X = np.array([[50_000, 3], [1, 1]], dtype=np.int32)  # 50,000^2 overflows int32
    expected = np.array([[2_500_000_009.0, 50_003.0], [50_003.0, 2.0]])
    for form in (X, sp.csr_matrix(X)):
        assert list(squared_row_norms(form)) == [2_500_000_009.0, 2.0]
        assert same_bits(row_grams(form, np.array([[0, 1]]))[0], expected)


def test_gram_matrices_of_other_values_keep_the_einsum_path():
    X = training_half(yeast, 200).toarray()
    index = np.random.default_rng(3).integers(0, 200, size=(200, 6))
    reference = np.einsum("imd,ind->imn", X[index], X[index], optimize=False)
    assert same_bits(row_grams(X, index), reference)
    assert same_bits(row_grams(sp.csr_matrix(X), index), reference)


def halves_of(X: sp.csr_matrix) -> sp.csr_matrix:
    """The same matrix with every value stored as two halves under its column, in reverse."""
    counts = np.diff(X.indptr)
    indptr = np.concatenate([[0], np.cumsum(2 * counts)])
    indices = np.empty(2 * X.nnz, dtype=X.indices.dtype)
    values = np.empty(2 * X.nnz)
    for r in range(X.shape[0]):
        lo, hi = X.indptr[r], X.indptr[r + 1]
        cols, vals = X.indices[lo:hi], X.data[lo:hi]
        indices[indptr[r] : indptr[r + 1]] = np.concatenate([cols, cols])[::-1]
        values[indptr[r] : indptr[r + 1]] = np.concatenate([vals / 2, vals / 2])[::-1]
    return sp.csr_matrix((values, indices, indptr), shape=X.shape)


def test_row_groups_read_a_sparse_matrix_in_canonical_form():
    X = training_half(genbase)
    reference = row_groups(X)
    assert len(np.unique(reference)) < X.shape[0]  # genbase repeats rows
    halves = halves_of(X)
    halves.has_canonical_format = True  # a stale flag must not skip the summing
    assert list(row_groups(halves)) == list(reference)
    assert list(row_groups(X.toarray())) == list(reference)
    # explicit zeros (also -0.0), entries that cancel, unsorted indices
    Z = sp.csr_matrix(
        (
            np.array([1.0, 0.0, 2.0, 0.5, -2.0, 0.5, 1.0, -0.0, 1.0, 1.0]),
            np.array([0, 1, 1, 0, 1, 0, 1, 0, 0, 1]),
            np.array([0, 2, 6, 8, 9, 10]),
        ),
        shape=(5, 2),
    )
    Z.has_canonical_format = True
    assert list(row_groups(Z)) == [0, 0, 1, 0, 1]  # [1, 0] three times, [0, 1] twice
    # the input is left as it was
    assert halves.nnz == 2 * X.nnz


def test_nnls_weights_of_a_matrix_stored_in_halves_are_the_canonical_ones():
    X = training_half(genbase)
    N = knn_graph(X, 10)
    assert same_bits(nnls_weights(halves_of(X), N).data, nnls_weights(X, N).data)


def brute_force_neighbours(X_query, X_ref, k: int, exclude_self: bool):
    """The definition: all exact squared distances, ordered by (distance, index)."""
    nq, nr = X_query.shape[0], X_ref.shape[0]
    rows, cols = np.divmod(np.arange(nq * nr), nr)
    D = squared_distances(X_query, X_ref, rows, cols).reshape(nq, nr)
    if exclude_self:
        D[np.arange(nq), np.arange(nq)] = np.inf
    order = np.lexsort((np.broadcast_to(np.arange(nr), D.shape), D), axis=1)[:, :k]
    return order, np.sqrt(np.take_along_axis(D, order, axis=1))


def count_measured_pairs(monkeypatch) -> list[int]:
    pairs: list[int] = []
    original = neighbors_module.squared_distances

    def counting(A, B, rows, cols):
        pairs.append(len(rows))
        return original(A, B, rows, cols)

    monkeypatch.setattr(neighbors_module, "squared_distances", counting)
    return pairs


def rounded_like_another_kernel(monkeypatch, seed: int) -> None:
    """BLAS distances with a relative error of the size of another kernel's rounding, so
    that a tie is no longer a tie in the screened values."""
    original = neighbors_module.euclidean_distances
    rng = np.random.default_rng(seed)

    def perturbed(*args, **kwargs):
        D = original(*args, **kwargs)
        return D * (1.0 + 1e-15 * rng.standard_normal(D.shape))

    monkeypatch.setattr(neighbors_module, "euclidean_distances", perturbed)


@pytest.mark.parametrize("form", ["sparse", "dense"])
@pytest.mark.parametrize("rounding", [None, 5, 6])
def test_knn_measures_again_only_near_ties_and_gives_the_exact_neighbours(
    monkeypatch, form, rounding
):
    rng = np.random.default_rng(4)
    base = rng.normal(size=(150, 12))
    near = base[10:20] + 1e-10 * rng.normal(size=(10, 12))  # closer than the margin
    X = np.vstack([base, base[:10], near])  # exact ties, and near-ties only exact values order
    X = sp.csr_matrix(X) if form == "sparse" else X
    pairs = count_measured_pairs(monkeypatch)
    if rounding is not None:
        rounded_like_another_kernel(monkeypatch, rounding)
    for exclude_self in (True, False):
        for with_distances in (False, True):
            pairs.clear()
            found = neighbors_module.kneighbors(
                X, X, 8, exclude_self=exclude_self, return_distance=with_distances
            )
            idx, dist = brute_force_neighbours(X, X, 8, exclude_self)
            if with_distances:
                assert np.array_equal(found[0], idx) and same_bits(found[1], dist)
            else:
                assert np.array_equal(found, idx)
                # the copies (tied wherever they are candidates) are measured again, not
                # every candidate as before
                assert 0 < sum(pairs) < X.shape[0] * 8 / 2


def test_knn_general_path_matches_the_definition_on_binary_data_full_of_ties(monkeypatch):
    X = training_half(medical, 300)
    monkeypatch.setattr(neighbors_module, "_integer_valued", lambda X: False)
    query = training_half(medical)[300:360]
    for args, exclude_self in (((X, X), True), ((query, X), False)):
        idx, dist = neighbors_module.kneighbors(
            *args, 10, exclude_self=exclude_self, return_distance=True
        )
        ref_idx, ref_dist = brute_force_neighbours(*args, 10, exclude_self)
        assert np.array_equal(idx, ref_idx) and same_bits(dist, ref_dist)


def test_searching_a_set_among_itself_checks_for_whole_numbers_once(monkeypatch):
    X = training_half(genbase)
    checked = []
    original = neighbors_module._integer_valued
    monkeypatch.setattr(
        neighbors_module, "_integer_valued", lambda A: checked.append(A) or original(A)
    )
    neighbors_module.kneighbors(X, X, 5, exclude_self=True)
    assert len(checked) == 1
    checked.clear()
    neighbors_module.kneighbors(X[:20], X, 5)
    assert len(checked) == 2
