"""PML-NI: the ALM solver (ridge special case, planted feature-induced noise), the size
predictor against a brute-force reference, min-max scaling, dense/sparse agreement, and the
tuning grid (its noise term active on real data) fitted by ``fit_grid``."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import Ridge

from pmlbench.errors import PmlbenchError
from pmlbench.methods.pml_ni import (
    PMLNI,
    AlmSystem,
    best_cuts,
    design_matrix,
    minmax_apply,
    minmax_fit,
    pml_ni_alm,
    pml_ni_objective,
    solve_alm,
)
from pmlbench.noise.uniform import uniform_noise
from pmlbench.testing import check_fit_grid


def brute_force_cut(scores: np.ndarray, target: np.ndarray) -> float:
    """Rank-SVM's threshold search written out: try every candidate, keep the first best."""
    ordered = np.sort(scores)
    candidates = [ordered[0] - 0.1]
    candidates += [(ordered[k] + ordered[k + 1]) / 2 for k in range(len(ordered) - 1)]
    candidates.append(ordered[-1] + 0.1)
    errors = []
    for cut in candidates:
        predicted = scores >= cut
        errors.append(int(np.sum(predicted & (target == 0)) + np.sum(~predicted & (target == 1))))
    return candidates[int(np.argmin(errors))]


def planted_noise_problem(seed: int = 1):
    """Rank-2 clean classifier; three labels also switched on by one feature each."""
    rng = np.random.default_rng(seed)
    n, d, q = 400, 20, 8
    X = (rng.random((n, d)) < 0.3).astype(float)
    U0 = rng.normal(size=(q, 1)) @ rng.normal(size=(1, d))
    U0 += 0.5 * rng.normal(size=(q, 1)) @ rng.normal(size=(1, d))
    Z = X @ U0.T
    Y = (Z > np.quantile(Z, 0.8, axis=0)).astype(np.uint8)
    S = Y.copy()
    planted = [(0, 5), (3, 11), (6, 17)]
    for j, f in planted:
        S[:, j] |= (X[:, f] > 0).astype(np.uint8)
    return X, S, planted


def test_best_cuts_match_brute_force(rng):
    scores = rng.normal(size=(60, 7))
    scores[:10, :3] = 0.25  # ties between scores
    scores[10:15] = 1.0  # every score tied
    targets = (rng.random((60, 7)) < 0.4).astype(np.uint8)
    targets[20] = 0
    targets[21] = 1
    expected = [brute_force_cut(scores[i], targets[i]) for i in range(60)]
    np.testing.assert_allclose(best_cuts(scores, targets), expected)


def test_minmax_scaling_uses_the_training_range():
    X = np.array([[0.0, 5.0, 1.0], [2.0, 5.0, 3.0], [4.0, 5.0, 2.0]])
    low, span = minmax_fit(sp.csr_matrix(X))
    scaled = minmax_apply(X, low, span)
    np.testing.assert_allclose(scaled[:, 0], [-1, 0, 1])
    np.testing.assert_allclose(scaled[:, 1], 0)  # constant feature
    np.testing.assert_allclose(
        minmax_apply(np.array([[8.0, 7.0, 0.0]]), low, span), [[3.0, 0.0, -2.0]]
    )  # test values are not clipped


def test_without_trace_and_l1_penalties_w_is_the_ridge_solution(rng):
    Phi = np.hstack([rng.normal(size=(50, 6)), np.ones((50, 1))])
    S = rng.normal(size=(50, 4))
    result = pml_ni_alm(Phi, S, lam=2.0, beta=0.0, gamma=0.0, max_iter=2000)
    reference = Ridge(alpha=2.0, fit_intercept=False).fit(Phi, S).coef_
    np.testing.assert_allclose(result.W, reference, atol=1e-6)
    np.testing.assert_allclose(result.U + result.V, result.W, atol=1e-6)


def test_noise_term_picks_up_planted_feature_induced_noise():
    X, S, planted = planted_noise_problem()
    model = PMLNI(lam=10, beta=2, gamma=1, max_iter=1000).fit(X, S)
    V = model.V_[:, :-1]
    top = sorted(divmod(int(i), V.shape[1]) for i in np.argsort(-np.abs(V).ravel())[:3])
    assert top == planted
    assert all(V[j, f] > 0 for j, f in planted)
    assert model.diagnostics_["converged"]
    assert model.diagnostics_["nnz_V"] <= 0.1 * V.size


def test_solution_beats_simple_feasible_points():
    X, S, _ = planted_noise_problem()
    model = PMLNI(lam=10, beta=2, gamma=1, max_iter=1000).fit(X, S)
    Phi = model._design(X)
    lam, beta, gamma = 10.0, 2.0, 1.0
    found = pml_ni_objective(Phi, S, model.U_ + model.V_, model.U_, model.V_, lam, beta, gamma)
    ridge = Ridge(alpha=lam, fit_intercept=False).fit(Phi, S).coef_
    zero = np.zeros_like(ridge)
    for U, V in ((ridge, zero), (zero, ridge), (zero, zero), (0.5 * ridge, 0.5 * ridge)):
        assert found <= pml_ni_objective(Phi, S, U + V, U, V, lam, beta, gamma) + 1e-6


def test_predictions_use_bias_consistently(rng):
    X, S, _ = planted_noise_problem()
    model = PMLNI().fit(X, S)
    scores = model.decision_function(X)
    design = np.hstack([minmax_apply(X, model.scale_low_, model.scale_span_), np.ones((len(X), 1))])
    np.testing.assert_allclose(scores, design @ model.U_.T)
    # the learned threshold is the least-squares fit of the per-instance best cuts
    cuts = best_cuts(scores, S)
    residual = model.threshold(X) - cuts
    design_cut = np.hstack([scores, np.ones((len(X), 1))])
    np.testing.assert_allclose(design_cut.T @ residual, 0, atol=1e-6)
    np.testing.assert_array_equal(
        model.predict(X), (scores >= model.threshold(X)[:, None]).astype(np.uint8)
    )


def test_dense_and_sparse_inputs_agree():
    X, S, _ = planted_noise_problem()
    dense = PMLNI(max_iter=100).fit(X, S)
    sparse = PMLNI(max_iter=100).fit(sp.csr_matrix(X), S)
    np.testing.assert_allclose(
        sparse.decision_function(sp.csr_matrix(X[:30])), dense.decision_function(X[:30]), atol=1e-8
    )
    np.testing.assert_array_equal(sparse.predict(X[:30]), dense.predict(X[:30]))


def test_defaults_follow_the_demo():
    params = PMLNI().get_params()
    assert (params["lam"], params["beta"], params["gamma"], params["max_iter"]) == (
        10,
        0.5,
        0.5,
        500,
    )


@pytest.mark.parametrize(
    "params", [{"lam": -1}, {"beta": float("nan")}, {"max_iter": 0}, {"max_iter": 500.0}]
)
def test_bad_parameters_are_reported(params):
    X, S, _ = planted_noise_problem()
    (name,) = params
    with pytest.raises(PmlbenchError, match=rf"^method\.{name} must be "):
        PMLNI(**params).fit(X, S)


@pytest.mark.parametrize("beta, gamma", [(0.5, 0.5), (0.3, 0.6)])
def test_noise_term_vanishes_when_beta_is_at_most_gamma(beta, gamma):
    # β‖U‖_* + γ‖V‖_1 >= β‖U + V‖_* because the trace norm never exceeds the entry-wise ℓ1 norm
    X, S, _ = planted_noise_problem()
    model = PMLNI(beta=beta, gamma=gamma).fit(X, S)
    assert model.diagnostics_["nnz_V"] == 0


def emotions_candidates(n: int = 300):
    """The first ``n`` emotions instances with uniform candidate noise at rate 1.0."""
    from pmlbench.datasets.bundled import emotions

    data = emotions()
    return data.X[:n], uniform_noise(data.Y[:n], np.random.default_rng(0), rate=1.0)


def test_default_grid_starts_at_the_demo_and_reaches_the_active_noise_term():
    grid = PMLNI.default_tuning_grid
    assert list(grid) == ["gamma"]
    gammas = grid["gamma"]
    assert gammas[0] == PMLNI().gamma == PMLNI().beta  # the demo value, where V = 0
    assert gammas == sorted(gammas, reverse=True) and 3 <= len(gammas) <= 6


def test_fit_grid_agrees_with_fits_from_scratch_and_uses_the_noise_term():
    # warm-started points agree within the ALM's stopping tolerance: 1e-4 in score units
    # (docs/methods/pml_ni.md, "Tuning grid"); the V = 0 points are the demo fit itself
    X, Y = emotions_candidates()
    points = [{"gamma": g} for g in PMLNI.default_tuning_grid["gamma"]]
    assert check_fit_grid(PMLNI(), X, Y, points, atol=1e-4) > 0
    fitted = {i: dict(m.diagnostics_) for i, m in PMLNI().fit_grid(X, Y, points)}
    nnz = [fitted[i]["nnz_V"] for i in range(len(points))]
    assert nnz[0] == 0 and all(n > 0 for n in nnz[2:])  # γ* is about 0.19 here
    assert [fitted[i]["warm_start"] for i in range(len(points))] == [False, False, True, True]
    assert all(fitted[i]["converged"] for i in fitted)


def test_fit_grid_points_whose_noise_term_stays_zero_are_exact():
    # γ >= β: V = 0 at every iteration, so every γ takes the demo's iterates bit for bit;
    # two (λ, β) paths share the eigendecomposition, and γ = 0.3 < β = 0.6 may not
    X, Y = emotions_candidates(200)
    points = [{"gamma": g, "beta": b} for b in (0.5, 0.6) for g in (2.0, 0.5, 0.9)]
    points.append({"gamma": 0.3, "beta": 0.6})
    assert check_fit_grid(PMLNI(max_iter=300), X, Y, points[:-1], atol=0) == 0
    assert check_fit_grid(PMLNI(max_iter=300), X, Y, points, atol=1e-4) <= 1e-4


def test_fit_grid_with_mixed_blas_threads_fits_each_point_alone():
    X, Y = emotions_candidates(120)
    points = [{"gamma": 0.5, "blas_threads": 1}, {"gamma": 0.1, "blas_threads": 2}]
    assert check_fit_grid(PMLNI(max_iter=200), X, Y, points, atol=0) == 0


def test_shadow_gammas_report_whether_their_iterates_coincide():
    X, Y = emotions_candidates()
    Phi = design_matrix(X, *minmax_fit(X))
    system = AlmSystem.build(Phi, Y.astype(float))
    result = solve_alm(system, 10.0, 0.5, 0.5, shadows=[0.3, 0.2, 0.1, 0.05])
    assert result.coincident == (True, True, False, False)
    for gamma, same in ((0.3, True), (0.2, True), (0.1, False)):
        alone = solve_alm(system, 10.0, 0.5, gamma)
        assert np.array_equal(alone.U, result.U) is same
        assert (alone.n_iter == result.n_iter) is same


def test_size_predictor_ignores_the_zero_singular_values_of_a_rank_deficient_design():
    # cal500 has more labels (174) than features + 1 (69), so U and the size predictor's
    # design [ΦUᵀ, 1] are rank-deficient; LAPACK's default cutoff kept a rounding-level
    # singular value here and gave weights of 3.7e12 that moved with the BLAS kernel
    from pmlbench.datasets.bundled import cal500

    data = cal500()
    X, Y = data.X[:250], uniform_noise(data.Y[:250], np.random.default_rng(0), rate=1.0)
    model = PMLNI().fit(X, Y)
    assert model.diagnostics_["rank_U"] < Y.shape[1]
    assert np.abs(model.size_weights_).max() < 100
    scores = model.disambiguation_scores_
    design = np.hstack([scores, np.ones((len(scores), 1))])
    cuts = best_cuts(scores, Y)
    # the weights are the minimum-norm least-squares fit on the design's numerical range
    rank = np.linalg.matrix_rank(design, tol=1e-10 * np.linalg.norm(design, 2))
    assert rank < design.shape[1]
    reference = np.linalg.pinv(design, rcond=1e-10) @ cuts
    np.testing.assert_allclose(model.size_weights_, reference, atol=1e-8)
