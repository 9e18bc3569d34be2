"""PML-LRIG against the authors' code run in GNU Octave (committed numbers, no Octave needed),
stage by stage and on the seven metrics, plus the linear algebra against literal dense
translations of the code (``pinv``, ``sylvester``, the n x n reconstruction, the sorted
feature graph), the rounding-only response to 1e-15 perturbations, the refusal, parameter
checks, the plugin contract, the declared tuning grid and ``fit_grid`` against fits from
scratch.

tests/fixtures/pml_lrig/reference.npz holds the inputs, the random draws both sides share and
Octave's outputs; make_reference.py beside it produced them. Compared:

1. the k-means groups (as partitions), the label confidences D of ``PML_LR.m``, the kernel
   features and the feature graph's Laplacian (to 1e-12 absolute; measured 3.4e-14);
2. W, F, C and the loss after 1, 2 and 5 iterations of ``PML_IG.m`` (to 1e-6 relative;
   measured 3.0e-8 at worst entry by entry, W of the tiny case after one iteration, 2.9e-11
   relative to its largest entry);
3. the whole run (same iteration count), the test scores, the labels, the seven metrics and
   the authors' own metric functions.

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
from pmlbench.methods import pml_lrig as M
from pmlbench.methods.pml_lrig import MAX_ORDER, PMLLRIG
from pmlbench.metrics.bipartition import hamming_loss, macro_f1, micro_f1, subset_accuracy
from pmlbench.metrics.ranking import average_precision, coverage, one_error, ranking_loss
from pmlbench.numerics.kmeans import kmeans_labels
from pmlbench.plugins import registry
from pmlbench.testing import check_fit_grid, check_method
from tests.helpers import regenerated_reference, relative_error

FIXTURES = Path(__file__).parent / "fixtures" / "pml_lrig"
REFERENCE = np.load(FIXTURES / "reference.npz")
META = json.loads(str(REFERENCE["meta"]))
CASES = {case["name"]: case for case in META["cases"]}
PARAMS = ("alpha", "beta", "gamma", "lam", "ratio")
RTOL = 1e-6
ATOL = 1e-12
SEVEN = {
    "subset_accuracy": subset_accuracy,
    "hamming_loss": hamming_loss,
    "one_error": one_error,
    "ranking_loss": ranking_loss,
    "average_precision": average_precision,
    "macro_f1": macro_f1,
    "micro_f1": micro_f1,
}


def same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    return np.array_equal(a[:, None] == a[None, :], b[:, None] == b[None, :])


class Case:
    """One reference case: inputs, pmlbench's stages and Octave's outputs."""

    def __init__(self, name: str, reference=REFERENCE, meta=META):
        case = {c["name"]: c for c in meta["cases"]}[name]
        self.name, self.reference, self.seed = name, reference, case["seed"]
        self.params = {key: case[key] for key in PARAMS}
        data = case["data"]
        X, C, train = reference[f"{data}_X"], reference[f"{data}_C"], reference[f"{data}_train"]
        self.X_train, self.C_train, self.X_test = X[train], C[train], X[~train]
        self.Y_test = reference[f"{data}_Y"][~train]
        scale = M.minmax_fit(self.X_train)
        self.Xs, self.Xts = (
            M.minmax_apply(self.X_train, *scale),
            M.minmax_apply(self.X_test, *scale),
        )
        self.anchors = reference[f"{name}_anchors"]
        self.M0 = reference[f"{name}_M0"]
        n, q = self.C_train.shape
        self.kmeans_seed = self.model().initial_values(n, X.shape[1], q)[0]
        self.groups = kmeans_labels(self.Xs, min(q, n), self.kmeans_seed)
        self.reconstruction = M.local_reconstruction(self.Xs, self.C_train, self.groups, k=5)
        self.kernel, self.K = M.KernelMap.fit(self.Xs, self.anchors, method="pml_lrig", rows=True)
        self.Kt = self.kernel.transform(self.Xts)
        self.L = M.feature_laplacian(self.K, 5)[0]
        self.side = M.FeatureSide.of(self.K, self.L, None)

    def octave(self, part: str) -> np.ndarray:
        return self.reference[f"{self.name}_{part}_octave"]

    def model(self, **extra) -> PMLLRIG:
        return PMLLRIG(random_state=self.seed, **self.params, **extra)

    def solve(self, keep_stages: int = 0) -> M.GuidanceSolution:
        p = self.params
        return M.indirect_guidance(
            self.side,
            self.reconstruction.D,
            self.M0,
            alpha=p["alpha"],
            beta=p["beta"],
            gamma=p["gamma"],
            lam=p["lam"],
            keep_stages=keep_stages,
        )

    @property
    def params_ig(self) -> dict[str, float]:
        return {key: self.params[key] for key in ("alpha", "beta", "gamma", "lam")}


@cache
def case(name: str) -> Case:
    return Case(name)


@cache
def fitted(name: str) -> PMLLRIG:
    c = case(name)
    return c.model().fit(c.X_train, c.C_train)


def check_stage1(c: Case) -> None:
    assert same_partition(c.groups, c.octave("groups"))
    np.testing.assert_allclose(c.reconstruction.D, c.octave("D"), rtol=0, atol=ATOL)
    np.testing.assert_allclose(c.K, c.octave("K"), rtol=0, atol=ATOL)
    np.testing.assert_allclose(c.Kt, c.octave("Kt"), rtol=0, atol=ATOL)
    np.testing.assert_allclose(c.L.toarray(), c.octave("Lk"), rtol=0, atol=ATOL)


def check_stages(c: Case) -> None:
    solution = c.solve(keep_stages=max(META["stages"]))
    for s in META["stages"]:
        stage = solution.stages[s - 1]
        W = stage["H"] @ stage["M"]
        assert relative_error(W, c.octave(f"iter{s}_W")) < RTOL, (s, "W")
        for part in ("F", "C"):
            assert relative_error(stage[part], c.octave(f"iter{s}_{part}")) < RTOL, (s, part)
        # loss(1) is the random start's, which nothing reads
        np.testing.assert_allclose(solution.losses[:s], c.octave(f"iter{s}_loss")[1:], rtol=RTOL)


@pytest.mark.parametrize("name", sorted(CASES))
def test_random_draws_are_pmlbench_own(name):
    """Octave received pmlbench's anchors and M's start; a fit with the seed draws them."""
    c = case(name)
    _, anchors, M0 = c.model().initial_values(*c.X_train.shape, c.C_train.shape[1])
    assert np.array_equal(anchors, c.anchors) and np.array_equal(M0, c.M0)


@pytest.mark.parametrize("name", sorted(CASES))
def test_groups_confidences_kernel_features_and_feature_graph_match(name):
    check_stage1(case(name))


@pytest.mark.parametrize("name", sorted(CASES))
def test_model_after_1_2_and_5_iterations_matches(name):
    check_stages(case(name))


@pytest.mark.parametrize("name", sorted(CASES))
def test_end_to_end_matches(name):
    c, model = case(name), fitted(name)
    assert model.diagnostics_["iterations"] == len(c.octave("loss")) - 1
    assert relative_error(model.W_, c.octave("W")) < RTOL
    assert relative_error(model.guidance_labels_, c.octave("F")) < RTOL
    assert relative_error(model.correlation_, c.octave("C")) < RTOL
    np.testing.assert_allclose(model.losses_, c.octave("loss")[1:], rtol=RTOL)
    scores = model.decision_function(c.X_test)
    np.testing.assert_allclose(scores, c.octave("scores"), rtol=0, atol=1e-9)
    predicted = model.predict(c.X_test)
    assert np.array_equal(predicted, c.octave("pred"))
    for metric, function in SEVEN.items():
        ours = function(c.Y_test, predicted, scores)
        theirs = function(c.Y_test, c.octave("pred"), c.octave("scores"))
        assert abs(ours - theirs) <= 1e-12, metric


@pytest.mark.parametrize("name", sorted(CASES))
def test_authors_metric_functions_agree_with_pmlbench(name):
    """``PML_test.m``'s Hamming loss, ranking loss, one-error, coverage, average precision and
    micro-F1 of Octave's scores equal pmlbench's metrics (Zhang's conventions) of them; the
    authors' ``coverage.m`` divides by the number of labels, pmlbench's coverage does not."""
    c = case(name)
    scores, predicted = c.octave("scores"), c.octave("pred")
    theirs = dict(zip(META["authors_metrics"], c.octave("authors_metrics"), strict=True))
    ours = {
        "hamming_loss": hamming_loss(c.Y_test, predicted),
        "ranking_loss": ranking_loss(c.Y_test, predicted, scores),
        "one_error": one_error(c.Y_test, predicted, scores),
        "coverage": coverage(c.Y_test, predicted, scores) / c.Y_test.shape[1],
        "average_precision": average_precision(c.Y_test, predicted, scores),
        "micro_f1": micro_f1(c.Y_test, predicted),
    }
    for metric, value in ours.items():
        assert abs(value - theirs[metric]) <= 1e-12, metric


def test_the_cases_cover_what_they_claim():
    assert case("synth").K.shape[1] < case("synth").K.shape[0]  # XᵀX invertible
    emotions = case("emotions")
    assert (
        emotions.K.shape[1] == emotions.K.shape[0] + 1 and emotions.side.rank < emotions.K.shape[1]
    )
    genbase = case("genbase")
    assert len(np.unique(genbase.Xs, axis=0)) < len(genbase.Xs)  # duplicate rows
    assert len(np.unique(genbase.K, axis=1)) < genbase.K.shape[1]  # identical kernel columns
    iterations = {name: fitted(name).diagnostics_["iterations"] for name in CASES}
    assert iterations["synth_second"] == 20 and iterations["synth"] == 6  # both ways it stops


# ---------------------------------------------------------------- the linear algebra


def literal_h_step(X, L, D, M, gamma, lam):
    """The code's H step as written: ``sylvester(γ·pinv(XᵀX)·L_k, MMᵀ + λI, pinv(XᵀX)XᵀDMᵀ)``,
    with MATLAB's ``pinv`` tolerance."""
    G = X.T @ X
    T = np.linalg.pinv(
        G,
        rcond=max(G.shape) * np.spacing(np.linalg.norm(G, 2)) / np.linalg.norm(G, 2),
        hermitian=True,
    )
    return scipy.linalg.solve_sylvester(
        gamma * T @ L, M @ M.T + lam * np.eye(M.shape[0]), T @ X.T @ D @ M.T
    )


@pytest.mark.parametrize("name", ["synth", "emotions", "genbase"])
def test_reduced_h_step_is_the_codes_h_step(name):
    """H = V Z with Z from the r x r equation equals the literal h x h Sylvester solution,
    also where XᵀX is singular (emotions: h = n + 1; genbase: identical columns)."""
    c = case(name)
    D, M0 = c.reconstruction.D, c.M0
    gamma, lam = 0.1, 1.0
    side = c.side
    b, Qb = scipy.linalg.eigh(M0 @ M0.T + lam * np.eye(M0.shape[0]))
    Z = M.schur_sylvester(
        (gamma * side.T, side.Q), (b, Qb), (side.U.T @ D / side.s[:, None]) @ M0.T
    )
    expected = literal_h_step(c.K, c.L.toarray(), D, M0, gamma, lam)
    assert relative_error(side.V @ Z, expected) < 1e-6


def test_blocked_schur_sylvester_solves_the_equation():
    """Blocks of :data:`SYLVESTER_BLOCK` rows, complex eigenvalue pairs (2 x 2 blocks of T) at
    the block boundaries included."""
    rng = np.random.default_rng(0)
    r, width = 3 * M.SYLVESTER_BLOCK + 7, 40
    A = rng.normal(size=(r, r))  # many complex pairs
    B = rng.normal(size=(width, width))
    B = B @ B.T + np.eye(width)
    C = rng.normal(size=(r, width))
    T, Q = scipy.linalg.schur(A, output="real")
    assert (np.diag(T, -1) != 0).sum() > 10
    X = M.schur_sylvester((T, Q), np.linalg.eigh(B), C)
    np.testing.assert_allclose(X, scipy.linalg.solve_sylvester(A, B, C), rtol=1e-8, atol=1e-10)


def literal_reconstruction(X, Y, groups, k, rounds=5):
    """``PML_LR.m`` with its n x n matrices (after the k-means)."""
    n = X.shape[0]
    A = (groups[:, None] == groups[None, :]).astype(float)
    distance = ((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2)
    ind = np.argsort(distance, axis=1, kind="stable")
    near = np.take_along_axis(distance, ind, axis=1)
    segma = near[:, 1].sum() / n
    S = np.exp(-distance / segma**2)
    N = np.zeros((n, n))
    for i in range(n):
        N[i, ind[i, : k + 1]] = 1.0
    S_new = N * (S + A)
    D, Q, eps = Y.astype(float), distance, np.finfo(float).eps
    for _ in range(rounds):
        S = S * (N * S_new) / (N * N * (A + S) + Q + eps)
        S_new = S_new * (N * (A + S) + D @ Y.T / k) / (S_new + S_new @ Y @ Y.T / k**2 + eps)
        D = S_new @ Y / k
        D[D > 1] = 1
        D[Y == 0] = 0
    return D


def test_local_reconstruction_is_the_codes_with_duplicates_and_ties():
    """Duplicate rows (one preceding its twin: the twin's list starts with it) and equal
    distances on a grid, k = 3."""
    rng = np.random.default_rng(1)
    X = rng.integers(0, 3, size=(40, 3)).astype(float)
    X[7] = X[2]
    Y = (rng.random((40, 5)) < 0.4).astype(np.uint8)
    Y[Y.sum(axis=1) == 0, 0] = 1
    groups = rng.integers(0, 4, size=40)
    ours = M.local_reconstruction(X, Y, groups, k=3).D
    np.testing.assert_allclose(
        ours, literal_reconstruction(X, Y.astype(float), groups, 3), rtol=0, atol=1e-13
    )


def test_local_reconstruction_weights_the_knn_graphs_neighbours():
    """N, Q and σ are those of the knn_S.m graph (pmlbench.numerics.knn_graph.nearest_rows):
    the code's stable sort of pdist2 (a preceding twin first), weighted exp(−Q/σ²) here; a
    training set of twins only has σ = 0 and is refused with the method's name."""
    rng = np.random.default_rng(4)
    X = rng.integers(0, 3, size=(30, 3)).astype(float)
    X[9] = X[4]
    Y = (rng.random((30, 4)) < 0.5).astype(np.uint8)
    r = M.local_reconstruction(X, Y, rng.integers(0, 3, size=30), k=4, rounds=1)
    D = ((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2)
    expected = np.argsort(D, axis=1, kind="stable")[:, :5]
    assert np.array_equal(r.neighbours, expected) and r.neighbours[9, 0] == 4
    assert np.array_equal(r.distances, np.take_along_axis(D, expected, axis=1))
    assert r.width == D[np.arange(30), expected[:, 1]].sum() / 30
    twins = np.repeat(X[:5], 2, axis=0)
    with pytest.raises(PmlbenchError, match="^pml_lrig: every training instance has an identical"):
        M.local_reconstruction(twins, Y[:10], np.zeros(10, dtype=int), k=2)


def literal_feature_laplacian(K, k):
    """``Feature_similarity.m`` as written (ascending stable sort, positions end−1..end−k−1)."""
    h = K.shape[1]
    norms = np.linalg.norm(K, axis=0)
    B = np.outer(norms, norms)
    B[B == 0] = 1.0
    dist = (K.T @ K) / B
    ind = np.argsort(dist, axis=1, kind="stable")
    W = np.eye(h)
    for i in range(h):
        for j in range(1, k + 2):
            W[i, ind[i, -1 - j]] = dist[i, ind[i, -1 - j]]
    return np.diag(W.sum(axis=1)) - W


def test_feature_graph_orders_ties_as_the_stable_sort():
    """Identical columns (a duplicated anchor) tie at similarity 1: the code's ascending
    stable sort puts the higher index last, so the lower of two twins links to itself and
    its twin is skipped; the bias column is exactly orthogonal to the centred columns."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(30, 3))
    X[9] = X[4]
    anchors = np.array([4, 9, 1, 2, 3, 5, 6, 7, 8, 10, 11, 12])
    _, K = M.KernelMap.fit(X, anchors, method="pml_lrig", rows=True)
    assert np.array_equal(K[:, 0], K[:, 1])
    L, chosen = M.feature_laplacian(K, 3)
    assert 0 in chosen[0] and 1 not in chosen[0]  # column 0 keeps itself, skips twin 1
    assert 1 not in chosen[1]  # column 1 is sorted last in its own row: skipped
    bias = K.shape[1] - 1
    assert not L[bias].toarray()[0, :bias].any() and not L[:bias, bias].toarray().any()
    expected = literal_feature_laplacian(K, 3)
    expected[bias, :] = 0.0  # rounding residues of the centred columns' sums
    expected[:, bias] = 0.0
    np.testing.assert_allclose(L.toarray(), expected, rtol=0, atol=1e-13)


def test_feature_graph_measures_near_ties_again():
    """Columns 1 and 2 have the same cosine with column 0 up to the last bits (2 is 1 scaled by
    1 + 1e-15) and straddle the cut of row 0 (k = 1: column 3 first, then one of them): BLAS
    cannot order them, the values measured again without BLAS do (ties: the higher index)."""
    rng = np.random.default_rng(3)
    a, b, e = rng.normal(size=(3, 50))
    columns = [a, a + 2.0 * b, None, a + 0.5 * b, e, -a]
    columns[2] = columns[1] * (1 + 1e-15)
    K = np.column_stack(columns)
    K -= K.mean(axis=0)
    K = np.hstack([K, np.ones((50, 1))])
    L, chosen = M.feature_laplacian(K, 1)
    norms = np.sqrt((K * K).sum(axis=0))
    again = M._pair_cosines(K, norms, np.arange(7), np.zeros(7, dtype=int), np.arange(7))
    order = sorted(range(7), key=lambda j: (-again[j], -j))
    assert order[:2] == [0, 3] and set(order[2:4]) == {1, 2}
    assert list(chosen[0]) == order[1:3]


def test_cosine_start_gives_a_zero_column_zero_similarity():
    D = np.array([[1.0, 0.0, 0.5], [0.5, 0.0, 1.0]])
    C = M.cosine_start(D)
    assert not C[1].any() and not C[:, 1].any()
    np.testing.assert_allclose(np.diag(C)[[0, 2]], 1.0)


def test_a_label_and_an_instance_without_candidates_stay_zero():
    """The code divides 0 by 0 on them (NaN everywhere after); pmlbench keeps F at 0 there,
    the label's scores are 0, and every other output is finite."""
    c = case("tiny")
    Y = c.C_train.copy()
    Y[:, 1] = 0
    Y[3] = 0
    model = c.model().fit(c.X_train, Y)
    assert np.isfinite(model.W_).all() and np.isfinite(model.guidance_labels_).all()
    assert not model.guidance_labels_[:, 1].any() and not model.guidance_labels_[3].any()
    np.testing.assert_allclose(model.decision_function(c.X_test)[:, 1], 0.0, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_iterate_of_f_lives_on_the_confidences_support(name):
    """The guidance takes its products with F as sparse products over D's non-zero entries,
    which is exact only if F is zero wherever D is: check it at every kept stage, with a
    label and an instance emptied (where the update's denominator is 0), and check that the
    support form holds exactly the entries it is given."""
    c = case(name)
    D = c.reconstruction.D.copy()
    D[:, 0] = 0.0
    D[1] = 0.0
    solution = M.indirect_guidance(c.side, D, c.M0, **c.params_ig, keep_stages=5)
    assert solution.stages
    for stage in [*solution.stages, {"F": solution.F}]:
        assert not stage["F"][D == 0].any()
        assert np.isfinite(stage["F"]).all()
    support = M.CandidateSupport(D)
    np.testing.assert_array_equal(support.of(solution.F).toarray(), solution.F)
    assert support.of(D).nnz == np.count_nonzero(D)


def test_pinv_tolerance_is_matlabs_or_rtol():
    c = case("emotions")
    s = np.linalg.svd(c.K, compute_uv=False)
    G = c.K.T @ c.K
    assert M.pinv_tolerance(s[0], G.shape[0], None) == pytest.approx(
        G.shape[0] * np.spacing(np.linalg.norm(G, 2)), rel=1e-12
    )
    assert M.pinv_tolerance(2.0, 5, 1e-3) == 4e-3
    side = c.side
    assert side.largest_dropped < 1e-25 and side.smallest_kept > 1e-8  # far from the cut
    assert M.FeatureSide.of(c.K, c.L, 1e-6).rank < side.rank


@pytest.mark.parametrize("name", ["emotions", "genbase"])
def test_inputs_perturbed_at_1e_15_move_the_result_by_rounding_only(name):
    c = case(name)
    base = c.solve()
    rng = np.random.default_rng(5)

    def nudge(A: np.ndarray) -> np.ndarray:
        return A * (1 + 1e-15 * rng.standard_normal(A.shape))

    K = nudge(c.K)
    side = M.FeatureSide.of(K, M.feature_laplacian(K, 5)[0], None)
    moved = M.indirect_guidance(side, nudge(c.reconstruction.D), nudge(c.M0), **c.params_ig)
    assert moved.iterations == base.iterations
    assert np.abs(c.Kt @ (moved.W - base.W)).max() < 1e-9
    assert relative_error(moved.F, base.F) < 1e-9


def test_two_blas_threads_change_rounding_only():
    c = case("genbase")
    one, two = fitted("genbase"), c.model(blas_threads=2).fit(c.X_train, c.C_train)
    assert one.diagnostics_["iterations"] == two.diagnostics_["iterations"]
    gap = np.abs(two.decision_function(c.X_test) - one.decision_function(c.X_test)).max()
    assert gap < 1e-9
    assert np.array_equal(two.predict(c.X_test), one.predict(c.X_test))


def test_disambiguation_scores_are_the_label_confidences():
    c, model = case("synth"), fitted("synth")
    scores = model.disambiguation_scores_
    assert scores is model.label_confidences_ and scores.shape == c.C_train.shape
    assert (scores[c.C_train == 0] == 0).all() and (scores[c.C_train == 1] > 0).all()
    truth = REFERENCE["synth_Y"][REFERENCE["synth_train"]]
    candidates = c.C_train == 1
    assert scores[candidates & (truth == 1)].mean() > scores[candidates & (truth == 0)].mean()


# ---------------------------------------------------------------- the estimator


def test_refuses_above_max_order_before_any_work():
    c = case("tiny")
    n, d = c.X_train.shape
    h = min(5 * d, n) + 1
    with pytest.raises(NotApplicable, match="set method.max_order=null") as error:
        PMLLRIG(max_order=h - 1).fit(c.X_train, c.C_train[:5])  # bad labels: never looked at
    message = str(error.value)
    assert "\n" not in message and f"method.max_order={h - 1}" in message
    assert isinstance(error.value, PmlbenchError)
    PMLLRIG(max_order=h).fit(c.X_train, c.C_train)
    PMLLRIG(max_order=None).fit(c.X_train, c.C_train)
    assert PMLLRIG().max_order == MAX_ORDER


def test_default_cap_admits_and_refuses_the_measured_datasets():
    """Training halves of the suite's datasets (n, d) and their order h = min(5d, n) + 1:
    tuned, 15.6-49.7 times ML-kNN's CPU time where admitted, 72.4 and 95.4 times where
    refused (docs/methods/pml_lrig.md, "Cost")."""
    admitted = {
        "corel5k": (2500, 499),  # h = 2496
        "recreation": (2500, 606),  # h = 2501, as science, corel16k001 and delicious
        "corel16k001": (6883, 500),
        "delicious": (8052, 500),
    }
    refused = {"bibtex": (3697, 1836), "yeastbp": (3069, 6139)}  # h = 3698, 3070
    assert PMLLRIG().max_order == MAX_ORDER == 2600
    for n, d in admitted.values():
        assert M.refusal_message(n, d, MAX_ORDER) is None
    for n, d in refused.values():
        message = M.refusal_message(n, d, MAX_ORDER)
        assert message is not None and "\n" not in message
        assert "method.max_order=2600" in message and "method.max_order=null" in message
        assert M.refusal_message(n, d, None) is None


@pytest.mark.parametrize(
    ("params", "key"),
    [
        ({"alpha": 0}, "method.alpha"),
        ({"beta": float("nan")}, "method.beta"),
        ({"gamma": -1}, "method.gamma"),
        ({"lam": 0}, "method.lam"),
        ({"ratio": 0}, "method.ratio"),
        ({"ratio": 1.5}, "method.ratio"),
        ({"n_neighbors": 0}, "method.n_neighbors"),
        ({"feature_neighbors": 2.5}, "method.feature_neighbors"),
        ({"reconstruction_rounds": 0}, "method.reconstruction_rounds"),
        ({"max_iter": 0}, "method.max_iter"),
        ({"tol": -1}, "method.tol"),
        ({"threshold": float("inf")}, "method.threshold"),
        ({"rtol": 0}, "method.rtol"),
        ({"rtol": 1}, "method.rtol"),
        ({"max_order": 0}, "method.max_order"),
        ({"random_state": -1}, "method.random_state"),
        ({"blas_threads": 0}, "method.blas_threads"),
    ],
)
def test_bad_parameters_are_one_line_errors(params, key):
    c = case("tiny")
    with pytest.raises(PmlbenchError, match=key) as error:
        PMLLRIG(**params).fit(c.X_train, c.C_train)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("params", "key"),
    [
        ({"n_neighbors": 35}, "method.n_neighbors"),
        ({"feature_neighbors": 20}, "method.feature_neighbors"),
    ],
)
def test_too_many_neighbours_is_a_one_line_error(params, key):
    c = case("tiny")  # 35 training instances, 4 features: 20 anchors
    with pytest.raises(PmlbenchError, match=key) as error:
        PMLLRIG(**params).fit(c.X_train, c.C_train)
    assert "\n" not in str(error.value)
    PMLLRIG(n_neighbors=34, feature_neighbors=19).fit(c.X_train, c.C_train)


def test_deterministic_shapes_and_sparse_input():
    c = case("tiny")
    first = PMLLRIG(random_state=3).fit(c.X_train, c.C_train)
    again = PMLLRIG(random_state=3).fit(sp.csr_matrix(c.X_train), c.C_train)
    other = PMLLRIG(random_state=4).fit(c.X_train, c.C_train)
    scores = first.decision_function(c.X_test)
    assert scores.shape == (c.X_test.shape[0], c.C_train.shape[1])
    assert np.array_equal(scores, again.decision_function(sp.csr_matrix(c.X_test)))
    assert not np.array_equal(scores, other.decision_function(c.X_test))
    predicted = first.predict(c.X_test)
    assert predicted.dtype == np.uint8 and np.array_equal(predicted, scores >= 0.5)
    for key in ("iterations", "pinv_rank", "pinv_smallest_kept", "clusters", "fit_seconds"):
        assert key in first.diagnostics_
    with pytest.raises(PmlbenchError, match="fitted on 4 features"):
        first.decision_function(c.X_test[:, :3])


def test_check_method():
    check_method("pml_lrig")


def test_registered_with_the_demo_defaults():
    cls = registry.load("method", "pml_lrig")
    assert cls is PMLLRIG
    model = cls()
    assert (model.alpha, model.beta, model.gamma, model.lam, model.ratio) == (1, 1, 0.1, 1, 0.2)
    assert (model.n_neighbors, model.feature_neighbors, model.reconstruction_rounds) == (5, 5, 5)
    assert (model.max_iter, model.tol, model.threshold, model.rtol) == (20, 1e-4, 0.5, None)


def test_declared_grid():
    """docs/methods/pml_lrig.md, "Tuning grid": the demo's λ and γ in the grid."""
    grid = PMLLRIG.default_tuning_grid
    model = PMLLRIG()
    assert all(getattr(model, name) in values for name, values in grid.items())


@pytest.mark.parametrize(
    ("name", "grid"),
    [
        ("synth", PMLLRIG.default_tuning_grid),
        ("genbase", {"lam": [0.1, 1.0]}),  # constant features, duplicate rows
        ("tiny", {"ratio": [0.2, 1.0], "n_neighbors": [3, 5], "feature_neighbors": [2, 5]}),
        ("tiny", {"rtol": [None, 1e-6], "alpha": [1.0, 10.0], "beta": [0.0, 1.0]}),
        ("tiny", {"reconstruction_rounds": [1, 5], "max_iter": [3, 20], "tol": [0.0, 1e-4]}),
    ],
)
def test_fit_grid_is_a_fit_from_scratch_per_point(name, grid):
    """Bit for bit: the shared parts (scaling, draws, k-means, reconstruction, kernel map,
    feature graph, SVD, Schur form) are computed as a fit alone computes them, keyed by every
    parameter they depend on; the iterations run per point."""
    c = case(name)
    points = list(ParameterGrid(grid))
    gap = check_fit_grid(c.model(), c.X_train, c.C_train, points, X_eval=c.X_test, atol=0.0)
    assert gap == 0.0


def test_fit_grid_computes_the_shared_parts_once(monkeypatch):
    calls: dict[str, int] = {}

    def counting(name: str, owner=M):
        function = getattr(owner, name)

        def wrapper(*args, **kwargs):
            calls[name] = calls.get(name, 0) + 1
            return function(*args, **kwargs)

        monkeypatch.setattr(owner, name, wrapper)

    for name in (
        "minmax_fit",
        "initial_values",
        "kmeans_labels",
        "local_reconstruction",
        "feature_laplacian",
        "indirect_guidance",
    ):
        counting(name)
    original = M.FeatureSide.of
    monkeypatch.setattr(
        M.FeatureSide,
        "of",
        classmethod(
            lambda cls, *a, **k: calls.update(side=calls.get("side", 0) + 1) or original(*a, **k)
        ),
    )
    c = case("synth")
    grid = list(ParameterGrid(PMLLRIG.default_tuning_grid))
    models = dict(c.model().fit_grid(c.X_train, c.C_train, grid))
    assert calls == {
        "minmax_fit": 1,
        "initial_values": 1,
        "kmeans_labels": 1,
        "local_reconstruction": 1,
        "feature_laplacian": 1,
        "side": 1,
        "indirect_guidance": len(grid),
    }
    assert models[0].kernel_ is models[1].kernel_


def test_fit_grid_without_a_seed_shares_one_draw():
    c = case("tiny")
    models = dict(PMLLRIG().fit_grid(c.X_train, c.C_train, [{"lam": 0.1}, {"lam": 1.0}]))
    assert np.array_equal(models[0].kernel_.anchors, models[1].kernel_.anchors)
    first, second = (PMLLRIG().fit(c.X_train, c.C_train) for _ in range(2))
    assert not np.array_equal(first.kernel_.anchors, second.kernel_.anchors)


def test_regenerated_reference_agrees(tmp_path):
    """Run the authors' code again in Octave on the small case (optional: needs octave-cli
    and a copy of the authors' repository in PMLLRIG_SOURCE) and check pmlbench against it."""
    fresh = regenerated_reference(
        FIXTURES, "PMLLRIG_SOURCE", "github.com/CcAmbiguous/PML-LRIG", tmp_path, "tiny"
    )
    c = Case("tiny", fresh, json.loads(str(fresh["meta"])))
    check_stage1(c)
    check_stages(c)
    for part in ("W", "F", "C", "scores"):
        assert relative_error(c.octave(part), case("tiny").octave(part)) < RTOL
