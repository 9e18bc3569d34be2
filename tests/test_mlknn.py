"""ML-kNN against a plain, loop-based transcription of Zhang & Zhou (2007) on real data."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from pmlbench.datasets.bundled import genbase, medical, yeast
from pmlbench.errors import PmlbenchError
from pmlbench.methods.mlknn import MLkNN
from pmlbench.noise.uniform import uniform_noise
from pmlbench.numerics.mlknn_model import QueryNeighbours
from pmlbench.numerics.neighbors import kneighbors
from pmlbench.testing import check_fit_grid


def plain_mlknn(X_train, Y, X_test, k=10, s=1.0):
    """MLKNN_train.m / MLKNN_test.m written as loops, one instance at a time."""
    n, q = Y.shape
    prior1 = (s + Y.sum(axis=0)) / (2 * s + n)
    c1 = np.zeros((q, k + 1))
    c0 = np.zeros((q, k + 1))
    for i in range(n):
        d = np.sqrt(((X_train - X_train[i]) ** 2).sum(axis=1))
        d[i] = np.finfo(float).max
        neighbours = np.argsort(d, kind="stable")[:k]
        for j in range(q):
            r = int(Y[neighbours, j].sum())
            if Y[i, j] == 1:
                c1[j, r] += 1
            else:
                c0[j, r] += 1
    cond1 = (s + c1) / (s * (k + 1) + c1.sum(axis=1, keepdims=True))
    cond0 = (s + c0) / (s * (k + 1) + c0.sum(axis=1, keepdims=True))
    out = np.zeros((len(X_test), q))
    for t, x in enumerate(X_test):
        d = np.sqrt(((X_train - x) ** 2).sum(axis=1))
        neighbours = np.argsort(d, kind="stable")[:k]
        for j in range(q):
            r = int(Y[neighbours, j].sum())
            p1 = prior1[j] * cond1[j, r]
            p0 = (1 - prior1[j]) * cond0[j, r]
            out[t, j] = p1 / (p1 + p0)
    return out


@pytest.mark.parametrize("loader", [genbase, medical])
def test_mlknn_equals_plain_implementation_on_real_data(loader):
    data = loader()
    rng = np.random.default_rng(0)
    order = rng.permutation(data.n_instances)
    train, test = order[:300], order[300:400]
    X = data.X.toarray()
    expected = plain_mlknn(X[train], data.Y[train], X[test])
    model = MLkNN().fit(data.X[train], data.Y[train])  # sparse input
    np.testing.assert_allclose(model.decision_function(data.X[test]), expected, rtol=1e-12)
    np.testing.assert_array_equal(model.predict(data.X[test]), (expected >= 0.5).astype(int))
    dense = MLkNN().fit(X[train], data.Y[train]).decision_function(X[test])
    np.testing.assert_allclose(dense, expected, rtol=1e-12)


def test_neighbours_break_ties_by_lower_index_and_exclude_self():
    X = np.array([[0.0], [1.0], [1.0], [1.0], [5.0]])
    idx = kneighbors(X, X, 2, exclude_self=True)
    assert idx[0].tolist() == [1, 2]
    assert idx[2].tolist() == [1, 3]  # its duplicates, lowest index first, never itself
    assert idx[4].tolist() == [1, 2]
    sparse_idx = kneighbors(sp.csr_matrix(X), sp.csr_matrix(X), 2, exclude_self=True)
    np.testing.assert_array_equal(idx, sparse_idx)


def test_all_zero_and_duplicate_rows_work(rng):
    X = rng.random((40, 5))
    X[:6] = 0.0
    X[10:20] = X[10]
    Y = (rng.random((40, 4)) < 0.4).astype(int)
    scores = MLkNN(k=5).fit(X, Y).decision_function(X)
    assert np.all((scores >= 0) & (scores <= 1))


def test_too_few_instances_is_a_clear_error():
    with pytest.raises(PmlbenchError, match=r"method\.k = 10 neighbours .* method\.k <= 9"):
        MLkNN().fit(np.zeros((10, 3)), np.zeros((10, 2), dtype=int))


def test_labels_must_be_binary():
    with pytest.raises(PmlbenchError, match="0/1"):
        MLkNN(k=2).fit(np.eye(4), np.array([[1, -1]] * 4))


def _noisy_subset(loader, n_train=300, n_eval=100):
    data = loader()
    order = np.random.default_rng(0).permutation(data.n_instances)
    train, held = order[:n_train], order[n_train : n_train + n_eval]
    S = uniform_noise(data.Y[train], np.random.default_rng(0), rate=1.0)
    return data.X[train], S, data.X[held]


@pytest.mark.parametrize("loader", [yeast, genbase])  # real-valued dense; binary sparse
def test_fit_grid_equals_fits_from_scratch(loader):
    X, S, X_eval = _noisy_subset(loader)
    grid = MLkNN.default_tuning_grid
    points = [{"k": k} for k in grid["k"]] + [{"k": 7, "s": 0.5}, {"k": 1, "s": 0.0}]
    assert 3 <= len(grid["k"]) <= 6
    assert check_fit_grid(MLkNN(), X, S, points, X_eval=X_eval, atol=0) == 0.0


def test_sliced_neighbours_equal_a_search_at_each_k():
    """The tie rule (distance, then lower index) makes the first k of a wider search the
    search at k, on real-valued data (refined distances) and on data with duplicate rows."""
    for loader in (yeast, genbase):
        X, _, X_eval = _noisy_subset(loader, n_train=400)
        assert loader is yeast or np.unique(X.toarray(), axis=0).shape[0] < X.shape[0]
        wide = kneighbors(X, X, 25, exclude_self=True)
        query = QueryNeighbours(X, 25)
        for k in (1, 2, 5, 10, 17, 24):
            assert np.array_equal(kneighbors(X, X, k, exclude_self=True), wide[:, :k])
            assert np.array_equal(query(X_eval, k), kneighbors(X_eval, X, k))


def test_fit_grid_searches_each_set_once(monkeypatch):
    X, S, X_eval = _noisy_subset(genbase)
    calls = []

    def counting(*args, **kwargs):
        calls.append(args[2])  # k
        return kneighbors(*args, **kwargs)

    monkeypatch.setattr("pmlbench.numerics.neighbors.kneighbors", counting)  # the training graph
    monkeypatch.setattr("pmlbench.numerics.mlknn_model.kneighbors", counting)  # query sets
    points = [{"k": k} for k in (5, 20, 10)]
    for _, fitted in MLkNN().fit_grid(X, S, points):
        fitted.decision_function(X_eval)
        fitted.decision_function(X_eval)
    assert calls == [20, 20]  # one training graph and one query search, at the largest k
