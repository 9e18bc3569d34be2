"""PMNDP against the authors' code run in GNU Octave (committed numbers, no Octave needed),
stage by stage; its tie rules under rounding-level perturbations; parameters and caps; the
declared tuning grid and ``fit_grid`` against fits from scratch.

tests/fixtures/pmndp/reference.npz holds the inputs and Octave's outputs; the script beside it
(make_reference.py) produced them and regenerates them. Only the last test runs Octave.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse as sp
from scipy.spatial.distance import cdist
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import ParameterGrid

from pmlbench.errors import NotApplicable, PmlbenchError
from pmlbench.methods import pmndp as M
from pmlbench.methods.pmndp import (
    PMNDP,
    cosine_distances,
    heat_knn_graph,
    laplacian,
    negative_sylvester,
    pmndp_train,
    propagate,
    solve_symmetric_sylvester,
    truth_labels,
)
from pmlbench.numerics.matlab import MATLAB_EPS
from pmlbench.plugins import registry
from pmlbench.testing import PluginCheckError, check_fit_grid, check_method
from tests.helpers import regenerated_reference, relative_error

FIXTURES = Path(__file__).parent / "fixtures" / "pmndp"
REFERENCE = np.load(FIXTURES / "reference.npz")
META = json.loads(str(REFERENCE["meta"]))
CASES = META["cases"]
DEMO = {key: value for key, value in META["params"].items() if key != "threshold"}
TRAIN = {key: DEMO[key] for key in ("alpha", "beta", "lam", "enaf", "theta", "k")}
RTOL = 1e-6
# The Sylvester equation of stage 1 is ill-conditioned on the art subset (separation 5e-8):
# three correct solvers (Octave's lyap, scipy's solve_sylvester, pmlbench's) agree there
# to 1.3e-10 of the largest entry, which is 1e-6 relative only for entries above 1e-4 of it.
WELL_CONDITIONED = ("synth", "binary")


def normwise_error(actual: np.ndarray, expected: np.ndarray) -> float:
    return float(np.abs(actual - expected).max() / np.abs(expected).max())


def fitted(name: str, **params) -> PMNDP:
    return PMNDP(**params).fit(REFERENCE[f"{name}_X"], REFERENCE[f"{name}_C"])


@pytest.mark.parametrize("name", CASES)
def test_stages_match_the_authors_code(name):
    """Truth_label_export, then PMNDP_train, then X W, fitted and scored on the same input."""
    X = REFERENCE[f"{name}_X"]
    model = fitted(name)
    # stage 1: the propagated labels exactly, the Sylvester solution H to 1e-6
    assert np.array_equal(model.propagated_labels_, REFERENCE[f"{name}_T"])
    floor = RTOL if name in WELL_CONDITIONED else 1e-4
    assert relative_error(model.H_, REFERENCE[f"{name}_H"], floor) < RTOL
    assert normwise_error(model.H_, REFERENCE[f"{name}_H"]) < 1e-9
    # stage 2: the same number of iterations, the same objective values, W
    objective = REFERENCE[f"{name}_obj"]
    assert model.diagnostics_["iterations"] == objective.size
    assert relative_error(np.array(model.objective_), objective) < RTOL
    assert relative_error(model.W_, REFERENCE[f"{name}_W"], floor) < RTOL
    # scores and labels (PMNDP_predict.m)
    assert relative_error(model.decision_function(X), REFERENCE[f"{name}_scores"], floor) < RTOL
    assert np.array_equal(model.predict(X), REFERENCE[f"{name}_pred"])


@pytest.mark.parametrize("name", CASES)
def test_stage_two_alone_matches_from_octaves_stage_one(name):
    """PMNDP_train fed Octave's propagated labels and H: W entry by entry to 1e-6."""
    X = REFERENCE[f"{name}_X"]
    training = pmndp_train(X, REFERENCE[f"{name}_T"], REFERENCE[f"{name}_H"], **TRAIN)
    assert training.iterations == REFERENCE[f"{name}_obj"].size
    assert relative_error(training.W, REFERENCE[f"{name}_W"]) < RTOL


def test_shared_work_without_labels_serves_stage_two_only():
    """pmndp_train's own SharedWork has no candidate labels: stage 2's parts come from it,
    stage 1's are refused rather than computed from a stand-in."""
    X = REFERENCE["synth_X"]
    work = M.SharedWork(X, None)
    assert work.gram().shape == (X.shape[1], X.shape[1])
    with pytest.raises(ValueError, match="without candidate labels"):
        work.negative()
    C = REFERENCE["synth_C"]
    assert np.array_equal(M.SharedWork(X, C).labels, C)


def test_reference_cases_exercise_the_code_paths():
    """The fixture is not trivial: several iterations, labels off the candidates, ties."""
    for name in CASES:
        T, C = REFERENCE[f"{name}_T"], REFERENCE[f"{name}_C"]
        assert (T & (1 - C)).any()  # the code propagates labels outside the candidate sets
        assert ((C == 1) & (T == 0)).any()  # and drops candidates
    assert REFERENCE["binary_obj"].size > 5 and REFERENCE["art_obj"].size > 5
    X = REFERENCE["binary_X"]
    assert not X[:, 3].any() and np.array_equal(X[:, 4], X[:, 11])
    assert np.array_equal(X[0:10], X[60:70])


def test_sylvester_solution_is_scipys():
    X, C = REFERENCE["synth_X"], REFERENCE["synth_C"]
    negative = 1.0 - C
    A = X.T @ X + 0.5
    B = 0.5 * cosine_distances(negative)
    Q = -(X.T @ negative)
    ours = solve_symmetric_sylvester(A, B, Q)
    theirs = scipy.linalg.solve_sylvester(A, B, Q)
    assert relative_error(ours.H, theirs) < 1e-9
    np.testing.assert_allclose(A @ ours.H + ours.H @ B, Q, atol=1e-9 * np.abs(Q).max())


@pytest.mark.parametrize("formula", ["code", "intended"])
def test_identical_columns_are_solved_exactly_as_one(formula):
    """On the binary set (two all-zero columns, one duplicated column) the reduced Sylvester
    solve is the full one, and the rows of H of identical columns are equal bit for bit."""
    X, C = REFERENCE["binary_X"], REFERENCE["binary_C"]
    negative = 1.0 - C
    d = X.shape[1]
    A = X.T @ X + (0.5 * np.eye(d) if formula == "intended" else 0.5)
    full = scipy.linalg.solve_sylvester(A, 0.5 * cosine_distances(negative), -(X.T @ negative))
    H = negative_sylvester(X, negative, mu1=0.5, mu2=0.5, formula=formula).H
    assert relative_error(H, full) < 1e-9
    assert np.array_equal(H[3], H[17]) and np.array_equal(H[4], H[11])
    if formula == "intended":
        assert not H[3].any()  # (μ1 I + μ2 R) has no zero eigenvalue: the zero rows are 0


def test_cosine_distances_are_scipys():
    C = REFERENCE["binary_C"].astype(np.float64)
    C[:, 2] = 0.0  # a label no instance carries: eps keeps its direction defined
    expected = cdist(C.T + MATLAB_EPS, C.T + MATLAB_EPS, "cosine")
    np.testing.assert_allclose(cosine_distances(C), np.maximum(expected, 0), atol=1e-12)
    assert (np.diag(cosine_distances(C)) == 0).all()


def graph_from_points(P: np.ndarray, k: int) -> sp.csr_matrix:
    return heat_knn_graph(np.einsum("ij,ij->i", P, P), lambda a, b: P[a:b] @ P.T, k)


def test_graph_ties_go_to_the_lower_index_and_self_counts_among_the_k_plus_one():
    """constructW's rule: the k + 1 nearest points by (distance, index), self included,
    then self links dropped and the graph symmetrised by the maximum."""
    points = np.array([[0.0], [1.0], [-1.0], [2.0], [-2.0], [0.0]])  # 5 duplicates 0
    S = graph_from_points(points, 2)
    # k + 1 = 3 nearest by (distance, index). Point 0: itself and 5 at 0, then 1 and 2 tie
    # at 1 -> 1. Point 5: 0 (lower index) and itself at 0, then 1. Point 3 (at 2): itself,
    # 1, then 0 and 5 tie at 4 -> 0. Point 4 (at -2): itself, 2, then 0 and 5 tie -> 0.
    out = {i: set(sp.find(S[i])[1].tolist()) for i in range(6)}
    assert {5, 1} <= out[0] and 0 in out[5] and 1 in out[5]
    assert out[3] == {1, 0} and 5 not in out[3]
    assert out[4] == {2, 0}
    # heat-kernel weights exp(−d²/2t²) with t = 1e4: 1 − 2e-8 at most for these distances
    np.testing.assert_allclose(S.data, 1.0, rtol=1e-7)
    assert S[0, 1] == np.exp(-1.0 / 2e8)


def test_graph_of_many_duplicates_gives_k_plus_one_others():
    """Octave's min loop takes the k + 1 lowest-index duplicates, which need not include the
    point itself: then it keeps k + 1 neighbours. pmlbench's rule does the same."""
    points = np.zeros((8, 2))
    S = graph_from_points(points, 2)
    assert set(sp.find(S[7])[1].tolist()) == {0, 1, 2}  # plus symmetrisation: none into 7
    assert set(sp.find(S[0])[1].tolist()) == {1, 2, 3, 4, 5, 6, 7}


def perturbed(X: np.ndarray, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return X * (1.0 + 1e-15 * rng.choice([-1.0, 1.0], size=X.shape))


@pytest.mark.parametrize("name", CASES)
def test_rounding_level_perturbations_change_no_decision(name):
    """Inputs perturbed at 1e-15 relative: same kNN graphs, propagated labels, iteration
    count and predicted labels; scores within 1e-9 (the ties of the binary case are exact
    in the unperturbed data and broken by index; perturbed, they are ties by the rule)."""
    X, C = REFERENCE[f"{name}_X"], REFERENCE[f"{name}_C"]
    base = PMNDP().fit(X, C)
    graph = laplacian(graph_from_points(X, 5))
    feature_graph = laplacian(graph_from_points(np.ascontiguousarray(X.T), 5))
    for seed in (1, 2):
        Xp = perturbed(X, seed)
        model = PMNDP().fit(Xp, C)
        assert np.array_equal(model.propagated_labels_, base.propagated_labels_)
        assert model.diagnostics_["iterations"] == base.diagnostics_["iterations"]
        assert np.array_equal(model.predict(X), base.predict(X))
        assert normwise_error(model.decision_function(X), base.decision_function(X)) < 1e-9
        for ours, theirs in (
            (laplacian(graph_from_points(Xp, 5)), graph),
            (laplacian(graph_from_points(np.ascontiguousarray(Xp.T), 5)), feature_graph),
        ):
            assert np.array_equal(ours.indices, theirs.indices)
            assert np.array_equal(ours.indptr, theirs.indptr)
    if name == "binary":  # and with the instances and features in another order
        rows, cols = np.arange(X.shape[0])[::-1], np.arange(X.shape[1])[::-1]
        model = PMNDP().fit(X[rows][:, cols], C[rows])
        assert model.diagnostics_["iterations"] >= 2


def test_truth_label_rules():
    position = np.array(
        [
            [0.3] * 6,  # flat: the code divides 0 by 0 there; only the first label
            [2.9, 3.0 * (1 - 1e-12), 3.0, 2.9, 2.9, 0.0],  # a near-tie at the top: lower index
            [0.0, 0.0, 1.0, 1.0, 2.0, 0.0],  # confidences 0.25, 0.25, 0.5: 0.25 is not above
            [0.0, 0.0, 1.0, 1.0 + 1e-11, 2.0, 0.0],  # within 1e-9 of tar: not above it either
            [0.0, 0.0, 1.0, 1.2, 2.0, 0.0],
        ]
    )
    labels, confidences, flat = truth_labels(position, 0.25)
    assert flat == 1
    assert labels.tolist() == [
        [1, 0, 0, 0, 0, 0],
        [0, 1, 0, 0, 0, 0],
        [0, 0, 0, 0, 1, 0],
        [0, 0, 0, 0, 1, 0],
        [0, 0, 0, 1, 1, 0],
    ]
    assert (confidences[0] == 0).all()
    np.testing.assert_allclose(confidences[2], [0, 0, 0.25, 0.25, 0.5, 0])


def test_disambiguation_scores_are_the_propagation_confidences():
    model = fitted("synth")
    scores = model.disambiguation_scores_
    assert scores.shape == REFERENCE["synth_C"].shape
    np.testing.assert_allclose(scores.sum(axis=1), 1.0, rtol=1e-12)
    top = np.argmax(scores, axis=1)
    assert model.propagated_labels_[np.arange(scores.shape[0]), top].all()
    assert np.array_equal(
        model.propagated_labels_ == 1, (scores > 0.25) | (scores == scores.max(1, keepdims=True))
    )


@pytest.mark.parametrize("name", ["synth", "art"])
def test_confidences_rank_true_candidates_above_false_ones(name):
    """What stage 1 is for: among the candidates, the true labels get higher confidences
    (area under the ROC curve 0.64 on synth and 0.62 on art, against 0.5 by chance)."""
    model = fitted(name)
    candidates = REFERENCE[f"{name}_C"] == 1
    truth = REFERENCE[f"{name}_Y"][candidates]
    assert roc_auc_score(truth, model.disambiguation_scores_[candidates]) > 0.6


def test_intended_formulas():
    """formula='intended': (G + μ1 I) H + μ2 H R = −XᵀȲ, and the negative propagation scaled
    by δ instead of 1/δ."""
    X, C = REFERENCE["synth_X"], REFERENCE["synth_C"]
    negative = 1.0 - C
    code = propagate(X, C, **{k: DEMO[k] for k in ("k", "delta", "gamma", "mu1", "mu2", "tar")})
    intended = propagate(
        X,
        C,
        formula="intended",
        **{k: DEMO[k] for k in ("k", "delta", "gamma", "mu1", "mu2", "tar")},
    )
    A = X.T @ X + 0.5 * np.eye(X.shape[1])
    R = cosine_distances(negative)
    np.testing.assert_allclose(
        A @ intended.H + 0.5 * intended.H @ R, -(X.T @ negative), atol=1e-9 * X.shape[0]
    )
    # P = (L+δI)⁻¹(δ1 + γXH) − s(L+δI)⁻¹Ȳ: undo each with its own H and compare the rest
    graph = laplacian(graph_from_points(X, 5)) + 0.5 * sp.identity(X.shape[0])
    rest_code = graph @ code.position - 0.1 * X @ code.H - 0.5
    rest_intended = graph @ intended.position - 0.1 * X @ intended.H - 0.5
    np.testing.assert_allclose(rest_code, -2.0 * negative, atol=1e-9)
    np.testing.assert_allclose(rest_intended, -0.5 * negative, atol=1e-9)
    model = fitted("synth", formula="intended")
    assert model.diagnostics_["formula"] == "intended"


def test_check_method():
    check_method("pmndp")


@pytest.mark.parametrize(
    ("params", "key"),
    [
        ({"k": 0}, "method.k"),
        ({"delta": 0}, "method.delta"),
        ({"gamma": -1}, "method.gamma"),
        ({"tar": 1.5}, "method.tar"),
        ({"enaf": 0}, "method.enaf"),
        ({"theta": float("nan")}, "method.theta"),
        ({"max_iter": 2.5}, "method.max_iter"),
        ({"formula": "paper"}, "method.formula"),
        ({"max_features": 0}, "method.max_features"),
        ({"max_instances": -3}, "method.max_instances"),
        ({"blas_threads": 0}, "method.blas_threads"),
        ({"k": 30}, "method.k"),  # the binary set has 30 features: at most 29 neighbours
    ],
)
def test_bad_parameters_are_one_line_errors(params, key):
    with pytest.raises(PmlbenchError, match=key) as error:
        fitted("binary", **params)
    assert "\n" not in str(error.value)


def test_inputs_over_the_caps_are_refused_before_any_work():
    X, C = REFERENCE["binary_X"], REFERENCE["binary_C"]
    PMNDP(max_features=30, max_instances=120).fit(X, C)
    with pytest.raises(NotApplicable, match="method.max_features=null") as error:
        PMNDP(max_features=29).fit(X, C)
    assert "30 x 30" in str(error.value) and "\n" not in str(error.value)
    with pytest.raises(NotApplicable, match="method.max_instances=null"):
        PMNDP(max_instances=119).fit(X, C)
    PMNDP(max_features=None, max_instances=None).fit(X, C)


def test_the_default_caps_refuse_the_yeast_go_sets_and_admit_bibtex():
    """The suite's budget (docs/protocol.md, "Budget"; benchmarks/bench_budget.py): tuned, the
    yeast GO sets' 6,139 features took 108x ML-kNN's CPU time (yeastmf), over it; untuned,
    bibtex's 1,836 took 3.0x (docs/scaling.md)."""
    rng = np.random.default_rng(0)
    Y = (rng.random((40, 3)) < 0.5).astype(float)
    with pytest.raises(NotApplicable, match="method.max_features=null"):
        PMNDP().fit(np.zeros((40, 6139)), Y)
    PMNDP()._refuse_over_caps(8052, 1836)  # bibtex's features, delicious's instances


def test_sparse_features_give_the_same_fit():
    X, C = REFERENCE["binary_X"], REFERENCE["binary_C"]
    dense, sparse = PMNDP().fit(X, C), PMNDP().fit(sp.csr_matrix(X), C)
    np.testing.assert_array_equal(dense.propagated_labels_, sparse.propagated_labels_)
    np.testing.assert_allclose(
        sparse.decision_function(sp.csr_matrix(X)), dense.decision_function(X), rtol=1e-12
    )


def test_wrong_feature_count_at_test_time():
    model = fitted("synth")
    with pytest.raises(PmlbenchError, match="fitted on 12 features"):
        model.decision_function(REFERENCE["synth_X"][:, :5])


def test_registered_with_the_demo_defaults():
    cls = registry.load("method", "pmndp")
    assert cls is PMNDP
    model = cls()
    got = {key: getattr(model, key) for key in META["params"]}
    assert got == META["params"]


def test_declared_grid_is_tar_in_the_authors_range_widened_below():
    """docs/methods/pmndp.md, "Tuning grid": the authors' 0.1-0.8 with the demo's 0.25 (0.5
    standing for 0.5-0.8), and 0.05, 0.02 for many labels; every value is allowed."""
    assert PMNDP.default_tuning_grid == {"tar": [0.02, 0.05, 0.1, 0.25, 0.5]}
    for tar in PMNDP.default_tuning_grid["tar"]:
        PMNDP(tar=tar)._validate_params()


def test_tar_from_one_half_up_keeps_only_the_top_label():
    """Why the authors' 0.5, 0.6, 0.7 and 0.8 are one grid point: a row's confidences sum to
    at most 1, so none but the top one can exceed 0.5."""
    position = np.random.default_rng(3).normal(size=(400, 7)) ** 3
    top_only, _, _ = truth_labels(position, 0.5)
    assert (top_only.sum(axis=1) == 1).all()
    for tar in (0.6, 0.7, 0.8):
        assert np.array_equal(truth_labels(position, tar)[0], top_only)
    assert not np.array_equal(truth_labels(position, 0.25)[0], top_only)


@pytest.mark.parametrize(
    ("name", "grid"),
    [
        ("art", {"tar": [0.02, 0.05, 0.1, 0.25, 0.5]}),  # 0.25 and 0.5 propagate the same labels
        ("binary", {"delta": [0.5, 1.0], "gamma": [0.0, 0.1], "tar": [0.1, 0.25]}),
        ("synth", {"k": [3, 5], "mu2": [0.5, 1.0], "alpha": [1.0, 4.0]}),
        ("synth", {"formula": ["code", "intended"], "enaf": [1.0, 10.0], "theta": [0.0, 0.5]}),
    ],
)
def test_fit_grid_is_a_fit_from_scratch_per_point(name, grid):
    """Bit for bit: every part shared between points is computed as a fit alone computes it,
    keyed by every parameter it depends on (a key missing one would hand a point another
    point's graph, H, propagation, step size or stage 2)."""
    X, C = REFERENCE[f"{name}_X"], REFERENCE[f"{name}_C"]
    points = list(ParameterGrid(grid))
    assert check_fit_grid(PMNDP(), X, C, points, atol=0.0) == 0.0
    if name == "binary":  # sparse features too
        assert check_fit_grid(PMNDP(), sp.csr_matrix(X), C, points[:2], atol=0.0) == 0.0


def test_fit_grid_computes_the_shared_parts_once(monkeypatch):
    """A grid over tar on art: one instance graph and one feature graph, one Sylvester solve,
    one factorisation of L + δI, one step size and ridge factorisation, and stage 2 once per
    distinct set of propagated labels (0.25 and 0.5 give the same on art: four, not five)."""
    calls: dict[str, int] = {}
    for name in ("heat_knn_graph", "negative_sylvester", "spectral_norm_symmetric", "pmndp_train"):
        monkeypatch.setattr(M, name, _counting(calls, name, getattr(M, name)))
    monkeypatch.setattr(M.spla, "splu", _counting(calls, "splu", M.spla.splu))
    monkeypatch.setattr(
        M.scipy.linalg, "cho_factor", _counting(calls, "cho_factor", M.scipy.linalg.cho_factor)
    )
    X, C = REFERENCE["art_X"], REFERENCE["art_C"]
    points = list(ParameterGrid(PMNDP.default_tuning_grid))
    models = dict(PMNDP().fit_grid(X, C, points))
    assert sorted(models) == list(range(len(points)))
    distinct = {m.propagated_labels_.tobytes() for m in models.values()}
    assert len(distinct) == 4
    assert calls == {
        "heat_knn_graph": 2,
        "negative_sylvester": 1,
        "splu": 1,
        "spectral_norm_symmetric": 2,
        "cho_factor": 1,
        "pmndp_train": 4,
    }
    # the points that share stage 2 get the same W, and their own tar
    assert models[3].tar == 0.25 and models[4].tar == 0.5
    assert np.array_equal(models[3].W_, models[4].W_)


def _counting(calls: dict, name: str, function):
    def wrapper(*args, **kwargs):
        calls[name] = calls.get(name, 0) + 1
        return function(*args, **kwargs)

    return wrapper


def test_fit_grid_checks_each_point():
    X, C = REFERENCE["binary_X"], REFERENCE["binary_C"]
    with pytest.raises(PmlbenchError, match="method.k"):
        list(PMNDP().fit_grid(X, C, [{"k": 5}, {"k": 30}]))  # 30 features: at most 29
    with pytest.raises(NotApplicable, match="method.max_features=null"):
        list(PMNDP().fit_grid(X, C, [{"max_features": 29}]))

    # check_fit_grid can fail: a grid fit with another point's parameters is caught
    class Swapped(PMNDP):
        def fit_grid(self, X, Y, points):
            yield from super().fit_grid(X, Y, points[::-1])  # indices of the other order

    with pytest.raises(PluginCheckError, match="differs from a fit from scratch"):
        check_fit_grid(Swapped(), X, C, [{"tar": 0.05}, {"tar": 0.5}], atol=0.0)


def test_regenerated_reference_matches_the_committed_one(tmp_path):
    """Run the authors' code again in Octave (optional: needs octave-cli with the control and
    statistics packages and a copy of the authors' repository in PMNDP_SOURCE)."""
    fresh = regenerated_reference(
        FIXTURES, "PMNDP_SOURCE", "github.com/zhongjingyu1/PMNDP", tmp_path
    )
    for name in CASES:
        for part in ("T", "pred"):
            assert np.array_equal(fresh[f"{name}_{part}"], REFERENCE[f"{name}_{part}"])
        for part in ("H", "W", "scores", "obj"):
            assert normwise_error(fresh[f"{name}_{part}"], REFERENCE[f"{name}_{part}"]) < 1e-9
