"""PML-PLR against the authors' code run in GNU Octave (committed numbers, no Octave needed),
stage by stage, plus the linear algebra against numpy/scipy, the explicit rank cutoff under
1e-15 perturbations, ``mapminmax`` on constant features, the refusal, parameter checks, the
plugin contract, the declared tuning grid and ``fit_grid`` against fits from scratch.

tests/fixtures/pml_plr/reference.npz holds the inputs, the random draws both sides share and
Octave's outputs; make_reference.py beside it produced them. Stages compared to 1e-6 relative
(measured: 2e-10 at worst):

1. kernel features (train and test), squared distances, kNN Laplacian;
2. the model (W, F, C, loss) after 1, 2 and 5 iterations of ``PML_PLR.m``;
3. the whole run (same iteration count), the test scores and the demo's labels.

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

from pmlbench.errors import NotApplicable, PmlbenchError
from pmlbench.methods import pml_plr as M
from pmlbench.methods.pml_plr import MAX_TRAIN, PMLPLR
from pmlbench.numerics.kernel_features import constant_features
from pmlbench.plugins import registry
from pmlbench.testing import check_fit_grid, check_method
from tests.helpers import regenerated_reference, relative_error

FIXTURES = Path(__file__).parent / "fixtures" / "pml_plr"
REFERENCE = np.load(FIXTURES / "reference.npz")
META = json.loads(str(REFERENCE["meta"]))
CASES = {case["name"]: case for case in META["cases"]}
RTOL = 1e-6
PARAMS = ("alpha", "beta", "lam", "ratio")


class Case:
    """One reference case: inputs, pmlbench's preprocessing and Octave's outputs."""

    def __init__(self, name: str, reference=REFERENCE, meta=META):
        case = {c["name"]: c for c in meta["cases"]}[name]
        self.name, self.reference, self.seed = name, reference, case["seed"]
        self.params = {key: case[key] for key in PARAMS}
        data = case["data"]
        X, C, train = reference[f"{data}_X"], reference[f"{data}_C"], reference[f"{data}_train"]
        self.X_train, self.C_train, self.X_test = X[train], C[train], X[~train]
        low, span = M.minmax_fit(self.X_train)
        self.Xs = M.minmax_apply(self.X_train, low, span)
        self.Xts = M.minmax_apply(self.X_test, low, span)
        self.anchors = reference[f"{name}_anchors"]
        self.H0 = reference[f"{name}_H0"]
        self.kernel, self.phi = M.KernelMap.fit(self.Xs, self.anchors, method="pml_plr")
        self.phit = self.kernel.transform(self.Xts)
        self.G = M.pairwise_squared_distances(self.Xs)
        self.L = M.knn_laplacian(self.Xs, 5)

    def octave(self, part: str) -> np.ndarray:
        return self.reference[f"{self.name}_{part}_octave"]

    def model(self, **extra) -> PMLPLR:
        return PMLPLR(random_state=self.seed, **self.params, **extra)

    def solve(self, **extra) -> M.PLRSolution:
        return M.plr_solve(
            self.phi,
            self.G,
            self.L,
            self.C_train.T,
            self.H0,
            alpha=self.params["alpha"],
            beta=self.params["beta"],
            lam=self.params["lam"],
            **extra,
        )


@cache
def case(name: str) -> Case:
    return Case(name)


@cache
def fitted(name: str) -> PMLPLR:
    c = case(name)
    return c.model().fit(c.X_train, c.C_train)


def check_stage1(c: Case) -> None:
    assert relative_error(c.phi, c.octave("phi")) < RTOL
    assert relative_error(c.phit, c.octave("phit")) < RTOL
    np.testing.assert_allclose(c.G, c.octave("G"), rtol=0, atol=1e-10)
    np.testing.assert_allclose(c.L.toarray(), c.octave("L"), rtol=0, atol=1e-10)


def check_stages(c: Case) -> None:
    solution = c.solve(keep_stages=max(META["stages"]))
    for s in META["stages"]:
        stage = solution.stages[s - 1]
        for part in ("W", "F", "C"):
            assert relative_error(stage[part], c.octave(f"iter{s}_{part}")) < RTOL, (s, part)
        # loss(1) is the random start's, which the model never reads
        expected = c.octave(f"iter{s}_loss")[1:]
        np.testing.assert_allclose(solution.losses[:s], expected, rtol=RTOL)


@pytest.mark.parametrize("name", sorted(CASES))
def test_random_draws_are_pmlbench_own(name):
    """Octave received pmlbench's anchors and start of H; a fit with the seed draws them."""
    c = case(name)
    anchors, H0 = c.model().initial_values(*c.X_train.shape, c.C_train.shape[1])
    assert np.array_equal(anchors, c.anchors) and np.array_equal(H0, c.H0)


@pytest.mark.parametrize("name", sorted(CASES))
def test_kernel_features_distances_and_graph_match(name):
    check_stage1(case(name))


@pytest.mark.parametrize("name", sorted(CASES))
def test_model_after_1_2_and_5_iterations_matches(name):
    check_stages(case(name))


@pytest.mark.parametrize("name", sorted(CASES))
def test_end_to_end_matches(name):
    c, model = case(name), fitted(name)
    assert model.diagnostics_["iterations"] == len(c.octave("loss")) - 1
    assert relative_error(model.W_, c.octave("W")) < RTOL
    assert relative_error(model.pseudo_labels_.T, c.octave("F")) < RTOL
    assert relative_error(model.correlation_, c.octave("C")) < RTOL
    np.testing.assert_allclose(model.losses_, c.octave("loss")[1:], rtol=RTOL)
    assert relative_error(model.decision_function(c.X_test), c.octave("scores").T) < RTOL
    assert np.array_equal(model.predict(c.X_test), c.octave("pred").T)


def test_the_cases_cover_what_they_claim():
    genbase = case("genbase")
    assert (genbase.C_train.sum(axis=0) == 0).any()  # a label no training row has: rank(Y) < l
    # features constant (0) on the training rows, some 1 on a test row: the Octave run got
    # them unscaled, as mapminmax passes them through
    constant = constant_features(M.minmax_fit(genbase.X_train)[1])
    assert constant.sum() == 1117 and (genbase.X_test[:, constant] == 1).sum() == 4
    assert (genbase.Xts[:, constant] == 1).sum() == 4
    assert len(np.unique(genbase.Xs, axis=0)) < len(genbase.Xs)  # duplicate rows
    assert case("emotions").phi.shape[0] == case("emotions").X_train.shape[0] + 1  # h = n + 1
    iterations = {name: fitted(name).diagnostics_["iterations"] for name in CASES}
    assert iterations["tiny"] > 6 and iterations["synth"] == 6  # both ways the stop test goes


@pytest.mark.parametrize("name", ["synth", "genbase"])
def test_inputs_perturbed_at_1e_15_move_the_result_by_rounding_only(name):
    """The rank cutoffs are explicit and far from the singular values met: pinv(2HᵀPPᵀH)
    keeps eigenvalue ratios >= 1e-3 and drops <= 1e-25, so a 1e-15 change of the inputs
    changes the result by rounding, not by a different rank."""
    c = case(name)
    base = c.solve()
    assert base.smallest_kept > 1e-3 and base.largest_dropped < 1e-25
    rng = np.random.default_rng(5)

    def nudge(A: np.ndarray) -> np.ndarray:
        return A * (1 + 1e-15 * rng.standard_normal(A.shape))

    moved = M.plr_solve(
        nudge(c.phi),
        nudge(c.G),
        c.L,
        c.C_train.T,
        nudge(c.H0),
        alpha=c.params["alpha"],
        beta=c.params["beta"],
        lam=c.params["lam"],
    )
    assert len(moved.losses) == len(base.losses)
    assert relative_error(moved.W, base.W) < 1e-9
    assert relative_error(moved.C, base.C) < 1e-9


def test_two_blas_threads_change_rounding_only():
    c = case("genbase")
    one, two = fitted("genbase"), c.model(blas_threads=2).fit(c.X_train, c.C_train)
    assert one.diagnostics_["iterations"] == two.diagnostics_["iterations"]
    assert relative_error(two.decision_function(c.X_test), one.decision_function(c.X_test)) < 1e-9
    assert np.array_equal(two.predict(c.X_test), one.predict(c.X_test))


def simplex_projection(v: np.ndarray) -> np.ndarray:
    """The exact Euclidean projection onto the simplex by sorting (Held et al. 1974)."""
    u = np.sort(v)[::-1]
    cumulative = np.cumsum(u) - 1.0
    rho = np.nonzero(u - cumulative / np.arange(1, v.size + 1) > 0)[0][-1]
    return np.maximum(v - cumulative[rho] / (rho + 1), 0.0)


def test_simplex_projection_is_the_exact_projection():
    rng = np.random.default_rng(0)
    V = rng.normal(scale=3.0, size=(60, 40))
    V[0] = np.full(40, 1 / 40) + 0.01 * np.arange(40) - 0.01 * 19.5  # on the simplex already
    expected = np.array([simplex_projection(v) for v in V])
    projected = M.project_rows_to_simplex(V.copy())
    np.testing.assert_allclose(projected, expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(projected.sum(axis=1), 1.0, atol=1e-12)
    assert (projected >= 0).all()


def test_polar_product_is_y_times_the_polar_factor_even_when_y_is_rank_deficient():
    rng = np.random.default_rng(1)
    Y = (rng.random((6, 30)) < 0.4).astype(float)
    Y[2] = 0.0  # a label without candidates
    Y[4] = Y[1]  # two labels with the same candidates
    F = Y * rng.random(Y.shape)
    M_, _, Nt = np.linalg.svd(Y.T @ F)  # n x n, as the authors' code
    expected = Y @ (M_ @ Nt)
    Ry = scipy.linalg.qr(Y.T, mode="economic")[1]
    np.testing.assert_allclose(M.polar_product(Ry, F, 1e-10), expected, rtol=0, atol=1e-10)


def test_pinv_gram_is_the_pseudo_inverse_with_the_cutoff():
    rng = np.random.default_rng(2)
    Z = rng.normal(size=(5, 3)) @ rng.normal(size=(3, 40))  # rank 3
    V, w, kept, dropped = M.pinv_gram(Z, 1e-10)
    assert V.shape == (40, 3) and dropped < 1e-20 < 1e-3 < kept
    expected = np.linalg.pinv(2 * Z.T @ Z, rcond=1e-10, hermitian=True)
    np.testing.assert_allclose((V * w) @ V.T, expected, rtol=0, atol=1e-10 * np.abs(expected).max())


def random_c(rng: np.random.Generator, n: int) -> np.ndarray:
    """A non-negative n x n matrix whose columns sum to 1, like PML-PLR's C."""
    C = rng.random((n, n)) ** 4
    return C / C.sum(axis=0)


@pytest.mark.parametrize("sign", [-1.0, 1.0])
@pytest.mark.parametrize(("m", "how"), [(1, "cg"), (40, "cholesky")])
def test_h_step_solves_the_system(sign, m, how):
    rng = np.random.default_rng(3)
    n, mu = 400, 1e3
    C = random_c(rng, n)
    B = rng.normal(size=(m, n))
    H, used = M.solve_h(C, B, mu, sign, 1e-10)
    assert used == how
    expected = np.linalg.solve(2 * C @ C.T + sign * mu * np.eye(n), B.T).T
    np.testing.assert_allclose(H, expected, rtol=1e-10, atol=1e-14)


def test_h_step_falls_back_to_the_cut_off_eigendecomposition():
    """With μ below 2‖C‖² the code's matrix 2CCᵀ − μI is not proved definite; here it is
    singular (C = I, μ = 2): the pseudo-inverse is zero, not a huge inverse of rounding."""
    C = np.eye(8)
    H, used = M.solve_h(C, np.ones((2, 8)), 2.0, -1.0, 1e-10)
    assert used == "eigh" and np.array_equal(H, np.zeros((2, 8)))
    H, used = M.solve_h(C, np.ones((2, 8)), 1.0, -1.0, 1e-10)  # 2I − I = I
    assert used == "eigh"
    np.testing.assert_allclose(H, np.ones((2, 8)), rtol=1e-14)


def test_ridge_with_lambda_zero_uses_the_pseudo_inverse():
    rng = np.random.default_rng(4)
    phi = rng.normal(size=(10, 4)) @ rng.normal(size=(4, 30))  # rank 4 < h = 10
    inverse = M.ShiftedInverse(phi @ phi.T, 0.0, float((phi**2).sum()), 1e-10)
    assert inverse.by_eigh
    B = rng.normal(size=(10, 3))
    expected = np.linalg.pinv(phi @ phi.T, rcond=1e-10, hermitian=True) @ B
    np.testing.assert_allclose(inverse.solve(B), expected, rtol=0, atol=1e-9)
    assert not M.ShiftedInverse(phi @ phi.T, 1.0, float((phi**2).sum()), 1e-10).by_eigh


@pytest.mark.parametrize("sign", [-1.0, 1.0])
def test_h_step_is_a_stationary_point_of_the_objective_with_that_sign(sign):
    """updates="objective" (sign +1): H minimises ‖Y − PᵀHC‖² + μ/2‖Y − PᵀH − E‖². The code's
    H (sign −1) is the stationary point with the penalty's sign flipped."""
    rng = np.random.default_rng(6)
    q, m, n, mu = 5, 4, 30, 50.0
    P = scipy.linalg.qr(rng.normal(size=(q, m)), mode="economic")[0].T  # P Pᵀ = I
    C, Y, E = random_c(rng, n), (rng.random((q, n)) < 0.5) * 1.0, rng.random((q, n)) * 0.1
    H, _ = M.solve_h(C, P @ (2 * Y @ C.T + sign * mu * (Y - E)), mu, sign, 1e-10)
    gradient = -2 * P @ (Y - P.T @ H @ C) @ C.T - sign * mu * P @ (Y - P.T @ H - E)
    assert np.abs(gradient).max() < 1e-9


def test_objective_updates_differ_and_run():
    c = case("synth")
    code, objective = c.solve(), c.solve(updates="objective")
    assert np.isfinite(objective.W).all() and objective.losses[-1] > 0
    assert relative_error(objective.W, code.W) > 1e-3
    model = c.model(updates="objective").fit(c.X_train, c.C_train)
    assert np.allclose(model.W_, objective.W, rtol=1e-12, atol=0)


def test_pseudo_labels_live_on_the_candidates():
    c, model = case("synth"), fitted("synth")
    scores = model.disambiguation_scores_
    assert scores.shape == c.C_train.shape
    assert (scores[c.C_train == 0] == 0).all()
    truth = REFERENCE["synth_Y"][REFERENCE["synth_train"]]
    candidates = c.C_train == 1
    # the true candidates score higher than the false ones on average
    assert scores[candidates & (truth == 1)].mean() > scores[candidates & (truth == 0)].mean()


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
    # test rows outside the training range are not clipped; constant features keep their value
    test = M.minmax_apply(np.array([[4.0, 7.0, 5.0, -2.0, 1.0]]), low, span)
    np.testing.assert_allclose(test, [[3, 7, 2, -2, 1]])


def test_knn_graph_keeps_matlab_order_with_duplicates():
    """Row 1 duplicates row 0: sorted by (distance, index), row 1's list starts with row 0 and
    then itself, so its neighbours (positions 2..k+1) include itself, not row 0."""
    X = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0], [0.0, 2.0], [3.0, 3.0]])
    L = M.knn_laplacian(X, 1).toarray()
    # row 0's neighbour is row 1 (weight exp(0) = 1), row 1's is itself (no edge); sym: 0.5
    assert L[0, 1] == L[1, 0] == -0.5
    np.testing.assert_allclose(L.sum(axis=1), 0, atol=1e-15)


def test_refuses_above_max_train_before_any_work():
    c = case("tiny")
    n = c.X_train.shape[0]
    with pytest.raises(NotApplicable, match=f"set method.max_train={n} ") as error:
        PMLPLR(max_train=n - 1).fit(c.X_train, c.C_train[:5])  # bad labels: never looked at
    message = str(error.value)
    assert "\n" not in message and f"method.max_train = {n - 1}" in message
    assert isinstance(error.value, PmlbenchError)
    PMLPLR(max_train=n).fit(c.X_train, c.C_train)
    PMLPLR(max_train=None).fit(c.X_train, c.C_train)
    assert PMLPLR().max_train == MAX_TRAIN


@pytest.mark.parametrize(
    ("params", "key"),
    [
        ({"alpha": -1}, "method.alpha"),
        ({"beta": float("nan")}, "method.beta"),
        ({"lam": -0.1}, "method.lam"),
        ({"ratio": 0}, "method.ratio"),
        ({"ratio": 1.5}, "method.ratio"),
        ({"mu": 0}, "method.mu"),
        ({"n_neighbors": 0}, "method.n_neighbors"),
        ({"n_neighbors": 2.5}, "method.n_neighbors"),
        ({"max_iter": 0}, "method.max_iter"),
        ({"tol": -1}, "method.tol"),
        ({"updates": "paper"}, "method.updates"),
        ({"threshold": float("inf")}, "method.threshold"),
        ({"rtol": 0}, "method.rtol"),
        ({"rtol": 1}, "method.rtol"),
        ({"max_train": 0}, "method.max_train"),
        ({"random_state": -1}, "method.random_state"),
        ({"blas_threads": 0}, "method.blas_threads"),
    ],
)
def test_bad_parameters_are_one_line_errors(params, key):
    c = case("tiny")
    with pytest.raises(PmlbenchError, match=key) as error:
        PMLPLR(**params).fit(c.X_train, c.C_train)
    assert "\n" not in str(error.value)


def test_too_many_neighbours_is_a_one_line_error():
    c = case("tiny")
    with pytest.raises(PmlbenchError, match="method.n_neighbors") as error:
        PMLPLR(n_neighbors=len(c.X_train)).fit(c.X_train, c.C_train)
    assert "\n" not in str(error.value)


def test_deterministic_shapes_and_sparse_input():
    c = case("tiny")
    first = PMLPLR(random_state=3).fit(c.X_train, c.C_train)
    again = PMLPLR(random_state=3).fit(sp.csr_matrix(c.X_train), c.C_train)
    other = PMLPLR(random_state=4).fit(c.X_train, c.C_train)
    scores = first.decision_function(c.X_test)
    assert scores.shape == (c.X_test.shape[0], c.C_train.shape[1])
    assert np.array_equal(scores, again.decision_function(sp.csr_matrix(c.X_test)))
    assert not np.array_equal(scores, other.decision_function(c.X_test))
    predicted = first.predict(c.X_test)
    assert predicted.dtype == np.uint8 and np.array_equal(predicted, scores >= 0.5)
    for key in ("iterations", "pinv_smallest_kept", "h_solves_cg", "fit_seconds"):
        assert key in first.diagnostics_
    with pytest.raises(PmlbenchError, match="fitted on 4 features"):
        first.decision_function(c.X_test[:, :3])


def test_check_method():
    check_method("pml_plr")


def test_registered_with_the_demo_defaults():
    cls = registry.load("method", "pml_plr")
    assert cls is PMLPLR
    model = cls()
    assert (model.alpha, model.beta, model.lam, model.ratio) == (0.1, 0.01, 1.0, 0.8)
    assert (model.mu, model.n_neighbors, model.max_iter, model.tol) == (1e3, 5, 40, 1e-4)
    assert (model.updates, model.threshold) == ("code", 0.5)


def test_declared_grid_is_lambda_as_the_authors_set_it():
    """params_settings.m sets λ to 0.01, 0.1, 1 or 10 per dataset; the 0.01 rows are datasets
    pmlbench lacks or refuses (docs/methods/pml_plr.md, "Tuning grid")."""
    assert PMLPLR.default_tuning_grid == {"lam": [0.1, 1.0, 10.0]}
    assert PMLPLR().lam in PMLPLR.default_tuning_grid["lam"]


@pytest.mark.parametrize(
    ("name", "grid"),
    [
        ("synth", {"lam": [0.1, 1.0, 10.0]}),
        ("genbase", {"lam": [0.1, 1.0]}),  # constant features, duplicate rows
        ("tiny", {"ratio": [0.5, 1.0], "n_neighbors": [3, 5], "beta": [0.01, 0.1]}),
        ("tiny", {"rtol": [1e-10, 1e-3], "updates": ["code", "objective"], "lam": [0.0, 1.0]}),
    ],
)
def test_fit_grid_is_a_fit_from_scratch_per_point(name, grid):
    """Bit for bit: the shared parts (scaling, draws, kernel map, distances, graph, φφᵀ, the
    ridge factorisation, R_Y) are computed as a fit alone computes them, keyed by every
    parameter they depend on; the iterations run per point."""
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

    for name in ("minmax_fit", "pairwise_squared_distances", "knn_laplacian", "kernel_gram"):
        counting(name)
    for name in ("ridge_inverse", "label_qr", "initial_values", "plr_solve", "lambda_free_step"):
        counting(name)
    c = case("synth")
    models = dict(c.model().fit_grid(c.X_train, c.C_train, [{"lam": 0.1}, {"lam": 1.0}]))
    iterations = [models[i].diagnostics_["iterations"] for i in (0, 1)]
    assert calls == {
        "minmax_fit": 1,
        "initial_values": 1,
        "pairwise_squared_distances": 1,
        "knn_laplacian": 1,
        "kernel_gram": 1,
        "ridge_inverse": 2,  # one factorisation per λ
        "label_qr": 1,
        "plr_solve": 2,
        "lambda_free_step": sum(iterations) - 1,  # the first iteration's is shared
    }
    assert models[0].lam == 0.1 and models[1].lam == 1.0
    assert models[0].kernel_ is models[1].kernel_


def test_fit_grid_without_a_seed_shares_one_draw():
    """random_state=None: a fit draws anew each time; the grid's points share one draw, so
    they differ only by their parameters."""
    c = case("tiny")
    models = dict(PMLPLR().fit_grid(c.X_train, c.C_train, [{"ratio": 0.5}, {"ratio": 1.0}]))
    assert np.array_equal(models[0].kernel_.anchors, models[1].kernel_.anchors)
    first, second = (PMLPLR().fit(c.X_train, c.C_train) for _ in range(2))
    assert not np.array_equal(first.kernel_.anchors, second.kernel_.anchors)


def test_regenerated_reference_agrees(tmp_path):
    """Run the authors' code again in Octave on the small case (optional: needs octave-cli
    and a copy of the authors' repository in PMLPLR_SOURCE) and check pmlbench against it."""
    fresh = regenerated_reference(
        FIXTURES, "PMLPLR_SOURCE", "github.com/CcAmbiguous/PML-PLR", tmp_path, "tiny"
    )
    c = Case("tiny", fresh, json.loads(str(fresh["meta"])))
    check_stage1(c)
    check_stages(c)
    for part in ("W", "F", "C", "scores"):
        assert relative_error(c.octave(part), case("tiny").octave(part)) < RTOL
