"""PML3ER Stage 2 (Eqs. 9-17), the ridge control and the method as a plugin."""

import numpy as np
import pytest
import scipy.sparse as sp

from pmlbench.datasets.bundled import enron, yeast
from pmlbench.errors import PmlbenchError
from pmlbench.methods.pml3er import PML3ER, b_step, c_step, objective, svt
from pmlbench.methods.ridge import Ridge
from pmlbench.noise.uniform import uniform_noise
from pmlbench.numerics.ridge_system import RidgeGram, RidgeSystem
from pmlbench.protocol.experiment import ExperimentSpec, run_experiment
from pmlbench.protocol.method_defaults import method_node
from pmlbench.testing import PluginCheckError, check_fit_grid


def synthetic(n=80, d=12, n_labels=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    Y_true = (X @ rng.normal(size=(d, n_labels)) > 0.8).astype(np.uint8)
    Y_true[np.arange(n), rng.integers(0, n_labels, n)] = 1
    noise = rng.random((n, n_labels)) < 0.25
    return X, Y_true, np.maximum(Y_true, noise).astype(np.uint8)


def test_c_step_stays_inside_the_candidate_box():
    rng = np.random.default_rng(0)
    Y = (rng.random((40, 5)) < 0.5).astype(float)
    C = c_step(
        3 * rng.normal(size=(40, 5)), rng.normal(size=(5, 5)), 3 * rng.normal(size=(40, 5)), Y
    )
    assert C.min() >= 0 and np.all(C <= Y)
    assert np.all(C[Y == 0] == 0)
    assert 0 < C.max() <= 1


@pytest.mark.parametrize("density", [0.05, 0.6])
def test_c_step_equals_eq11_clipped(density):
    """Both evaluation paths (candidate entries only, and the full product) equal Eq. 11."""
    rng = np.random.default_rng(10)
    Y = (rng.random((50, 12)) < density).astype(float)
    Yhat, B, XW = rng.normal(size=(50, 12)), rng.normal(size=(12, 12)), rng.normal(size=(50, 12))
    free = (Yhat @ B.T + XW) @ np.linalg.inv(B @ B.T + np.eye(12))
    np.testing.assert_allclose(c_step(Yhat, B, XW, Y), np.clip(free, 0, 1) * Y, atol=1e-12)


def test_fitted_confidences_stay_inside_the_candidate_box():
    X, _, Y = synthetic()
    model = PML3ER(k=5, lambda2=1.0).fit(X, Y)
    assert model.C_.min() >= 0 and np.all(model.C_ <= Y)


@pytest.mark.parametrize("shape", [(7, 7), (9, 4)])
def test_svt_is_the_proximal_operator_of_the_nuclear_norm(shape):
    rng = np.random.default_rng(1)
    A = rng.normal(size=shape)
    lam = 0.8
    Z = svt(A, lam)
    # optimality: (A - Z) / lam is a subgradient of ||.||_* at Z, i.e. spectral norm <= 1
    # and <R, Z> = ||Z||_*
    R = (A - Z) / lam
    nuclear = np.linalg.svd(Z, compute_uv=False).sum()
    assert np.linalg.norm(R, 2) <= 1 + 1e-10
    assert np.sum(R * Z) == pytest.approx(nuclear, rel=1e-10)

    def prox_objective(M):
        return lam * np.linalg.svd(M, compute_uv=False).sum() + 0.5 * np.sum((M - A) ** 2)

    for _ in range(20):
        assert prox_objective(Z) <= prox_objective(Z + 1e-3 * rng.normal(size=shape)) + 1e-12


def test_svt_of_a_symmetric_psd_matrix_thresholds_its_eigenvalues():
    rng = np.random.default_rng(2)
    G = rng.normal(size=(6, 6))
    A = G @ G.T
    w, Q = np.linalg.eigh(A)
    np.testing.assert_allclose(svt(A, 1.5), (Q * np.maximum(w - 1.5, 0)) @ Q.T, atol=1e-10)


@pytest.mark.parametrize("n,d", [(50, 8), (8, 50)])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("solver", ["cholesky", "eigh"])
def test_w_step_equals_augmented_least_squares(n, d, sparse, solver):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.5)
    C = rng.random((n, 4))
    lam = 2.5
    augmented = np.vstack([X, np.sqrt(lam) * np.eye(d)])
    expected = np.linalg.lstsq(augmented, np.vstack([C, np.zeros((d, 4))]), rcond=None)[0]
    Xin = sp.csr_matrix(X) if sparse else X
    system = RidgeSystem(Xin, lam, solver=solver)
    assert system.dual == (n < d)
    np.testing.assert_allclose(system.solve(C), expected, atol=1e-10)
    np.testing.assert_allclose(RidgeSystem(Xin, lam, form="primal").solve(C), expected, atol=1e-10)


def test_ridge_is_the_w_step_on_the_candidates():
    X, _, Y = synthetic(seed=4)
    lam = 7.0
    expected = np.linalg.lstsq(
        np.vstack([X, np.sqrt(lam) * np.eye(X.shape[1])]),
        np.vstack([Y, np.zeros((X.shape[1], Y.shape[1]))]),
        rcond=None,
    )[0]
    model = Ridge(lambda2=lam).fit(X, Y)
    np.testing.assert_allclose(model.W_, expected, atol=1e-10)
    np.testing.assert_allclose(model.decision_function(X), X @ expected, atol=1e-10)
    assert model.predict(X).sum(axis=1).min() >= 1  # no empty prediction by default


def test_b_step_converges_to_the_subproblem_minimum():
    """Many ADMM iterations reach min ||Yhat - C B||^2 + lambda1 ||B||_* (proximal gradient)."""
    rng = np.random.default_rng(5)
    C, Yhat = rng.random((30, 5)), rng.normal(size=(30, 5))
    lam1 = 2.0
    eye, zeros = np.eye(5), np.zeros((5, 5))
    B_admm, _, _ = b_step(C, Yhat, eye, eye, zeros, lam1, 1.0, 1000)
    step = 1 / (2 * np.linalg.norm(C, 2) ** 2)
    B = previous = eye
    for t in range(1, 3000):  # FISTA
        momentum = B + (t - 1) / (t + 2) * (B - previous)
        previous = B
        B = svt(momentum - step * 2 * C.T @ (C @ momentum - Yhat), step * lam1)
    np.testing.assert_allclose(B_admm, B, atol=1e-6)


def run_steps(X, Y, Yhat, lam1, lam2, admm_iter, n_outer=6):
    """Algorithm 2 by hand: the Eq. 9 objective after every step and the C-step clipping gap.

    The gap is ``tr(D (B Bᵀ + I) Dᵀ)`` with D the clipped minus the unconstrained C: Eq. 9 is
    quadratic in C with Hessian B Bᵀ + I, so clipping raises it by exactly this much over
    its unconstrained minimum, which is no larger than the value before the C-step.
    """
    system = RidgeSystem(X, lam2)
    C = Y.astype(float)
    B = Bhat = np.eye(Y.shape[1])
    Theta = np.zeros_like(B)
    W = system.solve(C)
    values = [("init", objective(Yhat, C, B, X @ W, W, lam1, lam2))]
    gaps = []
    for _ in range(n_outer):
        M = B @ B.T + np.eye(B.shape[0])
        free = np.linalg.solve(M, (Yhat @ B.T + X @ W).T).T
        C = c_step(Yhat, B, X @ W, Y)
        gaps.append(np.trace((C - free) @ M @ (C - free).T))
        values.append(("C", objective(Yhat, C, B, X @ W, W, lam1, lam2)))
        B, Bhat, Theta = b_step(C, Yhat, B, Bhat, Theta, lam1, 1.0, admm_iter)
        values.append(("B", objective(Yhat, C, B, X @ W, W, lam1, lam2)))
        W = system.solve(C)
        values.append(("W", objective(Yhat, C, B, X @ W, W, lam1, lam2)))
    return values, gaps


def test_objective_behaviour_of_each_step():
    """Eq. 9 along Algorithm 2: which steps descend, and how much the others may rise.

    The W-step is an exact minimiser, so it never raises the objective; neither does a
    converged B-step (ADMM on a convex problem). The C-step clips the unconstrained minimiser
    of Eq. 11 into [0, Y] instead of minimising over the box, so it can raise the objective,
    by at most the clipping gap (see run_steps). The paper's 5 ADMM iterations may also
    leave the B-step short of its minimum. Both are the paper's algorithm as specified, so
    the test bounds each outer rise by the clipping gap and checks the overall decrease.
    """
    X, _, Y = synthetic(seed=6)
    from pmlbench.numerics.enrichment import label_enrichment

    Yhat, _ = label_enrichment(X, Y, k=5, alpha=0.5)
    exact, gaps = run_steps(X, Y, Yhat, 1.0, 3.0, admm_iter=400)
    for i, ((name, value), (_, before)) in enumerate(zip(exact[1:], exact[:-1], strict=True)):
        if name in ("W", "B"):
            assert value <= before + 1e-9 * abs(before), name
        else:
            assert value - before <= gaps[i // 3] + 1e-9 * abs(before)
    outer = [v for n, v in exact if n in ("init", "W")]
    assert np.all(np.diff(outer) <= np.array(gaps) + 1e-9 * np.abs(outer[:-1]))

    model = PML3ER(k=5, alpha=0.5, lambda2=3.0, max_iter=6, tol=0).fit(X, Y)
    history = model.diagnostics_["objective"]
    paper, gaps = run_steps(X, Y, Yhat, 1.0, 3.0, admm_iter=5)
    np.testing.assert_allclose(history, [v for n, v in paper if n in ("init", "W")], rtol=1e-10)
    assert history[-1] < 0.5 * history[0]
    assert np.all(np.diff(history) <= np.array(gaps) + 1e-9 * np.abs(history[:-1]))


def test_diagnostics_of_a_fit():
    X, _, Y = synthetic(seed=7)
    model = PML3ER(k=5, lambda2=10).fit(X, Y)
    seconds = {"knn", "nnls", "propagation", "stage1", "stage2", "fit"}
    assert {f"{part}_seconds" for part in seconds} <= set(model.diagnostics_)
    assert model.diagnostics_["outer_iterations"] == len(model.diagnostics_["objective"]) - 1
    assert not model.diagnostics_["stage1_shared"] and not model.diagnostics_["gram_shared"]


def real_subset(loader, n):
    """The first n instances of a bundled dataset, candidates at noise rate 1.0."""
    data = loader()
    Y = uniform_noise(data.Y[:n], np.random.default_rng(0), rate=1.0)
    return data.X[:n], Y, data.X[n : n + 100]


GRID = [{"lambda2": value} for value in PML3ER.default_tuning_grid["lambda2"]]


@pytest.mark.parametrize("solver", ["cholesky", "eigh"])
@pytest.mark.parametrize("case", ["synthetic", "yeast", "enron"])
def test_fit_grid_equals_fits_from_scratch(case, solver):
    """Every grid point bit for bit (atol=0): primal (yeast) and dual (enron: n < d) forms,
    dense and sparse features, one Stage 1 and one Gram matrix for the whole grid."""
    if case == "synthetic":
        X, _, Y = synthetic(seed=11)
        X_eval, estimator = None, PML3ER(k=5, w_solver=solver)
    else:
        X, Y, X_eval = real_subset(yeast if case == "yeast" else enron, 250)
        estimator = PML3ER(w_solver=solver)
    assert check_fit_grid(estimator, X, Y, GRID, X_eval=X_eval, atol=0) == 0.0
    fitted = dict(estimator.fit_grid(X, Y, GRID))
    shared = [fitted[i].diagnostics_["stage1_shared"] for i in range(len(GRID))]
    assert shared == [False] + [True] * (len(GRID) - 1)
    assert [fitted[i].diagnostics_["gram_shared"] for i in range(len(GRID))] == shared
    assert fitted[1].diagnostics_["knn_seconds"] == 0.0
    assert [fitted[i].lambda2 for i in range(len(GRID))] == [p["lambda2"] for p in GRID]
    assert fitted[0].diagnostics_["w_form"] == ("dual" if case == "enron" else "primal")


def test_fit_grid_computes_stage1_once_per_setting_it_depends_on():
    """Points that differ in k or alpha get their own Stage 1; those that differ only in Stage 2
    parameters share it, and every point still equals its fit from scratch."""
    X, _, Y = synthetic(seed=12)
    points = [
        {"k": k, "alpha": alpha, "lambda1": lambda1}
        for k in (4, 6)
        for alpha in (0.05, 0.5)
        for lambda1 in (0.1, 10.0)
    ]
    assert check_fit_grid(PML3ER(lambda2=3.0), X, Y, points, atol=0) == 0.0
    fitted = dict(PML3ER(lambda2=3.0).fit_grid(X, Y, points))
    shared = [fitted[i].diagnostics_["stage1_shared"] for i in range(len(points))]
    assert shared == [False, True] * 4
    assert sum(not fitted[i].diagnostics_["gram_shared"] for i in range(len(points))) == 1


def test_check_fit_grid_catches_a_point_fitted_at_the_wrong_lambda2():
    """The test above can fail: a fit_grid that reuses one factorisation is caught."""

    class Stale(PML3ER):
        def fit_grid(self, X, Y, points):
            for index, fitted in super().fit_grid(X, Y, [points[0]] * len(points)):
                fitted.set_params(**points[index])
                yield index, fitted

    X, _, Y = synthetic(seed=13)
    with pytest.raises(PluginCheckError, match="differs from a fit from scratch"):
        check_fit_grid(Stale(k=5), X, Y, GRID, atol=0)


def test_fit_grid_checks_every_point_before_any_work():
    X, _, Y = synthetic(n=30)
    for points, message in [
        ([{"lambda2": 1.0}, {"lambda2": 0}], r"method\.lambda2 must be a number in \(0, inf\)"),
        ([{"k": 5}, {"k": 40}], "method.k = 40 neighbours"),
    ]:
        grid = PML3ER(k=5).fit_grid(X, Y, points)
        with pytest.raises(PmlbenchError, match=message):
            next(grid)
    with pytest.raises(PmlbenchError, match=r"method\.lambda2"):
        next(Ridge().fit_grid(X, Y, [{"lambda2": 1.0}, {"lambda2": -1.0}]))


@pytest.mark.parametrize("n,d", [(60, 10), (10, 60)])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("solver", ["cholesky", "eigh"])
def test_ridge_fit_grid_equals_fits_from_scratch(n, d, sparse, solver):
    rng = np.random.default_rng(14)
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.5)
    Y = (rng.random((n, 4)) < 0.4).astype(np.uint8)
    Xin = sp.csr_matrix(X) if sparse else X
    points = [{"lambda2": value} for value in Ridge.default_tuning_grid["lambda2"]]
    assert check_fit_grid(Ridge(w_solver=solver), Xin, Y, points, atol=0) == 0.0


def test_ridge_fit_grid_on_real_data_and_a_second_parameter():
    X, Y, X_eval = real_subset(enron, 300)
    points = [
        {"lambda2": value, "w_solver": solver}
        for solver in ("cholesky", "eigh")
        for value in Ridge.default_tuning_grid["lambda2"]
    ]
    assert check_fit_grid(Ridge(), X, Y, points, X_eval=X_eval, atol=0) == 0.0


def test_one_gram_serves_every_lambda2_as_its_own_system_would():
    rng = np.random.default_rng(15)
    X, C = rng.normal(size=(40, 9)), rng.random((40, 3))
    shared = RidgeGram(X)
    for solver in ("cholesky", "eigh"):
        for lam in (0.5, 50.0):
            np.testing.assert_array_equal(
                shared.system(lam, solver).solve(C), RidgeSystem(X, lam, solver=solver).solve(C)
            )
    with pytest.raises(ValueError, match="unknown W-step form"):
        RidgeGram(X, form="both")


def test_dense_and_sparse_features_give_the_same_model():
    X, _, Y = synthetic(seed=8)
    X = np.where(np.abs(X) > 0.7, X, 0.0)
    dense = PML3ER(k=5).fit(X, Y)
    sparse = PML3ER(k=5).fit(sp.csr_matrix(X), Y)
    np.testing.assert_allclose(dense.W_, sparse.W_, atol=1e-9)
    np.testing.assert_allclose(dense.C_, sparse.C_, atol=1e-9)


@pytest.mark.parametrize("n,d", [(40, 10), (25, 60)])
def test_edge_cases_zero_rows_duplicates_single_labels(n, d):
    rng = np.random.default_rng(9)
    X = rng.normal(size=(n, d))
    X[0] = 0.0
    X[1] = X[2]
    Y = np.zeros((n, 5), dtype=np.uint8)
    Y[np.arange(n), rng.integers(0, 5, n)] = 1  # single-label candidate sets
    model = PML3ER(k=5).fit(X, Y)
    assert model.diagnostics_["w_form"] == ("dual" if n < d else "primal")
    assert np.isfinite(model.W_).all()
    assert model.C_.min() >= 0 and np.all(model.C_ <= Y)
    scores = model.decision_function(X)
    assert np.isfinite(scores).all()
    np.testing.assert_array_equal(scores[0], 0.0)  # no bias: a zero row scores zero


def test_bad_parameters_are_one_line_errors():
    X, _, Y = synthetic()
    for params, message in [
        ({"lambda2": 0}, r"method\.lambda2 must be a number in \(0, inf\), got 0"),
        ({"alpha": 1.0}, r"method\.alpha must be a number in \[0, 1\), got 1\.0"),
        ({"init": "random"}, "method.init must be one of 'candidates', 'enrichment'"),
        ({"w_solver": "qr"}, "method.w_solver must be one of 'cholesky', 'eigh'"),
        ({"k": 10.0}, r"method\.k must be an integer in \[1, inf\), got 10\.0"),
        ({"k": 500}, "method.k = 500 neighbours"),
    ]:
        with pytest.raises(PmlbenchError, match=message):
            PML3ER(**params).fit(X, Y)
    model = PML3ER(k=5).fit(X, Y)
    with pytest.raises(PmlbenchError, match="features"):
        model.decision_function(X[:, :3])


def test_config_node_has_the_widened_grid_and_the_threshold():
    for cls in (PML3ER, Ridge):
        node = method_node("m", cls)
        assert node["tune"]["grid"]["lambda2"] == [1, 10, 100, 1000]  # the paper's {10, 100} in it
        bipartition = node["bipartition"]
        assert (bipartition["rule"], bipartition["threshold"], bipartition["allow_empty"]) == (
            "threshold",
            0.5,
            False,
        )
    node = method_node("pml3er", PML3ER)
    assert {
        "k",
        "alpha",
        "lambda1",
        "lambda2",
        "tau",
        "max_iter",
        "admm_iter",
        "tol",
        "init",
    } <= set(node["method"])


def test_pml3er_beats_mlknn_average_precision_on_genbase():
    def mean_ap(method):
        spec = ExperimentSpec(
            dataset={"name": "genbase"},
            noise={"name": "uniform", "rate": 1.0},
            method=method,
            bipartition={"rule": "threshold", "threshold": 0.5, "allow_empty": False},
            metrics=["average_precision"],
            n_splits=2,
        )
        result = run_experiment(spec)
        return np.mean([s.values["average_precision"] for s in result.splits])

    assert mean_ap({"name": "pml3er", "lambda2": 10.0}) > mean_ap({"name": "mlknn"})
