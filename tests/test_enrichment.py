"""Label enrichment (PML3ER Stage 1): kNN graph, NNLS weights, propagation, Eqs. 2-6."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize

from pmlbench.errors import PmlbenchError
from pmlbench.numerics.enrichment import (
    enrich,
    knn_graph,
    label_enrichment,
    nnls_weights,
    particle_normalize,
    pml3er_normalize,
    propagate,
)


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 15))
    Y = (rng.random((60, 6)) < 0.4).astype(np.uint8)
    return X, Y


def qp_weights(x, A):
    """Eq. 2 by a generic bound-constrained optimiser (independent of NNLS)."""

    def f(v):
        r = A.T @ v - x
        return r @ r, 2 * A @ r

    result = minimize(
        f,
        np.full(A.shape[0], 1 / A.shape[0]),
        jac=True,
        method="L-BFGS-B",
        bounds=[(0, None)] * A.shape[0],
        options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 10_000},
    )
    return result.x, result.fun


def test_knn_graph_excludes_self(data):
    X, _ = data
    N = knn_graph(X, k=5)
    assert N.shape == (60, 5)
    assert not np.any(N == np.arange(60)[:, None])
    D = ((X[:, None] - X[None]) ** 2).sum(-1)
    np.fill_diagonal(D, np.inf)
    np.testing.assert_array_equal(np.sort(N, axis=1), np.sort(np.argsort(D, axis=1)[:, :5], axis=1))


def test_nnls_weights_are_a_normalised_sparse_reconstruction(data):
    X, _ = data
    N = knn_graph(X, k=7)
    V = nnls_weights(X, N)
    assert sp.isspmatrix_csr(V) and V.shape == (60, 60)
    assert np.all(np.diff(V.indptr) == 7)
    assert V.data.min() >= 0
    np.testing.assert_allclose(np.asarray(V.sum(axis=1)).ravel(), 1.0)
    for i in range(60):
        assert set(V[i].nonzero()[1]) <= set(N[i])


def test_nnls_equals_generic_qp_of_eq2(data):
    X, _ = data
    N = knn_graph(X, k=7)
    V = nnls_weights(X, N).toarray()
    for i in range(0, 60, 4):
        A = X[N[i]]
        v_qp, f_qp = qp_weights(X[i], A)
        raw = V[i, N[i]]
        # V is normalised; rescale by the least-squares factor along the same direction
        scale = (A @ X[i]) @ raw / (raw @ A @ A.T @ raw)
        f_nnls = np.sum((A.T @ (scale * raw) - X[i]) ** 2)
        assert f_nnls <= f_qp + 1e-8 * max(1.0, f_qp)
        np.testing.assert_allclose(v_qp / v_qp.sum(), raw, atol=1e-5)


def test_nnls_zero_rows_duplicates_and_low_dimension():
    rng = np.random.default_rng(1)
    X = rng.random((30, 3))  # d < k: rank-deficient neighbour systems
    X[4] = 0.0
    X[7] = X[8]
    N = knn_graph(X, k=5)
    V = nnls_weights(X, N)
    np.testing.assert_allclose(V[4, N[4]].toarray().ravel(), 0.2)  # Eq. 2 fallback: 1/k
    np.testing.assert_allclose(np.asarray(V.sum(axis=1)).ravel(), 1.0)
    assert V.data.min() >= 0
    assert V[7, 8] == pytest.approx(1.0)  # an exact duplicate reconstructs it alone


def test_nnls_dense_and_sparse_agree(data):
    X, _ = data
    X = np.where(np.abs(X) > 1, X, 0.0)
    N = knn_graph(X, k=6)
    np.testing.assert_allclose(
        nnls_weights(X, N).toarray(), nnls_weights(sp.csr_matrix(X), N).toarray(), atol=1e-10
    )


def eq5_loop(F, Y):
    out = np.empty_like(F)
    for i in range(F.shape[0]):
        cand = Y[i] > 0
        vmin = F[i].min()
        cvmax = F[i][cand].max() if cand.any() else vmin
        out[i] = Y[i] if cvmax == vmin else np.minimum(1, (F[i] - vmin) / (cvmax - vmin))
    return out


def test_pml3er_normalize_matches_eq5(data):
    _, Y = data
    rng = np.random.default_rng(2)
    F = rng.random(Y.shape)
    F[3] = 0.5  # constant row: the guard
    Y = Y.copy()
    Y[5] = 0  # no candidate: the guard
    out = pml3er_normalize(F, Y)
    np.testing.assert_allclose(out, eq5_loop(F, Y))
    np.testing.assert_array_equal(out[3], Y[3])
    assert out.min() >= 0 and out.max() <= 1


def test_propagation_fixed_point_and_enrichment_ranges(data):
    X, Y = data
    V = nnls_weights(X, knn_graph(X, k=5))
    for alpha in (0.05, 0.5):
        F, steps = propagate(V.T, Y, alpha, pml3er_normalize, max_iter=500, tol=1e-10)
        assert steps < 500
        again = pml3er_normalize(alpha * (V.T @ F) + (1 - alpha) * Y, Y)
        np.testing.assert_allclose(again, F, atol=1e-9)
        Yhat = enrich(F, Y)
        cand = Y > 0
        assert Yhat[cand].min() >= 0 and Yhat[cand].max() <= 1
        assert Yhat[~cand].min() >= -1 and Yhat[~cand].max() <= 0


def test_propagate_alpha_zero_is_one_normalisation(data):
    X, Y = data
    V = nnls_weights(X, knn_graph(X, k=5))
    F, steps = propagate(V.T, Y, 0.0, pml3er_normalize, max_iter=10, tol=1e-12)
    np.testing.assert_allclose(F, pml3er_normalize(Y.astype(float), Y))
    assert steps == 1  # Y is already normalised: the first step changes nothing


def test_propagate_spectral_stop_and_anchor(data):
    X, Y = data
    P = nnls_weights(X, knn_graph(X, k=5)).T
    F0 = particle_normalize(np.ones(Y.shape), Y)
    F, _ = propagate(
        P, Y, 0.3, particle_normalize, max_iter=200, tol=1e-12, stop_norm="spectral", F0=F0
    )
    again = particle_normalize(0.3 * (P @ F) + 0.7 * F0, Y)
    assert np.linalg.norm(again - F, 2) < 1e-10
    _, steps = propagate(P, Y, 0.3, particle_normalize, max_iter=3, tol=0.0)
    assert steps == 3
    with pytest.raises(PmlbenchError, match="alpha"):
        propagate(P, Y, 1.0, particle_normalize)
    with pytest.raises(PmlbenchError, match="stop_norm"):
        propagate(P, Y, 0.5, particle_normalize, stop_norm="frobenius")


def test_particle_normalize(data):
    _, Y = data
    Y = Y.copy()
    Y[0] = 0
    Y[1, :3] = 1
    F = np.random.default_rng(3).random(Y.shape)
    F[1] = 0.0
    out = particle_normalize(F, Y)
    assert np.all(out[Y == 0] == 0)
    has = Y.sum(axis=1) > 0
    np.testing.assert_allclose(out[has].sum(axis=1), 1.0)
    np.testing.assert_allclose(out[1, Y[1] > 0], 1 / Y[1].sum())
    assert out[0].sum() == 0


def test_label_enrichment_single_label_candidates(data):
    X, _ = data
    Y = np.zeros((60, 4), dtype=np.uint8)
    Y[np.arange(60), np.arange(60) % 4] = 1
    Yhat, info = label_enrichment(X, Y, k=5, alpha=0.5)
    # a single candidate is its own row maximum: Eq. 5 maps it to 1
    np.testing.assert_allclose(Yhat[Y > 0], 1.0)
    assert Yhat[Y == 0].max() <= 0 and Yhat.min() >= -1
    assert set(info["seconds"]) == {"knn", "nnls", "propagation"}


def test_label_enrichment_propagates_with_v_transposed_as_eq4_is_written(data):
    X, Y = data
    V = nnls_weights(X, knn_graph(X, k=5))
    for transpose, P in ((True, V.T), (False, V)):
        F, _ = propagate(P, Y, 0.5, pml3er_normalize)
        Yhat, _ = label_enrichment(X, Y, k=5, alpha=0.5, transpose=transpose)
        np.testing.assert_allclose(Yhat, enrich(F, Y))
    assert not np.allclose(
        label_enrichment(X, Y, k=5, transpose=True)[0],
        label_enrichment(X, Y, k=5, transpose=False)[0],
    )
