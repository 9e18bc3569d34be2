"""PML-LRS (approximate re-implementation): the ALM meets S = Y + E, reaches the optimum of
an independently solved special case, satisfies the KKT conditions, and moves planted
irrelevant labels into E; its cheaper singular value thresholding agrees with the SVD's;
``fit_grid`` gives every grid point its fit from scratch bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp

from pmlbench.errors import PmlbenchError
from pmlbench.methods import pml_lrs
from pmlbench.methods.pml3er import svt
from pmlbench.methods.pml_lrs import PMLLRS, pml_lrs_alm, pml_lrs_objective, svt_lrs
from pmlbench.numerics.linalg import with_bias
from pmlbench.testing import check_fit_grid


def low_rank_problem(seed: int = 0, n: int = 150, d: int = 15, q: int = 8):
    """Labels from a rank-2 linear map; 10% of the irrelevant entries flipped on."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    Z = X @ rng.normal(size=(d, 2)) @ rng.normal(size=(2, q))
    Y = (Z > np.quantile(Z, 0.75, axis=0)).astype(np.uint8)
    noisy = (rng.random((n, q)) < 0.1) & (Y == 0)
    S = Y | noisy.astype(np.uint8)
    return X, Y, S.astype(float), noisy


def huber_optimum(X: np.ndarray, S: np.ndarray, delta: float) -> float:
    """min_W Σ huber_δ(S − XW): the objective with λ_W = λ_Y = 0 after eliminating Y and E."""
    q = S.shape[1]

    def value_and_gradient(w):
        R = S - X @ w.reshape(-1, q)
        small = np.abs(R) <= delta
        value = np.where(small, 0.5 * R**2, delta * np.abs(R) - 0.5 * delta**2).sum()
        gradient = -(X.T @ np.where(small, R, delta * np.sign(R)))
        return value, gradient.ravel()

    result = scipy.optimize.minimize(
        value_and_gradient,
        np.zeros(X.shape[1] * q),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 5000, "gtol": 1e-10, "ftol": 1e-15},
    )
    return float(result.fun)


def test_constraint_residuals_go_to_zero():
    X, _, S, _ = low_rank_problem()
    result = pml_lrs_alm(with_bias(X), S, 1.0, 1.0, 0.5)
    assert result.converged and result.residuals[-1] < 1e-6
    np.testing.assert_allclose(result.Y + result.E, S, atol=1e-5)
    assert result.residuals[-1] < 1e-3 * result.residuals[0]


def test_special_case_reaches_the_huber_regression_optimum():
    X, _, S, _ = low_rank_problem()
    Xb = with_bias(X)
    result = pml_lrs_alm(Xb, S, 0.0, 0.0, 0.3)
    found = pml_lrs_objective(Xb, S, result.W, S - result.E, 0.0, 0.0, 0.3)
    assert found == pytest.approx(huber_optimum(Xb, S, 0.3), rel=1e-5)


def test_kkt_conditions_hold_at_convergence():
    X, _, S, _ = low_rank_problem()
    Xb = with_bias(X)
    lw, ly, le = 1.0, 1.0, 0.5
    r = pml_lrs_alm(Xb, S, lw, ly, le)
    L1, L2, L3 = r.multipliers
    # stationarity in W and Y (relative to the size of the terms involved)
    assert np.linalg.norm(Xb.T @ (Xb @ r.W - r.Y) + L2) < 1e-2 * np.linalg.norm(L2)
    assert np.linalg.norm(r.Y - Xb @ r.W - L1 + L3) < 1e-2 * np.linalg.norm(L1)
    # dual feasibility: multipliers are subgradients of the three penalties
    assert np.abs(L1).max() <= le * (1 + 1e-6)
    assert np.linalg.norm(L2, 2) <= lw * (1 + 1e-3)
    assert np.linalg.norm(L3, 2) <= ly * (1 + 1e-3)
    found = pml_lrs_objective(Xb, S, r.W, S - r.E, lw, ly, le)
    W_ls = np.linalg.lstsq(Xb, S, rcond=None)[0]
    for W, Y in ((W_ls, S), (np.zeros_like(W_ls), np.zeros_like(S)), (W_ls, Xb @ W_ls)):
        assert found <= pml_lrs_objective(Xb, S, W, Y, lw, ly, le)


def test_sparse_part_collects_planted_irrelevant_labels():
    X, Y, S, noisy = low_rank_problem(n=300)
    result = pml_lrs_alm(with_bias(X), S, 1.0, 1.0, 0.5)
    removed = result.E > 0.5
    # what E removes is planted noise (about a third of it here), almost never a true label
    assert noisy[removed].mean() > 0.9
    assert removed[noisy].mean() > 0.2
    assert removed[Y == 1].mean() < 0.02


def test_estimator_dense_and_sparse_agree():
    X, _, S, _ = low_rank_problem()
    X = np.abs(X) * (X > 0.5)
    dense = PMLLRS(max_iter=60).fit(X, S.astype(np.uint8))
    sparse = PMLLRS(max_iter=60).fit(sp.csr_matrix(X), S.astype(np.uint8))
    np.testing.assert_allclose(
        sparse.decision_function(sp.csr_matrix(X[:20])), dense.decision_function(X[:20]), atol=1e-8
    )
    np.testing.assert_array_equal(
        dense.predict(X[:20]), (dense.decision_function(X[:20]) >= 0.5).astype(np.uint8)
    )


@pytest.mark.parametrize(
    "params", [{"lambda_w": -1}, {"lambda_e": float("inf")}, {"max_iter": 0}, {"max_iter": 2.5}]
)
def test_bad_parameters_are_reported(params):
    X, _, S, _ = low_rank_problem(n=20)
    (name,) = params
    with pytest.raises(PmlbenchError, match=rf"^method\.{name} must be "):
        PMLLRS(**params).fit(X, S.astype(np.uint8))


def test_documented_defaults():
    params = PMLLRS().get_params()
    assert (params["lambda_w"], params["lambda_y"], params["lambda_e"]) == (1.0, 1.0, 0.5)
    assert PMLLRS.default_bipartition == {"rule": "threshold", "threshold": 0.5}


def test_trivial_solution_when_lambda_y_exceeds_lambda_e_times_spectral_norm():
    # W = 0, Y = 0, E = S is optimal once λ_Y >= λ_E ‖S‖₂ (multipliers Λ1 = Λ3 = λ_E S)
    X, _, S, _ = low_rank_problem()
    lambda_e = 0.2
    lambda_y = 1.01 * lambda_e * np.linalg.norm(S, 2)
    result = pml_lrs_alm(with_bias(X), S, 1.0, lambda_y, lambda_e)
    assert np.abs(result.Y).max() < 1e-3
    np.testing.assert_allclose(result.E, S, atol=1e-3)


@pytest.mark.parametrize("shape", [(400, 30), (30, 400)])
def test_gram_route_of_svt_agrees_with_the_svd(monkeypatch, shape):
    rng = np.random.default_rng(0)
    A = rng.normal(size=shape) + (rng.random(shape) < 0.05)
    monkeypatch.setattr(pml_lrs, "GRAM_SVT_MIN_WORK", 0)
    singular = np.linalg.svd(A, compute_uv=False)
    # k = 30 and 20 pairs kept take the product B (V_k D V_kᵀ) (k (2m - c) > m c: k >= 16 for
    # m = 400, c = 30), k = 5 and 1 the product (B V_k) D V_kᵀ
    for threshold in (0.5 * singular[-1], singular[20], singular[5], 0.99 * singular[0]):
        np.testing.assert_allclose(svt_lrs(A, threshold), svt(A, threshold), atol=1e-10)
    # a threshold below 1e-4 sigma_max goes back to the SVD: the same numbers, bit for bit
    tiny = 1e-6 * singular[0]
    np.testing.assert_array_equal(svt_lrs(A, tiny), svt(A, tiny))


def test_svt_below_the_frobenius_norm_is_exactly_zero():
    A = np.random.default_rng(1).normal(size=(50, 20))
    norm = np.linalg.norm(A)
    assert not svt_lrs(A, norm).any()
    np.testing.assert_array_equal(svt_lrs(A, 0.5 * norm), svt(A, 0.5 * norm))


def test_gram_route_leaves_the_fit_unchanged(monkeypatch):
    X, _, S, _ = low_rank_problem(n=300, q=12)
    reference = PMLLRS().fit(X, S.astype(np.uint8)).decision_function(X)
    monkeypatch.setattr(pml_lrs, "GRAM_SVT_MIN_WORK", 0)
    gram = PMLLRS().fit(X, S.astype(np.uint8)).decision_function(X)
    np.testing.assert_allclose(gram, reference, atol=1e-8)


def yeast_candidates(n: int = 300):
    """The first ``n`` yeast instances with uniform candidate noise at rate 1.0."""
    from pmlbench.datasets.bundled import yeast
    from pmlbench.noise.uniform import uniform_noise

    data = yeast()
    return data.X[:n], uniform_noise(data.Y[:n], np.random.default_rng(0), rate=1.0)


def test_default_grid_keeps_the_sparse_term_active():
    (values,) = PMLLRS.default_tuning_grid.values()
    assert list(PMLLRS.default_tuning_grid) == ["lambda_e"]
    assert PMLLRS().lambda_e in values and 3 <= len(values) <= 6
    # E takes more candidates as λ_E falls, and some at every grid point; at λ_E = 1 it is
    # nearly empty on 0/1 labels
    X, Y = yeast_candidates()
    points = [{"lambda_e": v} for v in [*values, 1.0]]
    nnz = {i: m.diagnostics_["nnz_E"] for i, m in PMLLRS().fit_grid(X, Y, points)}
    ordered = [nnz[i] for i in np.argsort([p["lambda_e"] for p in points])]
    assert ordered == sorted(ordered, reverse=True)
    assert ordered[-2] > 10 * max(ordered[-1], 1)


@pytest.mark.parametrize("gram_route", [False, True])
def test_fit_grid_is_bit_for_bit_the_fits_from_scratch(monkeypatch, gram_route):
    X, Y = yeast_candidates()
    if gram_route:  # every SVT through the Gram matrix, as on delicious
        monkeypatch.setattr(pml_lrs, "GRAM_SVT_MIN_WORK", 0)
    points = [{"lambda_e": v} for v in PMLLRS.default_tuning_grid["lambda_e"]]
    assert check_fit_grid(PMLLRS(), X, Y, points, atol=0) == 0
    if gram_route:
        return
    # grids that also split at the J and Z steps, with a repeated point and two max_iter
    mixed = [
        {"lambda_w": 0.1, "lambda_y": 1.0},
        {"lambda_w": 1.0, "lambda_y": 0.3},
        {"lambda_w": 1.0, "lambda_y": 1.0},
        {"lambda_w": 1.0, "lambda_y": 1.0},
        {"lambda_w": 1.0, "lambda_y": 1.0, "max_iter": 40},
    ]
    assert check_fit_grid(PMLLRS(), X[:150], Y[:150], mixed, atol=0) == 0


def test_grid_solver_shares_the_iterations_before_the_points_differ(monkeypatch):
    X, Y = yeast_candidates(200)
    Xb, S = with_bias(X), Y.astype(float)
    lambdas = [(1.0, 1.0, 1.0), (1.0, 1.0, 0.5), (1.0, 1.0, 0.25)]
    solves = []
    original = pml_lrs.SymmetricSolver.solve
    monkeypatch.setattr(
        pml_lrs.SymmetricSolver,
        "solve",
        lambda self, B, s: solves.append(s) or original(self, B, s),
    )
    together = dict(pml_lrs.pml_lrs_alm_grid(Xb, S, lambdas))
    shared = len(solves)
    solves.clear()
    alone = [pml_lrs_alm(Xb, S, *lam) for lam in lambdas]
    assert shared < 0.8 * len(solves)  # the first ~60 of ~120 iterations once, not three times
    for i, result in enumerate(alone):
        assert np.array_equal(together[i].W, result.W)
        assert together[i].residuals == result.residuals


def test_fit_grid_factorises_the_gram_matrix_once(monkeypatch):
    X, Y = yeast_candidates(200)
    calls = {"gram": 0, "eigendecomposition": 0}
    original_gram, original_init = pml_lrs.gram, pml_lrs.SymmetricSolver.__init__

    def counting_gram(*args, **kwargs):
        calls["gram"] += 1
        return original_gram(*args, **kwargs)

    def counting_init(self, G):
        calls["eigendecomposition"] += 1
        original_init(self, G)

    monkeypatch.setattr(pml_lrs, "gram", counting_gram)
    monkeypatch.setattr(pml_lrs.SymmetricSolver, "__init__", counting_init)
    points = [{"lambda_e": v} for v in PMLLRS.default_tuning_grid["lambda_e"]]
    assert len(dict(PMLLRS().fit_grid(X, Y, points))) == len(points)
    assert calls == {"gram": 1, "eigendecomposition": 1}
    PMLLRS().fit(X, Y)  # a plain fit: its own, once
    assert calls == {"gram": 2, "eigendecomposition": 2}
