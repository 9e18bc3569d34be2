"""PML-MA against the authors' code run in GNU Octave (committed numbers, no Octave needed),
stage by stage and on the metrics, plus the linear algebra against scipy and direct
transcriptions, the rules where the code leaves the outcome to rounding, ``mapminmax`` on
constant features, the refusal, parameter checks, the plugin contract, the declared tuning
grid and ``fit_grid`` against fits from scratch.

tests/fixtures/pml_ma/reference.npz holds the inputs, the random draws both sides share and
Octave's outputs; make_reference.py beside it produced them. Compared to 1e-6 relative
(measured: 2.3e-9 at worst, on genbase's W):

1. the kNN graph (S, Ds) and the kernel features (train and test);
2. the model (W = P₁P₂ᵀ, R, loss) after 1, 2 and 5 iterations of ``PML_MA.m``;
3. the whole run (same iteration count), the test scores and the demo's labels;
4. the seven metrics (and coverage) of pmlbench's predictions against those of Octave's, and
   the authors' metric functions against pmlbench's on the same predictions.

Only the last test runs Octave (optional).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse as sp
from sklearn.model_selection import ParameterGrid
from threadpoolctl import threadpool_limits

from pmlbench.errors import NotApplicable, PmlbenchError
from pmlbench.methods import pml_ma as M
from pmlbench.methods.pml_ma import MAX_LABEL_WORK, MAX_WORK, PMLMA
from pmlbench.metrics import builtin
from pmlbench.metrics.builtin import PAPER_METRICS
from pmlbench.numerics.kernel_features import constant_features
from pmlbench.plugins import registry
from pmlbench.testing import check_fit_grid, check_method
from tests.helpers import regenerated_reference, relative_error

FIXTURES = Path(__file__).parent / "fixtures" / "pml_ma"
REFERENCE = np.load(FIXTURES / "reference.npz")
META = json.loads(str(REFERENCE["meta"]))
CASES = {case["name"]: case for case in META["cases"]}
RTOL = 1e-6
PARAMS = ("lam", "alpha", "beta", "gamma")


class Case:
    """One reference case: inputs, pmlbench's preprocessing and Octave's outputs."""

    def __init__(self, name: str, reference=REFERENCE, meta=META):
        case = {c["name"]: c for c in meta["cases"]}[name]
        self.name, self.reference, self.seed = name, reference, case["seed"]
        self.params = dict(zip(PARAMS, case["params"], strict=True))
        data = case["data"]
        X, C, train = reference[f"{data}_X"], reference[f"{data}_C"], reference[f"{data}_train"]
        self.X_train, self.C_train, self.X_test = X[train], C[train], X[~train]
        self.Y_test = reference[f"{data}_Y"][~train]
        self.Y_train = reference[f"{data}_Y"][train]
        low, span = M.minmax_fit(self.X_train)
        self.Xs = M.minmax_apply(self.X_train, low, span)
        self.Xts = M.minmax_apply(self.X_test, low, span)
        self.anchors = reference[f"{name}_anchors"]
        self.P1 = reference[f"{name}_P1"]
        self.kernel, self.phi = M.KernelMap.fit(self.Xs, self.anchors, method="pml_ma", rows=True)
        self.phit = self.kernel.transform(self.Xts)
        self.graph = M.neighbour_graph(self.Xs, 5)

    def octave(self, part: str) -> np.ndarray:
        return self.reference[f"{self.name}_{part}_octave"]

    def model(self, **extra) -> PMLMA:
        return PMLMA(random_state=self.seed, **{**self.params, **extra})

    def solve(self, **extra) -> M.MASolution:
        return M.ma_solve(self.phi, self.C_train, self.graph, self.P1, **self.params, **extra)


@cache
def case(name: str) -> Case:
    return Case(name)


@cache
def fitted(name: str) -> PMLMA:
    c = case(name)
    return c.model().fit(c.X_train, c.C_train)


def check_stage1(c: Case) -> None:
    np.testing.assert_allclose(c.graph.S.toarray(), c.octave("S"), rtol=0, atol=1e-12)
    np.testing.assert_allclose(c.graph.ds, c.octave("Ds"), rtol=1e-12)
    assert relative_error(c.phi, c.octave("phi")) < RTOL
    assert relative_error(c.phit, c.octave("phit")) < RTOL


def check_stages(c: Case) -> None:
    solution = c.solve(keep_stages=max(META["stages"]))
    for s in META["stages"]:
        stage = solution.stages[min(s, len(solution.stages)) - 1]  # a run may stop earlier
        W = stage["P1"] @ stage["P2"].T
        assert relative_error(W, c.octave(f"iter{s}_W")) < RTOL, (s, "W")
        assert relative_error(stage["R"], c.octave(f"iter{s}_R")) < RTOL, (s, "R")
        # loss(1) is the random start's, which the stopping test never reads
        expected = c.octave(f"iter{s}_loss")[1:]
        np.testing.assert_allclose(solution.losses[: len(expected)], expected, rtol=RTOL)


def metric_values(Y_true: np.ndarray, Y_pred: np.ndarray, scores: np.ndarray) -> dict:
    names = (*PAPER_METRICS, "coverage")
    return {name: getattr(builtin, name)(Y_true, Y_pred, scores) for name in names}


@pytest.mark.parametrize("name", sorted(CASES))
def test_random_draws_are_pmlbench_own(name):
    """Octave received pmlbench's anchors and start of P₁; a fit with the seed draws them."""
    c = case(name)
    anchors, P1 = c.model().initial_values(*c.C_train.shape)
    assert np.array_equal(anchors, c.anchors) and np.array_equal(P1, c.P1)


@pytest.mark.parametrize("name", sorted(CASES))
def test_parameters_are_the_authors_rows(name):
    """Octave read λ, α, β, γ from the authors' params_settings.m; the cases use those."""
    assert list(case(name).octave("params")) == CASES[name]["params"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_graph_and_kernel_features_match(name):
    check_stage1(case(name))


@pytest.mark.parametrize("name", sorted(CASES))
def test_model_after_1_2_and_5_iterations_matches(name):
    check_stages(case(name))


@pytest.mark.parametrize("name", sorted(CASES))
def test_end_to_end_matches(name):
    c, model = case(name), fitted(name)
    assert model.diagnostics_["iterations"] == len(c.octave("loss")) - 1
    assert relative_error(model.W_, c.octave("W")) < RTOL
    assert relative_error(model.pseudo_labels_, c.octave("R")) < RTOL
    np.testing.assert_allclose(model.losses_, c.octave("loss")[1:], rtol=RTOL)
    assert relative_error(model.decision_function(c.X_test), c.octave("scores")) < RTOL
    assert np.array_equal(model.predict(c.X_test), c.octave("pred"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_seven_metrics_match(name):
    """pmlbench's metrics of pmlbench's predictions equal those of Octave's: the labels are
    identical, so the bipartition metrics are equal; the ranking metrics agree to 1e-12."""
    c, model = case(name), fitted(name)
    ours = metric_values(c.Y_test, model.predict(c.X_test), model.decision_function(c.X_test))
    theirs = metric_values(c.Y_test, c.octave("pred"), c.octave("scores"))
    for metric, value in ours.items():
        assert value == pytest.approx(theirs[metric], abs=1e-12), metric


@pytest.mark.parametrize("name", sorted(CASES))
def test_authors_metric_functions_agree_with_pmlbench(name):
    """The authors' metric functions (metrics/, run in Octave on Octave's predictions) and
    pmlbench's on the same predictions; the authors' coverage is pmlbench's divided by the
    number of labels."""
    c = case(name)
    ours = metric_values(c.Y_test, c.octave("pred"), c.octave("scores"))
    ours["coverage"] /= c.Y_test.shape[1]
    for metric in ("hamming_loss", "ranking_loss", "one_error", "coverage", "average_precision"):
        assert ours[metric] == pytest.approx(float(c.octave(metric)), abs=1e-12), metric
    assert ours["micro_f1"] == pytest.approx(float(c.octave("micro_f1")), abs=1e-12)


def test_the_cases_cover_what_they_claim():
    emotions = case("emotions")
    # the authors' own data and noise: every training row padded to at least 3 candidates
    assert (emotions.C_train.sum(axis=1) >= 3).all()
    assert (emotions.C_train >= emotions.Y_train).all()
    genbase = case("genbase")
    assert M.CandidatePattern(genbase.C_train.astype(float)).sparse  # R's sparse products
    assert not M.CandidatePattern(emotions.C_train.astype(float)).sparse
    assert len(np.unique(genbase.Xs, axis=0)) < len(genbase.Xs)  # duplicate rows: kNN ties
    constant = constant_features(M.minmax_fit(genbase.X_train)[1])
    assert constant.sum() > 100 and (genbase.X_test[:, constant] != 0).any()
    iterations = {name: fitted(name).diagnostics_["iterations"] for name in CASES}
    # the stopping test at its earliest, in between, and never (max_iter)
    assert iterations["synth"] == 4 and iterations["genbase"] == 50
    assert all(5 < iterations[name] < 50 for name in ("emotions", "yeast", "tiny"))


@pytest.mark.parametrize("name", ["emotions", "genbase"])
def test_inputs_perturbed_at_1e_15_move_the_result_by_rounding_only(name):
    """No decision of a run sits on a rounding error: a 1e-15 relative change of the kernel
    features and P₁'s start keeps the iteration count and moves W by rounding."""
    c = case(name)
    base = c.solve()
    rng = np.random.default_rng(5)

    def nudge(A: np.ndarray) -> np.ndarray:
        return A * (1 + 1e-15 * rng.standard_normal(A.shape))

    moved = M.ma_solve(nudge(c.phi), c.C_train, c.graph, nudge(c.P1), **c.params)
    assert len(moved.losses) == len(base.losses)
    assert relative_error(moved.W, base.W) < 1e-8
    assert relative_error(moved.R, base.R) < 1e-10


def test_two_blas_threads_change_rounding_only():
    c = case("yeast")
    one, two = fitted("yeast"), c.model(blas_threads=2).fit(c.X_train, c.C_train)
    assert one.diagnostics_["iterations"] == two.diagnostics_["iterations"]
    assert relative_error(two.decision_function(c.X_test), one.decision_function(c.X_test)) < 1e-9
    assert np.array_equal(two.predict(c.X_test), one.predict(c.X_test))


def test_sparse_and_dense_candidate_products_agree(monkeypatch):
    """R's products through the candidates' pattern (CSR) and dense give one model."""
    c = case("genbase")
    sparse = c.solve()
    monkeypatch.setattr(M, "SPARSE_DENSITY", 0.0)
    assert not M.CandidatePattern(c.C_train.astype(float)).sparse
    dense = c.solve()
    assert len(dense.losses) == len(sparse.losses)
    assert relative_error(dense.W, sparse.W) < 1e-8
    assert relative_error(dense.R, sparse.R) < 1e-12


# ------------------------------------------------------------------ the parts


def test_min_max_scaling_is_mapminmax():
    """``mapminmax``: y = 2(x − xmin)/(xmax − xmin) − 1 per feature with the training rows'
    range; a feature constant on them, or with a gain 2/range above 1e14, passes through
    unchanged (gain 1, offset −1: y = (x + 1) − 1), on the test rows too."""
    X = np.array(
        [[0.0, 5.0, 3.0, 0.3, 0.0], [2.0, 5.0, -1.0, 0.3 + 1e-16, 0.0], [1.0, 5.0, 1.0, 0.3, 0.0]]
    )
    low, span = M.minmax_fit(X)
    assert constant_features(span).tolist() == [False, True, False, True, True]
    scaled = M.minmax_apply(X, low, span)
    np.testing.assert_allclose(scaled[:, [0, 2]], [[-1, 1], [1, -1], [0, 0]])
    np.testing.assert_array_equal(scaled[:, [1, 3, 4]], (X[:, [1, 3, 4]] + 1.0) - 1.0)
    test = M.minmax_apply(np.array([[4.0, 7.0, 5.0, -2.0, 1.0]]), low, span)
    np.testing.assert_allclose(test, [[3, 7, 2, -2, 1]])


@pytest.mark.parametrize(
    ("n", "anchors"),
    [(35, 35), (999, 999), (1000, 500), (1001, 501), (4999, 2500), (5000, 1667), (8999, 3000),
     (9000, 2250), (9001, 2251)],
)  # fmt: skip
def test_anchor_count_is_kernel_mappings_rule(n, anchors):
    assert M.anchor_count(n) == anchors


def test_kernel_features_are_centred_rbf_with_a_bias():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4))
    mapping, phi = M.KernelMap.fit(X, np.array([3, 7, 11]), method="pml_ma", rows=True)
    D = ((X[:, None, :] - X[[3, 7, 11]][None]) ** 2).sum(axis=2)
    K = np.exp(-D / (2 * D.mean()))
    np.testing.assert_allclose(phi, np.hstack([K - K.mean(axis=0), np.ones((30, 1))]), atol=1e-14)
    np.testing.assert_allclose(mapping.transform(X), phi, atol=1e-14)


def test_knn_graph_keeps_matlab_order_with_duplicates():
    """Row 1 duplicates row 0: sorted by (distance, index), row 1's list starts with row 0
    and then itself, so its one neighbour (position 2) is itself: R keeps its diagonal 1 and
    gains nothing; row 0's neighbour is row 1 (weight exp(0) = 1)."""
    X = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0], [0.0, 2.0], [3.0, 3.0]])
    graph = M.neighbour_graph(X, 1)
    S = graph.S.toarray()
    assert S[0, 1] == S[1, 0] == 0.5 and (np.diag(S) == 1).all()
    assert graph.ds[0] == 2.0 and graph.ds[1] == 1.0


def test_sylvester_solve_is_bartels_stewart_and_cuts_as_the_code():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(7, 7))
    A = A @ A.T
    B = rng.normal(size=(3, 3))
    B = B @ B.T + np.eye(3)
    C = rng.normal(size=(7, 3))
    stats = M.SylvesterStats()
    X = M.solve_sylvester(M.SymmetricEigen.of(A), B, C, stats)
    np.testing.assert_allclose(X, scipy.linalg.solve_sylvester(A, B, C), rtol=1e-10)
    assert stats.cut == 0 and stats.margin > 1e4
    # a zero eigenvalue of A meeting B = 0: mysylvester divides that entry by inf, giving 0
    A0 = np.diag([0.0, 2.0, 5.0])
    X0 = M.solve_sylvester(M.SymmetricEigen.of(A0), np.zeros((1, 1)), np.ones((3, 1)), stats)
    np.testing.assert_allclose(X0, [[0.0], [0.5], [0.2]], atol=1e-15)
    assert stats.cut == 1


def test_a_multiple_of_the_identity_on_the_right_is_the_general_solve():
    """P₂ with orthonormal columns makes the P₁ equation's right side γP₂ᵀP₂ = γI: the solve
    with the number γ equals the one with the matrix, cut included."""
    rng = np.random.default_rng(6)
    values = np.array([-0.5, 0.0, 1e-6, 2.0, 7.0])
    transformed = rng.normal(size=(5, 3))
    for gamma in (0.5, 0.0):
        scalar, matrix = M.SylvesterStats(), M.SylvesterStats()
        with_number = M.sylvester_core(values, transformed, gamma, scalar)
        with_matrix = M.sylvester_core(values, transformed, gamma * np.eye(3), matrix)
        np.testing.assert_allclose(with_number, with_matrix, rtol=1e-14, atol=1e-300)
        assert scalar.cut == matrix.cut and scalar.margin == pytest.approx(matrix.margin)
    assert scalar.cut == 6  # γ = 0 meets the eigenvalues 0 and 1e-6 in every column


def test_polar_factor_with_a_dropped_singular_value_is_a_partial_isometry():
    rng = np.random.default_rng(2)
    M_full = rng.normal(size=(5, 5))
    P, dropped = M.polar_factor(M_full, 1e-10)
    assert not dropped
    np.testing.assert_allclose(P.T @ P, np.eye(5), atol=1e-12)
    U, _, Vt = np.linalg.svd(M_full)
    np.testing.assert_allclose(P, U @ Vt, atol=1e-12)
    deficient = M_full.copy()
    deficient[2] = 0.0  # a label without candidates: a zero row
    P, dropped = M.polar_factor(deficient, 1e-10)
    assert dropped and np.allclose(P[2], 0.0, atol=1e-15)
    np.testing.assert_allclose(P @ P.T @ P, P, atol=1e-12)
    nudged, _ = M.polar_factor(deficient * (1 + 1e-15 * rng.standard_normal((5, 5))), 1e-10)
    np.testing.assert_allclose(nudged, P, atol=1e-12)  # LAPACK's choice does not enter


def direct_loss(X, Y, R, P1, P2, Q, V, S, ds, *, lam, alpha, beta, gamma):
    """``PML_MA.m``'s loss line, transcribed (dense, Ds = diag(ds), D = diag(R1))."""
    Ds, D = np.diag(ds), np.diag(R.sum(axis=1))
    A, B = X @ P1, R @ P2
    local = np.trace(A.T @ Ds @ A + B.T @ Ds @ B - 2 * A.T @ S @ B)
    return (
        np.linalg.norm(A - B) ** 2
        + np.linalg.norm(Y - R @ Q.T) ** 2
        + lam * np.trace(np.sqrt(np.abs(R.T @ R)))  # the diagonal is what trace reads
        + alpha * local
        + beta * np.linalg.norm(X.T @ D - V @ R.T) ** 2
        + gamma * np.linalg.norm(P2 @ P1.T) ** 2
    )


@pytest.mark.parametrize("density", [0.5, 0.05])
def test_loss_expansion_equals_the_codes_loss(density, monkeypatch):
    rng = np.random.default_rng(3)
    n, d, c = 40, 9, 6
    X = rng.normal(size=(n, d))
    Y = (rng.random((n, c)) < density).astype(float)
    Y[0] = 1.0
    R = Y * rng.normal(size=(n, c))
    P1, P2 = rng.normal(size=(d, c)), np.linalg.qr(rng.normal(size=(c, c)))[0]
    Q = np.linalg.qr(rng.normal(size=(c, c)))[0]
    V = rng.normal(size=(d, c))
    graph = M.neighbour_graph(rng.normal(size=(n, 3)), 5)
    params = {"lam": 2.0, "alpha": 0.3, "beta": 0.2, "gamma": 1.5}
    pattern = M.CandidatePattern(Y)
    # P2 with orthonormal columns: P2ᵀP2 = I is not formed (None)
    state = M._Iterate(R, P2, Q, X @ P1, P1.T @ P1, V.T @ V, X @ V)
    X_sq = (X * X).sum(axis=1)
    ours = M.ma_loss(X_sq, pattern, graph, state, **params, updates="code")
    expected = direct_loss(X, Y, R, P1, P2, Q, V, graph.S.toarray(), graph.ds, **params)
    assert ours == pytest.approx(expected, rel=1e-12)
    P2_half = P2[:, :3] * [1.0, 2.0, 0.5]  # a rank-deficient one, with its P2ᵀP2
    half = M._Iterate(R, P2_half, Q, X @ P1[:, :3], P1[:, :3].T @ P1[:, :3], V.T @ V, X @ V)
    half.P2tP2 = P2_half.T @ P2_half
    expected = direct_loss(X, Y, R, P1[:, :3], P2_half, Q, V, graph.S.toarray(), graph.ds, **params)
    assert M.ma_loss(X_sq, pattern, graph, half, **params, updates="code") == pytest.approx(
        expected, rel=1e-12
    )
    nuclear = M.ma_loss(X_sq, pattern, graph, state, **params, updates="objective")
    low_rank = np.linalg.svd(R, compute_uv=False).sum() - np.sqrt((R * R).sum(axis=0)).sum()
    assert nuclear - ours == pytest.approx(params["lam"] * low_rank, rel=1e-10)


def test_r_gradient_is_the_losss_gradient_but_for_the_candidates_pull():
    """updates="objective": the gradient of the loss's smooth part in R (D and V held, as
    the code holds them) by central differences; the code's has 2YQ more."""
    rng = np.random.default_rng(4)
    n, d, c = 12, 5, 4
    X = rng.normal(size=(n, d))
    Y = (rng.random((n, c)) < 0.5).astype(float)
    R = rng.normal(size=(n, c))
    P1, P2 = rng.normal(size=(d, c)), np.linalg.qr(rng.normal(size=(c, c)))[0]
    Q, V = np.linalg.qr(rng.normal(size=(c, c)))[0], rng.normal(size=(d, c))
    graph = M.neighbour_graph(rng.normal(size=(n, 2)), 3)
    S, ds = graph.S.toarray(), graph.ds
    alpha, beta = 0.3, 0.2
    D0 = np.diag(R.sum(axis=1))

    def smooth(Rv: np.ndarray) -> float:
        return (
            np.linalg.norm(X @ P1 - Rv @ P2) ** 2
            + np.linalg.norm(Y - Rv @ Q.T) ** 2
            + alpha * np.trace(P2.T @ Rv.T @ np.diag(ds) @ Rv @ P2 - 2 * P1.T @ X.T @ S @ Rv @ P2)
            + beta * np.linalg.norm(X.T @ D0 - V @ Rv.T) ** 2
        )

    numeric = np.zeros_like(R)
    for i in range(n):
        for j in range(c):
            step = np.zeros_like(R)
            step[i, j] = 1e-6
            numeric[i, j] = (smooth(R + step) - smooth(R - step)) / 2e-6
    XP1 = X @ P1
    curvature = P2 @ P2.T + Q.T @ Q + beta * V.T @ V
    args = (R, Y, R, P2, Q, curvature, XP1, S @ XP1, X @ V, ds)
    objective = M.r_gradient(*args, alpha=alpha, beta=beta, updates="objective")
    np.testing.assert_allclose(objective, numeric, rtol=1e-6, atol=1e-6)
    code = M.r_gradient(*args, alpha=alpha, beta=beta, updates="code")
    np.testing.assert_allclose(code, objective - 2 * Y @ Q, atol=1e-12)


def test_objective_updates_differ_and_run():
    c = case("emotions")
    with threadpool_limits(1, user_api="blas"):  # the model's default blas_threads
        code, objective = c.solve(), c.solve(updates="objective")
    assert np.isfinite(objective.W).all() and objective.losses[-1] > 0
    assert relative_error(objective.W, code.W) > 1e-3
    model = c.model(updates="objective").fit(c.X_train, c.C_train)
    assert np.array_equal(model.W_, objective.W)


def test_a_label_without_candidates_gets_zero_scores_not_nan():
    """The code divides 0 by 0 for such a label's prototype (NaN everywhere after); pmlbench
    gives it a zero prototype, drops the zero singular values of the polar factors and scores
    the label 0 (to rounding), the same under a 1e-15 perturbation of the inputs."""
    c = case("yeast")
    C = c.C_train.copy()
    C[:, 3] = 0
    model = c.model().fit(c.X_train, C)
    scores = model.decision_function(c.X_test)
    assert np.isfinite(scores).all()
    assert np.abs(scores[:, 3]).max() < 1e-12 < np.abs(scores[:, [2, 4]]).min()
    assert model.diagnostics_["rank_deficient_polar"] > 0
    assert (model.pseudo_labels_[:, 3] == 0).all()
    nudged = c.model().fit(c.X_train * (1 + 1e-15), C)
    assert np.abs(nudged.decision_function(c.X_test) - scores).max() < 1e-12


def test_pseudo_labels_live_on_the_candidates():
    c, model = case("emotions"), fitted("emotions")
    scores = model.disambiguation_scores_
    assert scores.shape == c.C_train.shape
    assert (scores[c.C_train == 0] == 0).all()
    candidates = c.C_train == 1
    true, false = candidates & (c.Y_train == 1), candidates & (c.Y_train == 0)
    # the true candidates score higher than the false ones on average
    assert scores[true].mean() > scores[false].mean() + 0.1


# ------------------------------------------------------------------ the estimator


def test_refuses_above_max_work_before_any_work():
    c = case("tiny")
    n, q = c.C_train.shape
    work = M.work_of(n, q)
    assert work == n * (n + 1) * q
    with pytest.raises(NotApplicable, match="set method.max_work=null") as error:
        PMLMA(max_work=work - 1).fit(c.X_train, c.C_train)
    message = str(error.value)
    assert "\n" not in message and f"method.max_work={work - 1}" in message
    assert isinstance(error.value, PmlbenchError)
    PMLMA(max_work=work).fit(c.X_train, c.C_train)
    PMLMA(max_work=None).fit(c.X_train, c.C_train)
    assert PMLMA().max_work == MAX_WORK


def test_refuses_above_max_label_work_before_any_work():
    c = case("tiny")
    n, q = c.C_train.shape
    label_work = M.label_work_of(n, q)
    assert label_work == n * q * q
    with pytest.raises(NotApplicable, match="set method.max_label_work=null") as error:
        PMLMA(max_label_work=label_work - 1).fit(c.X_train, c.C_train)
    message = str(error.value)
    assert "\n" not in message and f"method.max_label_work={label_work - 1}" in message
    PMLMA(max_label_work=label_work).fit(c.X_train, c.C_train)
    PMLMA(max_label_work=None).fit(c.X_train, c.C_train)
    assert PMLMA().max_label_work == MAX_LABEL_WORK


# training instances (the suite's 50/50 split) and labels of the suite's largest datasets
SUITE_SIZES = {
    "corel5k": (2500, 374),
    "delicious": (8052, 983),
    "corel16k001": (6883, 153),
    "bibtex": (3697, 159),
    "yeastbp": (3069, 217),
    "cal500": (251, 174),
}


@pytest.mark.parametrize("name", sorted(SUITE_SIZES))
def test_default_caps_decline_what_the_cost_section_says(name):
    """corel5k (label work) and delicious (both caps) are declined, the others admitted
    (docs/methods/pml_ma.md, "Cost"), and the same on the 80 % a holdout tuning fits first,
    so a declined dataset is refused before the first grid point's work."""
    declined = {"corel5k": "max_label_work", "delicious": "max_work"}
    n, q = SUITE_SIZES[name]
    for rows in (n, n * 4 // 5):
        message = M.refusal_message(rows, q, MAX_WORK, MAX_LABEL_WORK)
        if name in declined:
            assert message is not None and f"method.{declined[name]}=" in message
        else:
            assert message is None


@pytest.mark.parametrize(
    ("params", "key"),
    [
        ({"lam": -1}, "method.lam"),
        ({"alpha": float("nan")}, "method.alpha"),
        ({"beta": -0.1}, "method.beta"),
        ({"gamma": -1}, "method.gamma"),
        ({"n_neighbors": 0}, "method.n_neighbors"),
        ({"n_neighbors": 2.5}, "method.n_neighbors"),
        ({"max_iter": 0}, "method.max_iter"),
        ({"tol": -1}, "method.tol"),
        ({"updates": "paper"}, "method.updates"),
        ({"threshold": float("inf")}, "method.threshold"),
        ({"rtol": 0}, "method.rtol"),
        ({"rtol": 1}, "method.rtol"),
        ({"max_work": 0}, "method.max_work"),
        ({"max_label_work": 0}, "method.max_label_work"),
        ({"random_state": -1}, "method.random_state"),
        ({"blas_threads": 0}, "method.blas_threads"),
    ],
)
def test_bad_parameters_are_one_line_errors(params, key):
    c = case("tiny")
    with pytest.raises(PmlbenchError, match=key) as error:
        PMLMA(**params).fit(c.X_train, c.C_train)
    assert "\n" not in str(error.value)


def test_too_many_neighbours_is_a_one_line_error():
    c = case("tiny")
    with pytest.raises(PmlbenchError, match="method.n_neighbors") as error:
        PMLMA(n_neighbors=len(c.X_train)).fit(c.X_train, c.C_train)
    assert "\n" not in str(error.value)


def test_deterministic_shapes_and_sparse_input():
    c = case("tiny")
    first = PMLMA(random_state=3).fit(c.X_train, c.C_train)
    again = PMLMA(random_state=3).fit(sp.csr_matrix(c.X_train), c.C_train)
    other = PMLMA(random_state=4).fit(c.X_train, c.C_train)
    scores = first.decision_function(c.X_test)
    assert scores.shape == (c.X_test.shape[0], c.C_train.shape[1])
    assert np.array_equal(scores, again.decision_function(sp.csr_matrix(c.X_test)))
    assert not np.array_equal(scores, other.decision_function(c.X_test))
    predicted = first.predict(c.X_test)
    assert predicted.dtype == np.uint8 and np.array_equal(predicted, scores >= 0.5)
    for key in ("iterations", "stop_margin", "sylvester_margin", "rank", "fit_seconds"):
        assert key in first.diagnostics_
    with pytest.raises(PmlbenchError, match="fitted on 4 features"):
        first.decision_function(c.X_test[:, :3])


def test_check_method():
    check_method("pml_ma")


def test_registered_with_the_demo_defaults():
    """The demo's first run, main_integration('emotions', 3, 5): params_settings row 5."""
    cls = registry.load("method", "pml_ma")
    assert cls is PMLMA
    model = cls()
    assert (model.lam, model.alpha, model.beta, model.gamma) == (10.0, 0.1, 0.1, 1.0)
    assert (model.n_neighbors, model.max_iter, model.tol) == (5, 50, 1e-4)
    assert (model.updates, model.threshold) == ("code", 0.5)


def test_declared_grid_is_alpha_and_gamma_as_the_authors_set_them():
    """params_settings.m sets α to 1e-4-1e-1 (11 of 21 rows at 1e-4, the demo's 0.1) and γ
    to 0.01-100 per dataset, 17 of 21 rows at 0.1, 1 or 10 (docs/methods/pml_ma.md,
    "Tuning grid"); the demo's values are on the grid."""
    assert PMLMA.default_tuning_grid == {"alpha": [0.0001, 0.1], "gamma": [0.1, 1.0, 10.0]}
    model = PMLMA()
    assert model.alpha in PMLMA.default_tuning_grid["alpha"]
    assert model.gamma in PMLMA.default_tuning_grid["gamma"]


def test_the_declared_grid_shares_one_graph_and_one_feature_side_per_alpha(monkeypatch):
    calls: dict[str, int] = {}
    for name in ("neighbour_graph", "feature_side", "ma_solve"):
        function = getattr(M, name)

        def wrapper(*args, _function=function, _name=name, **kwargs):
            calls[_name] = calls.get(_name, 0) + 1
            return _function(*args, **kwargs)

        monkeypatch.setattr(M, name, wrapper)
    c = case("tiny")
    points = list(ParameterGrid(PMLMA.default_tuning_grid))
    gap = check_fit_grid(c.model(), c.X_train, c.C_train, points, X_eval=c.X_test, atol=0.0)
    assert gap == 0.0
    calls.clear()
    dict(c.model().fit_grid(c.X_train, c.C_train, points))
    assert calls == {"neighbour_graph": 1, "feature_side": 2, "ma_solve": 6}


@pytest.mark.parametrize(
    ("name", "grid"),
    [
        ("emotions", {"gamma": [0.1, 1.0, 10.0]}),
        ("genbase", {"gamma": [0.1, 10.0]}),  # sparse products, constant features, duplicates
        ("tiny", {"alpha": [0.01, 0.1], "n_neighbors": [3, 5], "lam": [1.0, 10.0]}),
        ("tiny", {"rtol": [1e-10, 1e-3], "updates": ["code", "objective"], "beta": [0.0, 0.1]}),
    ],
)
def test_fit_grid_is_a_fit_from_scratch_per_point(name, grid):
    """Bit for bit: the shared parts (scaling, draws, kernel map, graph, the feature side's
    eigendecomposition) are computed as a fit alone computes them, keyed by every parameter
    they depend on; the iterations run per point."""
    c = case(name)
    points = list(ParameterGrid(grid))
    gap = check_fit_grid(c.model(), c.X_train, c.C_train, points, X_eval=c.X_test, atol=0.0)
    assert gap == 0.0


def test_fit_grid_computes_the_shared_parts_once(monkeypatch):
    calls: dict[str, int] = {}

    def counting(name: str):
        function = getattr(M, name)

        def wrapper(*args, **kwargs):
            calls[name] = calls.get(name, 0) + 1
            return function(*args, **kwargs)

        monkeypatch.setattr(M, name, wrapper)

    for name in ("minmax_fit", "initial_values", "neighbour_graph", "feature_side", "ma_solve"):
        counting(name)
    c = case("emotions")
    points = [{"gamma": 0.1}, {"gamma": 1.0}, {"gamma": 10.0}]
    models = dict(c.model().fit_grid(c.X_train, c.C_train, points))
    assert calls == {
        "minmax_fit": 1,
        "initial_values": 1,
        "neighbour_graph": 1,
        "feature_side": 1,  # α is not on the grid
        "ma_solve": 3,
    }
    assert [models[i].gamma for i in range(3)] == [0.1, 1.0, 10.0]
    assert models[0].kernel_ is models[2].kernel_


def test_fit_grid_without_a_seed_shares_one_draw():
    """random_state=None: a fit draws anew each time; the grid's points share one draw."""
    c = case("tiny")
    models = dict(PMLMA().fit_grid(c.X_train, c.C_train, [{"gamma": 0.1}, {"gamma": 1.0}]))
    assert np.array_equal(models[0].kernel_.anchors, models[1].kernel_.anchors)
    first, second = (PMLMA().fit(c.X_train, c.C_train) for _ in range(2))
    assert not np.array_equal(first.kernel_.anchors, second.kernel_.anchors)


def test_regenerated_reference_agrees(tmp_path):
    """Run the authors' code again in Octave on the small case (optional: needs octave-cli
    and a copy of the authors' repository in PMLMA_SOURCE) and check pmlbench against it."""
    fresh = regenerated_reference(
        FIXTURES, "PMLMA_SOURCE", "github.com/CcAmbiguous/PML-MA", tmp_path, "tiny"
    )
    c = Case("tiny", fresh, json.loads(str(fresh["meta"])))
    check_stage1(c)
    check_stages(c)
    for part in ("W", "R", "scores"):
        assert relative_error(c.octave(part), case("tiny").octave(part)) < RTOL
