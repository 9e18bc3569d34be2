"""PARTICLE-MAP / PARTICLE-VLS against loop transcriptions of the paper and its properties."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import nnls
from sklearn.model_selection import ParameterGrid
from sklearn.svm import LinearSVC

from pmlbench.datasets.bundled import genbase, yeast
from pmlbench.errors import NotApplicable, PmlbenchError
from pmlbench.methods.mlknn import MLkNN
from pmlbench.methods.particle import ParticleMAP, ParticleVLS, clr, credible, vls
from pmlbench.methods.particle.credible import (
    Stage1Params,
    credible_labels,
    label_confidence,
    propagation_matrix,
    zero_weight_mask,
)
from pmlbench.noise.uniform import uniform_noise
from pmlbench.numerics.enrichment import particle_normalize, propagate
from pmlbench.numerics.neighbors import kneighbors
from pmlbench.plugins import registry
from pmlbench.testing import check_fit_grid


def synthetic(rng, n=60, d=8, q=5, n_test=20):
    """Clustered features, labels tied to clusters, one random wrong candidate per instance."""
    centres = rng.normal(size=(q, d)) * 3
    Y = (rng.random((n + n_test, q)) < 0.25).astype(np.uint8)
    Y[np.arange(n + n_test), rng.integers(0, q, n + n_test)] = 1
    X = Y @ centres + rng.normal(size=(n + n_test, d))
    S = uniform_noise(Y[:n], rng, 1.0)
    return X[:n], S, X[n:], Y[:n]


def plain_stage1(X, S, k=10, alpha=0.95, max_iter=1000, tol=1e-5):
    """PAR_train.m as loops: NNLS per instance, D^-1 W, propagate, rescale, min-max."""
    n, q = S.shape
    W = np.zeros((n, n))
    for i in range(n):
        d = np.sqrt(((X - X[i]) ** 2).sum(axis=1))
        d[i] = np.inf
        neighbours = np.argsort(d, kind="stable")[:k]
        W[i, neighbours] = nnls(X[neighbours].T, X[i])[0]
    sums = W.sum(axis=1)
    sums[sums == 0] = 1
    H = W / sums[:, None]
    F0 = S.astype(float)
    F = F0.copy()
    for _ in range(max_iter):
        previous = F
        F = alpha * H @ F + (1 - alpha) * F0
        F = F * S
        F = F / F.sum(axis=1, keepdims=True)
        if np.linalg.norm(F - previous, 2) < tol:
            break
    F = F * (S.sum(axis=0) / F.sum(axis=0))
    for i in range(n):
        F[i] = (F[i] - F[i].min()) / (F[i].max() - F[i].min())
    return F


def test_stage1_matches_loop_transcription(rng):
    X, S, _, _ = synthetic(rng)
    F_hat, info = label_confidence(X, S, Stage1Params())
    np.testing.assert_allclose(F_hat, plain_stage1(X, S), atol=1e-6)
    assert info["n_iter"] < 1000


def test_propagation_converges_on_genbase():
    data = genbase()
    X, Y = data.X[:300], data.Y[:300]
    S = uniform_noise(Y, np.random.default_rng(0), 1.0)
    params = Stage1Params()
    H, _ = propagation_matrix(X, params)
    F_hat, info = label_confidence(X, S, params)
    assert info["n_iter"] < params.max_iter
    assert F_hat.min() >= 0 and F_hat.max() <= 1
    assert np.all(F_hat[S == 0] == 0)
    assert np.allclose(F_hat.max(axis=1)[S.sum(axis=1) > 0], 1.0)
    sums = np.asarray(H.sum(axis=1)).ravel()
    assert np.allclose(sums[sums > 0], 1.0)  # D^-1 W: row-stochastic (or zero) rows
    # the returned iterate is (numerically) a fixed point of one more PARTICLE step
    Sf = S.astype(float)
    F, steps = propagate(
        H, Sf, 0.95, particle_normalize, max_iter=1000, tol=1e-5, stop_norm="spectral"
    )
    assert steps == info["n_iter"]
    step = particle_normalize(0.95 * (H @ F) + 0.05 * Sf, Sf)
    assert np.linalg.norm(step - F, 2) < 1e-5


def test_credible_labels_are_candidates_and_never_empty(rng):
    data = genbase()
    X, S = data.X[:300], uniform_noise(data.Y[:300], rng, 1.0)
    has_candidates = S.sum(axis=1) > 0
    for mode in ("in_sample", "out_of_fold"):
        params = Stage1Params(credible=mode)
        credible, _ = credible_labels(X, S, params, random_state=0)
        assert np.all(credible <= S)
        assert np.all(credible.sum(axis=1)[has_candidates] >= 1)
        assert 0 < credible.sum() < S.sum()


def test_out_of_fold_authors_fallback_may_leave_candidates(rng):
    X, S, _, _ = synthetic(rng, n=80)
    strict = Stage1Params(credible="out_of_fold", threshold=1.0, oof_fallback="candidate")
    authors = Stage1Params(credible="out_of_fold", threshold=1.0, oof_fallback="authors")
    kept, info = credible_labels(X, S, strict, random_state=1)
    loose, _ = credible_labels(X, S, authors, random_state=1)
    assert info["n_empty_fallback"] > 0
    assert np.all(kept <= S) and np.all(kept.sum(axis=1) >= 1)
    assert np.any(loose > S)


def test_zero_weight_rows_agree_with_nnls(rng):
    X = np.abs(rng.normal(size=(30, 12))) * (rng.random((30, 12)) < 0.15)
    neighbours = kneighbors(X, X, 5, exclude_self=True)
    mask = zero_weight_mask(sp.csr_matrix(X), neighbours)
    direct = np.array([nnls(X[neighbours[i]].T, X[i])[0].sum() == 0 for i in range(30)])
    assert mask.any() and np.array_equal(mask, direct)
    for option, expected in (("zero", 0.0), ("uniform", 1.0)):
        H, n_zero = propagation_matrix(X, Stage1Params(k=5, zero_weight_rows=option))
        assert n_zero == mask.sum()
        assert np.allclose(np.asarray(H.sum(axis=1)).ravel()[mask], expected)


def test_self_neighbour_option_makes_propagation_trivial(rng):
    """The authors' k nearest including self: with d >= k, NNLS picks self alone (H = I)."""
    X = rng.normal(size=(40, 15))
    H, _ = propagation_matrix(X, Stage1Params(include_self=True))
    np.testing.assert_allclose(H.toarray(), np.eye(40), atol=1e-8)
    H, _ = propagation_matrix(X, Stage1Params())
    assert np.all(H.diagonal() == 0)


def brute_force_votes(X_train, credible, S, X_test, weighted):
    """Calibrated label ranking with a virtual label, one sklearn LinearSVC per problem."""
    n, q = S.shape
    zeta = np.zeros((len(X_test), q))
    zeta_v = np.zeros(len(X_test))

    def train(pos, neg):
        # PAR_VLS.m: `if <positive> ... elseif <negative>`, so an instance that qualifies
        # for both sides is a positive
        rows = [i for i in range(n) if pos[i] or neg[i]]
        y = np.array([1 if pos[i] else 0 for i in rows])
        if not y.any() or y.all():
            return None, 0.0
        svm = LinearSVC(C=1.0).fit(X_train[rows], y)
        return svm, float(np.mean(svm.predict(X_train[rows]) == y))

    for j in range(q):
        for k in range(j + 1, q):
            pos = [credible[i, j] == 1 and S[i, k] == 0 for i in range(n)]
            neg = [credible[i, k] == 1 and S[i, j] == 0 for i in range(n)]
            svm, acc = train(pos, neg)
            if svm is None:
                continue
            for t, x in enumerate(X_test):
                winner = j if svm.decision_function(x[None, :])[0] > 0 else k
                zeta[t, winner] += acc if weighted else 1
        svm, acc = train(credible[:, j] == 1, S[:, j] == 0)
        if svm is None:
            continue
        for t, x in enumerate(X_test):
            if svm.decision_function(x[None, :])[0] > 0:
                zeta[t, j] += acc if weighted else 1
            else:
                zeta_v[t] += acc if weighted else 1
    return zeta, zeta_v


@pytest.mark.parametrize("votes", ["unweighted", "accuracy"])
def test_vls_votes_equal_brute_force(rng, votes):
    X, S, X_test, _ = synthetic(rng, n=50, q=5, n_test=15)
    est = ParticleVLS(votes=votes, random_state=0).fit(X, S)
    zeta, zeta_v = est.label_votes(X_test)
    ref, ref_v = brute_force_votes(X, est.credible_labels_, S, X_test, votes == "accuracy")
    np.testing.assert_allclose(zeta, ref, atol=1e-12)
    np.testing.assert_allclose(zeta_v, ref_v, atol=1e-12)
    if votes == "accuracy":
        ref, ref_v = np.ceil(ref), np.ceil(ref_v)
    np.testing.assert_array_equal(est.predict(X_test), (ref > ref_v[:, None]).astype(np.uint8))
    scores = est.decision_function(X_test)
    assert scores.min() >= 0 and scores.max() <= 1
    assert np.array_equal(np.argmax(scores, axis=1), np.argmax(zeta, axis=1))


def test_vls_authors_fallback_trains_an_instance_on_both_sides_as_a_positive():
    """With oof_fallback=authors a credible label may be a non-candidate, so an instance can
    qualify for both sides of a problem; PAR_VLS.m makes it a positive, and a problem left
    with no negatives is not trained (it used to reach liblinear with one class and fail)."""
    X, S, X_test, _ = synthetic(np.random.default_rng(28), n=30, q=4)
    params = {"k": 5, "n_folds": 2, "credible": "out_of_fold", "oof_fallback": "authors"}
    est = ParticleVLS(random_state=0, **params).fit(X, S)
    C, N = est.credible_labels_.astype(bool), S == 0
    assert np.any(C & N)  # credible non-candidates: the case this test is about
    raw_sides = {
        (j, k): (C[:, j] & N[:, k], C[:, k] & N[:, j]) for j in range(4) for k in range(j + 1, 4)
    }
    raw_sides |= {(j, clr.VIRTUAL): (C[:, j], N[:, j]) for j in range(4)}
    # problems with instances on both raw sides, but whose negatives are all positives too
    one_sided = {
        problem
        for problem, (pos, neg) in raw_sides.items()
        if pos.any() and neg.any() and not (neg & ~pos).any()
    }
    assert one_sided
    trained = set(zip(est.models_.first.tolist(), est.models_.second.tolist(), strict=True))
    assert trained and not one_sided & trained
    zeta, zeta_v = est.label_votes(X_test)
    ref, ref_v = brute_force_votes(X, est.credible_labels_, S, X_test, weighted=False)
    np.testing.assert_allclose(zeta, ref, atol=1e-12)
    np.testing.assert_allclose(zeta_v, ref_v, atol=1e-12)


def test_vls_threads_give_the_numbers_of_one_thread():
    """liblinear's one random generator per process is seeded per call: calls running in
    threads at once would interleave their draws and move weights by about 1e-5."""
    data = yeast()
    X = np.asarray(data.X[:600].todense()) if sp.issparse(data.X) else data.X[:600]
    S = uniform_noise(data.Y[:600], np.random.default_rng(0), 1.0)
    alone = ParticleVLS(random_state=0).fit(X, S).models_
    for _ in range(2):
        threaded = ParticleVLS(random_state=0, n_jobs=2).fit(X, S).models_
        assert _same_models(threaded, alone)


def test_vls_skips_problems_without_data_on_both_sides(rng):
    X, S, X_test, _ = synthetic(rng, n=50, q=5)
    S[:, 4] = 0  # label 4 is never a candidate: no positives for it anywhere
    est = ParticleVLS(random_state=0, n_jobs=2).fit(X, S)
    assert 4 not in est.models_.first
    assert est.diagnostics_["pair_models"] <= 6
    assert np.all(est.predict(X_test)[:, 4] == 0)


@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
@pytest.mark.parametrize("sparse", [False, True])
def test_direct_liblinear_call_equals_linearsvc(rng, loss, sparse):
    X = rng.normal(size=(40, 12)) * (rng.random((40, 12)) < 0.4)
    y = (X[:, 0] + 0.3 * rng.normal(size=40) > 0).astype(np.int8)
    X = sp.csr_matrix(X) if sparse else X
    params = {"C": 1.0, "loss": loss, "max_iter": 1000, "random_state": 3}
    if loss == "hinge":
        params["dual"] = True
    w, b, n_iter = clr._linear_svm(X, y, params)
    reference = LinearSVC(**params).fit(X, y)
    np.testing.assert_array_equal(w, reference.coef_.ravel())
    assert b == reference.intercept_[0] and n_iter == reference.n_iter_


def test_votes_for_sparse_rows_equal_the_dense_product(rng, monkeypatch):
    X, S, X_test, _ = synthetic(rng, n=60, q=6, n_test=30)
    X, X_test = np.abs(X) * (X > 1), np.abs(X_test) * (X_test > 1)
    est = ParticleVLS(random_state=0).fit(sp.csr_matrix(X), S)
    fast = est.label_votes(sp.csr_matrix(X_test))
    assert est.label_votes(sp.csr_matrix(X_test))[0] is not fast[0]  # a copy of the cache
    est._votes_cache = None
    monkeypatch.setattr(clr, "_DENSE_WEIGHT_ENTRIES", 0)  # the stacked sparse weights
    slow = est.label_votes(sp.csr_matrix(X_test))
    np.testing.assert_array_equal(fast[0], slow[0])
    np.testing.assert_array_equal(fast[1], slow[1])


def test_vls_refuses_too_many_label_pairs_before_any_work(rng):
    _, S, _, _ = synthetic(rng, n=30, q=6)  # 15 label pairs
    # X is not even looked at: the refusal comes before stage 1
    with pytest.raises(NotApplicable) as refusal:
        ParticleVLS(max_label_pairs=14).fit(None, S)
    message = str(refusal.value)
    assert "\n" not in message
    assert message == (
        "particle_vls trains one classifier per label pair: 15 pairs on 6 labels exceed "
        "method.max_label_pairs=14; raise it (or set it to null) to run anyway"
    )
    X, S, X_test, _ = synthetic(rng, n=30, q=6)
    for cap in (15, None):
        assert ParticleVLS(max_label_pairs=cap, random_state=0).fit(X, S).predict(X_test).shape
    with pytest.raises(PmlbenchError, match=r"^method\.max_label_pairs must be "):
        ParticleVLS(max_label_pairs=0).fit(X, S)


def test_vls_default_cap_refuses_delicious_sized_label_sets(rng):
    # the default admits corel16k001 (153 labels, 11,628 pairs) and refuses bibtex (159
    # labels, 12,561 pairs), cal500 (174), yeastbp (217), corel5k (374) and delicious (983)
    assert ParticleVLS().max_label_pairs == 12_000
    est = ParticleVLS()
    est._check_label_pairs(153)
    with pytest.raises(NotApplicable, match=r"12,561 pairs on 159 labels"):
        est._check_label_pairs(159)
    with pytest.raises(NotApplicable, match=r"^particle_vls .*: 15,051 pairs on 174 labels"):
        est._check_label_pairs(174)
    with pytest.raises(NotApplicable, match=r"23,436 pairs on 217 labels"):
        est._check_label_pairs(217)
    with pytest.raises(NotApplicable, match=r"15,051 pairs on 174 labels .*=12000; raise it"):
        est._check_label_pairs(174)
    with pytest.raises(NotApplicable, match=r"482,653 pairs on 983 labels"):
        est._check_label_pairs(983)
    with pytest.raises(NotApplicable, match=r"69,751 pairs on 374 labels"):
        est._check_label_pairs(374)


def test_map_equals_mlknn_when_every_candidate_is_credible(rng):
    X, S, X_test, _ = synthetic(rng)
    est = ParticleMAP(threshold=0.0).fit(X, S)
    assert np.array_equal(est.credible_labels_, S)
    reference = MLkNN().fit(X, S)
    np.testing.assert_array_equal(
        est.decision_function(X_test), reference.decision_function(X_test)
    )
    np.testing.assert_array_equal(est.predict(X_test), reference.predict(X_test))


def test_map_learns_from_credible_labels_only(rng):
    X, S, X_test, _ = synthetic(rng)
    est = ParticleMAP().fit(X, S)
    reference = MLkNN().fit(X, est.credible_labels_)
    np.testing.assert_array_equal(
        est.decision_function(X_test), reference.decision_function(X_test)
    )


def test_plugins_and_bad_options(rng):
    assert registry.load("method", "particle_map") is ParticleMAP
    assert registry.load("method", "particle_vls") is ParticleVLS
    assert ParticleVLS.default_bipartition == {"rule": "method"}
    X, S, _, _ = synthetic(rng, n=30)
    for bad in ({"votes": "weighted"}, {"loss": "log"}, {"credible": "oof"}, {"alpha": 1.0}):
        (name,) = bad
        with pytest.raises(PmlbenchError, match=rf"^method\.{name} must be "):
            ParticleVLS(**bad).fit(X, S)
    with pytest.raises(PmlbenchError, match=r"method\.k = 40 neighbours .* method\.k <= 29"):
        ParticleMAP(k=40).fit(X, S)


def test_particle_normalize_is_the_papers_step():
    F = np.array([[0.2, 0.3, 0.5], [0.0, 0.0, 1.0]])
    S = np.array([[1, 1, 0], [1, 0, 0]])
    np.testing.assert_allclose(particle_normalize(F, S), [[0.4, 0.6, 0.0], [1.0, 0.0, 0.0]])


def _noisy_subset(loader, n_train=300, n_eval=100):
    data = loader()
    order = np.random.default_rng(0).permutation(data.n_instances)
    train, held = order[:n_train], order[n_train : n_train + n_eval]
    S = uniform_noise(data.Y[train], np.random.default_rng(0), rate=1.0)
    return data.X[train], S, data.X[held]


def _points(grid):
    return list(ParameterGrid(grid))


@pytest.mark.parametrize("loader", [yeast, genbase])  # real-valued dense; binary sparse
def test_map_fit_grid_equals_fits_from_scratch(loader):
    X, S, X_eval = _noisy_subset(loader)
    points = _points(ParticleMAP.default_tuning_grid)
    assert 3 <= len(points) <= 18
    points += [
        {"k": 6, "mlknn_k": 12, "threshold": 0.6},  # graphs sliced from the widest search
        {"include_self": True, "k": 8, "threshold": 0.7},
        {"credible": "out_of_fold", "threshold": 0.9},
        {"credible": "out_of_fold", "threshold": 0.9, "oof_fallback": "authors"},
    ]
    estimator = ParticleMAP(random_state=3)
    assert check_fit_grid(estimator, X, S, points, X_eval=X_eval, atol=0) == 0.0
    for index, fitted in estimator.fit_grid(X, S, points):
        alone = ParticleMAP(random_state=3).set_params(**points[index]).fit(X, S)
        assert np.array_equal(fitted.credible_labels_, alone.credible_labels_)
        assert np.array_equal(fitted.disambiguation_scores_, alone.disambiguation_scores_)
        assert np.array_equal(fitted.predict(X_eval), alone.predict(X_eval))


def _same_models(a: clr.LinearModels, b: clr.LinearModels) -> bool:
    return (
        np.array_equal(a.first, b.first)
        and np.array_equal(a.second, b.second)
        and np.array_equal(a.coef.indptr, b.coef.indptr)
        and np.array_equal(a.coef.indices, b.coef.indices)
        and np.array_equal(a.coef.data, b.coef.data)
        and np.array_equal(a.intercept, b.intercept)
        and np.array_equal(a.accuracy, b.accuracy)
        and a.n_not_converged == b.n_not_converged
    )


# grid points beyond the declared grid: another C, loss and cap (own SVMs, shared problems
# only among themselves), graphs sliced from the widest search, out of fold, a repeated
# point
VLS_EXTRA_POINTS = [
    {"threshold": 0.7, "C": 0.5},
    {"threshold": 0.3, "C": 0.5, "votes": "accuracy"},
    {"threshold": 0.5, "loss": "hinge"},
    {"threshold": 0.9, "svm_max_iter": 3},
    {"threshold": 0.6, "svm_max_iter": 3},
    {"threshold": 0.7, "k": 6},
    {"threshold": 0.7, "include_self": True, "k": 8},
    {"threshold": 0.7, "credible": "out_of_fold"},
    {"threshold": 0.9, "credible": "out_of_fold"},
    {"threshold": 0.7, "votes": "unweighted"},
]


@pytest.mark.parametrize("loader", [yeast, genbase])  # real-valued dense; binary sparse
def test_vls_fit_grid_equals_fits_from_scratch(loader):
    X, S, X_eval = _noisy_subset(loader, n_train=200)
    declared = _points(ParticleVLS.default_tuning_grid)
    assert 3 <= len(declared) <= 8
    estimator = ParticleVLS(random_state=5)
    assert check_fit_grid(estimator, X, S, declared, X_eval=X_eval, atol=0) == 0.0
    # every point, the declared and the others, against a fit from scratch: the models bit
    # for bit, hence the scores check_fit_grid compares
    points = declared + VLS_EXTRA_POINTS
    timing = {"stage1_seconds", "stage2_seconds", "fit_seconds"}
    for index, fitted in estimator.fit_grid(X, S, points):
        alone = ParticleVLS(random_state=5).set_params(**points[index]).fit(X, S)
        assert np.array_equal(fitted.decision_function(X_eval), alone.decision_function(X_eval))
        assert _same_models(fitted.models_, alone.models_), points[index]
        assert np.array_equal(fitted.predict(X_eval), alone.predict(X_eval))
        assert np.array_equal(fitted.credible_labels_, alone.credible_labels_)
        assert np.array_equal(fitted.disambiguation_scores_, alone.disambiguation_scores_)
        diagnostics = {k: v for k, v in fitted.diagnostics_.items() if k not in timing}
        assert diagnostics == {k: v for k, v in alone.diagnostics_.items() if k not in timing}


def _distinct_problems(S: np.ndarray, credible_sets) -> tuple[int, int]:
    """Problems trained over these credible-label matrices, in all and distinct (the paper's
    definition, written out: pair (j, k) and (j, V) with data on both sides)."""
    N = S == 0
    trained, distinct = 0, set()
    for C in credible_sets:
        C = C == 1
        for j in range(S.shape[1]):
            sides = [(k, C[:, j] & N[:, k], C[:, k] & N[:, j]) for k in range(j + 1, S.shape[1])]
            for k, pos, neg in [*sides, (-1, C[:, j], N[:, j])]:
                if pos.any() and neg.any():
                    trained += 1
                    distinct.add((j, k, pos.tobytes(), neg.tobytes()))
    return trained, len(distinct)


def test_vls_fit_grid_computes_the_shared_parts_once(monkeypatch):
    X, S, _ = _noisy_subset(genbase, n_train=250)
    grid = ParticleVLS.default_tuning_grid
    F, _ = label_confidence(X, S, Stage1Params())
    trained, distinct = _distinct_problems(S, [(F >= t) & (S == 1) for t in grid["threshold"]])
    # genbase's rare labels keep some problems' sides across thresholds: fewer to train
    assert distinct < trained
    calls: dict[str, int] = {}

    def counting(owner, name: str):
        function = getattr(owner, name)

        def wrapper(*args, **kwargs):
            calls[name] = calls.get(name, 0) + 1
            return function(*args, **kwargs)

        monkeypatch.setattr(owner, name, wrapper)

    for owner, name in [
        (credible, "shared_knn_graph"),
        (credible, "shared_nnls_weights"),
        (credible, "propagate"),
        (vls, "fit_clr"),
        (clr, "_train_problem"),
    ]:
        counting(owner, name)
    points = _points(grid)
    models = dict(ParticleVLS(random_state=0).fit_grid(X, S, points))
    assert sorted(models) == list(range(len(points)))
    assert calls == {
        "shared_knn_graph": 1,
        "shared_nnls_weights": 1,
        "propagate": 1,
        "fit_clr": len(grid["threshold"]),  # the vote rules share every SVM
        "_train_problem": distinct,
    }
    assert (
        sum(m.models_.first.size for i, m in models.items() if points[i]["votes"] == "accuracy")
        == trained
    )


def test_shared_problems_are_taken_only_when_their_sides_match(rng):
    X, S, _, _ = synthetic(rng, n=80, q=6)
    F, _ = label_confidence(X, S, Stage1Params())
    C = ((F >= 0.5) & (S == 1)).astype(np.uint8)
    plain = clr.fit_clr(X, C, S, seed=1)
    shared = clr.SharedProblems(keep=set(clr.problem_keys(C, S)))
    assert _same_models(clr.fit_clr(X, C, S, seed=1, shared=shared), plain)
    assert len(shared.trained) == plain.first.size  # every problem kept
    assert _same_models(clr.fit_clr(X, C, S, seed=1, shared=shared), plain)  # all taken
    # a stored model under a problem's key but with other sides (a digest collision) is not
    # taken: the problem is trained again
    for key, (_, support, weights, *rest) in list(shared.trained.items()):
        shared.trained[key] = (b"other sides", support, weights + 1.0, *rest)
    assert _same_models(clr.fit_clr(X, C, S, seed=1, shared=shared), plain)


def test_fit_grid_shares_stage_one_and_the_svms(monkeypatch):
    X, S, _ = _noisy_subset(genbase, n_train=200)
    counts = {"graph": 0, "nnls": 0, "propagate": 0, "svms": 0}

    def counting(name, function):
        def wrapper(*args, **kwargs):
            counts[name] += 1
            return function(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(credible, "shared_knn_graph", counting("graph", credible.shared_knn_graph))
    monkeypatch.setattr(
        credible, "shared_nnls_weights", counting("nnls", credible.shared_nnls_weights)
    )
    monkeypatch.setattr(credible, "propagate", counting("propagate", credible.propagate))
    monkeypatch.setattr(vls, "fit_clr", counting("svms", vls.fit_clr))
    points = _points({"alpha": [0.8, 0.95], "threshold": [0.5, 0.7, 0.9], "mlknn_k": [5, 10]})
    assert len(list(ParticleMAP().fit_grid(X, S, points))) == 12
    # one graph at k = 10 for both stages, one NNLS, one propagation per alpha
    assert counts == {"graph": 1, "nnls": 1, "propagate": 2, "svms": 0}
    counts.update(graph=0, nnls=0, propagate=0)
    grid = ParticleVLS.default_tuning_grid
    points = _points(grid)
    assert len(list(ParticleVLS(random_state=0).fit_grid(X, S, points))) == len(points)
    # one set of SVMs per threshold
    assert counts == {"graph": 1, "nnls": 1, "propagate": 1, "svms": len(grid["threshold"])}


@pytest.mark.parametrize("cls", [ParticleMAP, ParticleVLS])
def test_disambiguation_scores_are_the_graded_confidences(cls):
    X, S, _ = _noisy_subset(genbase, n_train=200)
    for threshold in (0.5, 0.9):
        est = cls(threshold=threshold, random_state=0).fit(X, S)
        scores = est.disambiguation_scores_
        graded = scores[S == 1]
        assert np.all((graded >= 0) & (graded <= 1))
        assert np.mean((graded > 0) & (graded < 1)) > 0.1  # not 0/1 indicators
        thresholded = ((scores >= threshold) & (S == 1)).astype(np.uint8)
        assert np.array_equal(thresholded, est.credible_labels_)
        expected, _ = label_confidence(X, S, Stage1Params(threshold=threshold))
        assert np.array_equal(scores, expected)  # Eq. 5, the same for both learners


def test_out_of_fold_scores_threshold_to_the_credible_labels_but_for_fallbacks(rng):
    X, S, _, _ = synthetic(rng, n=80)
    est = ParticleMAP(credible="out_of_fold", threshold=0.95, random_state=1).fit(X, S)
    scores, credible = est.disambiguation_scores_, est.credible_labels_
    thresholded = (scores >= 0.95) & (S == 1)
    fallback = ~thresholded.any(axis=1) & (S.sum(axis=1) > 0)
    assert 0 < fallback.sum() == est.diagnostics_["n_empty_fallback"]
    assert np.array_equal(thresholded[~fallback], credible[~fallback] == 1)
    best = np.argmax(np.where(S[fallback] == 1, scores[fallback], -np.inf), axis=1)
    assert np.all(credible[fallback].sum(axis=1) == 1)
    assert np.all(credible[np.flatnonzero(fallback), best] == 1)


def test_vls_votes_follow_set_params_after_fit():
    X, S, X_test = _noisy_subset(yeast, n_train=200)
    est = ParticleVLS(random_state=0).fit(X, S)
    unweighted = est.decision_function(X_test)
    weighted = est.set_params(votes="accuracy").decision_function(X_test)
    fresh = ParticleVLS(votes="accuracy", random_state=0).fit(X, S).decision_function(X_test)
    assert np.array_equal(weighted, fresh) and not np.array_equal(weighted, unweighted)
