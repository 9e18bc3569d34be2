"""LIFT: the cluster-count rule, the degenerate-label fallbacks, the per-label pipeline
against a direct scikit-learn reference (a Platt SVC on distances to the stored centres), and
the primal Newton solver (``solver="newton"``) against libsvm and general-purpose minimisers."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp
from sklearn.calibration import _sigmoid_calibration
from sklearn.metrics import average_precision_score
from sklearn.metrics.pairwise import euclidean_distances
from sklearn.svm import SVC

from pmlbench.datasets.bundled import emotions
from pmlbench.errors import NotApplicable, PmlbenchError
from pmlbench.methods import lift as lift_module
from pmlbench.methods.lift import (
    LIFT,
    PlattLinearSVM,
    cluster_count,
    hinge_svm_newton,
    kmeans_centres,
    libsvm_permutation,
    platt_newton,
    sigmoid_train,
    smoothed_svm,
)
from pmlbench.noise.uniform import uniform_noise
from pmlbench.testing import check_fit_grid

SOLVERS = ["libsvm", "newton"]


def blobs(rng, n=120, d=6):
    """Two labels driven by the sign of a feature, one rare label, features in clusters."""
    X = rng.normal(size=(n, d))
    Y = np.zeros((n, 4), dtype=np.uint8)
    Y[:, 0] = X[:, 0] > 0
    Y[:, 1] = X[:, 1] > 0.5
    Y[:3, 2] = 1  # 3 positives: m = min(ceil(0.3), ceil(11.7)) = 1
    Y[7, 3] = 1  # a single positive: its centre is the instance itself
    return X, Y


@pytest.mark.parametrize(
    "n_pos, n_neg, ratio, expected",
    [
        (10, 90, 0.1, 1),
        (25, 75, 0.1, 3),
        (3, 97, 0.1, 1),
        (1, 99, 0.1, 1),
        (0, 100, 0.1, 0),
        (100, 0, 0.1, 0),
        (50, 50, 0.1, 5),
        (11, 89, 0.1, 2),
        (90, 10, 0.2, 2),
        (7, 93, 0.5, 4),
    ],
)
def test_cluster_count_follows_ratio_rule(n_pos, n_neg, ratio, expected):
    assert cluster_count(n_pos, n_neg, ratio) == expected


def test_centre_counts_per_label(rng):
    X, Y = blobs(rng)
    model = LIFT(n_jobs=1, random_state=0).fit(X, Y)
    for j, label_model in enumerate(model.models_):
        m = cluster_count(int(Y[:, j].sum()), int((1 - Y[:, j]).sum()), 0.1)
        assert label_model.n_positive_centres == m
        assert label_model.centres.shape == (2 * m, X.shape[1])
    # a lone positive is its own (positive) centre
    np.testing.assert_array_equal(model.models_[3].centres[0], X[7])


def test_scores_match_platt_svm_on_distance_features(rng):
    X, Y = blobs(rng)
    X_test = rng.normal(size=(40, X.shape[1]))
    model = LIFT(solver="libsvm", n_jobs=1, random_state=3).fit(X, Y)
    scores = model.decision_function(X_test)
    for j, label_model in enumerate(model.models_):
        svm_seed = label_model.svm.random_state
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            reference = SVC(kernel="linear", C=1.0, probability=True, random_state=svm_seed)
            reference.fit(euclidean_distances(X, label_model.centres), Y[:, j])
            expected = reference.predict_proba(euclidean_distances(X_test, label_model.centres))
        np.testing.assert_allclose(scores[:, j], expected[:, 1], atol=1e-10)
    np.testing.assert_array_equal(model.predict(X_test), (scores > 0.5).astype(np.uint8))


@pytest.mark.parametrize("solver", SOLVERS)
def test_learns_feature_driven_labels(rng, solver):
    X, Y = blobs(rng, n=200)
    X_test = rng.normal(size=(200, X.shape[1]))
    predicted = LIFT(solver=solver, n_jobs=1, random_state=0).fit(X, Y).predict(X_test)
    assert np.mean(predicted[:, 0] == (X_test[:, 0] > 0)) > 0.9
    assert np.mean(predicted[:, 1] == (X_test[:, 1] > 0.5)) > 0.85


@pytest.mark.parametrize("solver", SOLVERS)
def test_single_class_labels_get_constant_predictions(rng, solver):
    X, Y = blobs(rng, n=30)
    Y[:, 2] = 0  # never a candidate
    Y[:, 3] = 1  # always a candidate
    model = LIFT(solver=solver, n_jobs=1, random_state=0).fit(X, Y)
    for j, constant in ((2, 0), (3, 1)):
        label_model = model.models_[j]
        assert label_model.constant == constant and label_model.n_positive_centres == 0
        # fallback centres: k-means of all data with min(50, n) clusters (here n = 30)
        assert label_model.centres.shape == (30, X.shape[1])
    scores = model.decision_function(rng.normal(size=(5, X.shape[1])))
    np.testing.assert_array_equal(scores[:, 2], 0.0)
    np.testing.assert_array_equal(scores[:, 3], 1.0)
    assert model.diagnostics_["n_constant_labels"] == 2


@pytest.mark.parametrize("solver", SOLVERS)
def test_seeded_parallel_sparse_and_dense_agree(rng, solver):
    X, Y = blobs(rng, n=80)
    X = np.abs(X) * (rng.random(X.shape) < 0.5)  # sparse-looking non-negative features
    X_test = rng.random((20, X.shape[1]))
    dense = LIFT(solver=solver, n_jobs=1, random_state=7).fit(X, Y).decision_function(X_test)
    again = LIFT(solver=solver, n_jobs=2, random_state=7).fit(sp.csr_matrix(X), Y)
    np.testing.assert_allclose(again.decision_function(sp.csr_matrix(X_test)), dense, atol=1e-8)
    other_seed = LIFT(solver=solver, n_jobs=1, random_state=8).fit(X, Y).decision_function(X_test)
    assert not np.allclose(other_seed, dense)


@pytest.mark.parametrize(
    "params",
    [
        {"ratio": 0},
        {"ratio": 1.5},
        {"C": -1},
        {"solver": "liblinear"},
        {"tol": 0},
        {"n_jobs": 0},
        {"random_state": 0.5},
    ],
)
def test_bad_parameters_are_reported(rng, params):
    X, Y = blobs(rng, n=20)
    (name,) = params
    with pytest.raises(PmlbenchError, match=rf"^method\.{name} must be "):
        LIFT(**{"n_jobs": 1, **params}).fit(X, Y)


def test_wrong_feature_count_at_test_time(rng):
    X, Y = blobs(rng, n=40)
    model = LIFT(n_jobs=1, random_state=0).fit(X, Y)
    with pytest.raises(PmlbenchError, match="features"):
        model.decision_function(X[:, :3])


def hinge_objective(v: np.ndarray, A: np.ndarray, s: np.ndarray, C: float = 1.0) -> float:
    """½‖w‖² + C Σ max(0, 1 − s_i (w·a_i + b)), the bias (last entry) not penalised."""
    return 0.5 * float(v[:-1] @ v[:-1]) + C * float(np.maximum(0, 1 - s * (A @ v)).sum())


def smoothed_objective(v: np.ndarray, A: np.ndarray, s: np.ndarray, h: float, C: float = 1.0):
    z = 1 - s * (A @ v)
    loss = np.where(z <= 0, 0.0, np.where(z < h, z * z / (2 * h), z - h / 2))
    return 0.5 * float(v[:-1] @ v[:-1]) + C * float(loss.sum())


def svm_problem(rng, n=300, d=5, shift=0.0):
    X = rng.normal(size=(n, d)) + 3.0  # a large common part, as distance features have
    y = (X[:, 0] - X[:, 1] + 0.8 * rng.normal(size=n) > shift).astype(int)
    return X, y


@pytest.mark.parametrize("C", [0.1, 1.0, 10.0])
def test_newton_svm_reaches_the_hinge_optimum(rng, C):
    X, y = svm_problem(rng)
    s = np.where(y == 1, 1.0, -1.0)
    A = np.hstack([X - X.mean(axis=0), np.ones((len(y), 1))])
    v, steps = hinge_svm_newton(A, s, C, 1e-6)
    assert 0 < steps < 1000
    reference = SVC(kernel="linear", C=C, tol=1e-8).fit(A[:, :-1], y)
    v_ref = np.append(reference.coef_.ravel(), reference.intercept_)
    # the smoothed optimum is within C h/2 per instance of the hinge optimum
    assert hinge_objective(v, A, s, C) <= hinge_objective(v_ref, A, s, C) + 1e-6 * C * len(y)
    np.testing.assert_allclose(v[:-1], v_ref[:-1], atol=1e-3 * np.linalg.norm(v_ref))


def test_newton_svm_is_the_minimiser_of_the_smoothed_hinge(rng):
    X, y = svm_problem(rng, n=200, d=4, shift=2.0)  # imbalanced: few positives
    s = np.where(y == 1, 1.0, -1.0)
    A = np.hstack([X - X.mean(axis=0), np.ones((len(y), 1))])
    h = 1e-2
    v, _ = hinge_svm_newton(A, s, 1.0, h)
    reference = scipy.optimize.minimize(
        smoothed_objective,
        np.zeros(A.shape[1]),
        args=(A, s, h),
        method="Powell",
        options={"xtol": 1e-10, "ftol": 1e-14, "maxiter": 100000},
    )
    assert smoothed_objective(v, A, s, h) <= reference.fun + 1e-9
    gradient = scipy.optimize.approx_fprime(v, smoothed_objective, 1e-7, A, s, h)
    assert np.abs(gradient).max() < 1e-4


@pytest.mark.parametrize("shift", [0.0, 2.0])
def test_warm_starts_and_continuation_reach_the_same_minimiser(rng, shift):
    # the smoothed objective's minimiser does not depend on where Newton's method starts
    X, y = svm_problem(rng, n=400, d=6, shift=shift)
    s = np.where(y == 1, 1.0, -1.0)
    A = np.hstack([X - X.mean(axis=0), np.ones((len(y), 1))])
    from_zero, _ = hinge_svm_newton(A, s, 1.0, 1e-3)
    continued, _ = smoothed_svm(A, s, 1.0, 1e-3)
    far_start = rng.normal(scale=5.0, size=A.shape[1])
    from_far, _ = smoothed_svm(A, s, 1.0, 1e-3, start=far_start)
    scale = np.abs(from_zero).max()
    np.testing.assert_allclose(continued, from_zero, rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(from_far, from_zero, rtol=0, atol=1e-9 * scale)


def test_exact_line_search_finds_the_minimum_along_the_step(rng):
    # against a bounded scalar minimiser of the same one-dimensional objective
    from pmlbench.methods.lift import _exact_line_search

    h, C = 1e-2, 1.0
    for _ in range(20):
        z = rng.normal(size=200)
        dz = rng.normal(size=200)
        dz[:20] = 0.0  # instances the step does not move
        w, p = rng.normal(size=5), rng.normal(size=5)

        def along(t, z=z, dz=dz, w=w, p=p):
            u = z - t * dz
            loss = np.where(u <= 0, 0.0, np.where(u < h, u * u / (2 * h), u - h / 2))
            return 0.5 * float((w + t * p) @ (w + t * p)) + C * float(loss.sum())

        if float(w @ p) - C * float(np.clip(z / h, 0, 1) @ dz) >= 0:
            continue  # p is not a descent direction at t = 0: the search returns 0
        t = _exact_line_search(float(w @ p), float(p @ p), z, dz, C, h)
        reference = scipy.optimize.minimize_scalar(
            along, bounds=(0.0, 100.0), method="bounded", options={"xatol": 1e-12}
        )
        assert along(t) <= reference.fun + 1e-9


def test_degenerate_problem_keeps_the_optimal_trivial_solution(rng):
    # positives indistinguishable from negatives: the optimum predicts the majority class
    A = np.hstack([rng.normal(size=(400, 3)), np.ones((400, 1))])
    s = np.where(rng.random(400) < 0.05, 1.0, -1.0)
    v, _ = hinge_svm_newton(A, s, 1.0, 1e-3)
    n_positive = int((s > 0).sum())
    assert hinge_objective(v, A, s) <= 2 * n_positive + 1e-3 * 400
    assert v[-1] == pytest.approx(-1.0, abs=1e-2)


def test_sigmoid_train_matches_platt_calibration(rng):
    f = rng.normal(size=500)
    y = (f + rng.normal(size=500) > 0.5).astype(int)
    A, B = sigmoid_train(f, y)
    a_ref, b_ref = _sigmoid_calibration(f, y)  # sklearn: the same Platt targets, L-BFGS
    assert A == pytest.approx(a_ref, abs=1e-4) and B == pytest.approx(b_ref, abs=1e-4)
    assert A < 0  # larger decision values, larger probability of the positive class


def test_platt_newton_scales_like_libsvm(rng):
    X, y = svm_problem(rng, n=400)
    X_test, y_test = svm_problem(np.random.default_rng(1), n=400)
    ours = platt_newton(X, y, 1.0, 1e-3, seed=0)
    assert isinstance(ours, PlattLinearSVM)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        libsvm = SVC(kernel="linear", C=1.0, probability=True, random_state=0).fit(X, y)
        expected = libsvm.predict_proba(X_test)[:, 1]
    probability = ours.positive_probability(X_test)
    # the same SVM and the same kind of calibration; the 5 folds are drawn differently
    assert np.abs(probability - expected).max() < 0.05
    assert average_precision_score(y_test, probability) == pytest.approx(
        average_precision_score(y_test, expected), abs=0.01
    )


def test_solvers_agree_on_a_multi_label_problem(rng):
    X, Y = blobs(rng, n=300)
    X_test = rng.normal(size=(300, X.shape[1]))
    Y_test = np.column_stack(
        [X_test[:, 0] > 0, X_test[:, 1] > 0.5, np.zeros(300, bool), np.zeros(300, bool)]
    )
    scores = {
        solver: LIFT(solver=solver, n_jobs=1, random_state=0).fit(X, Y).decision_function(X_test)
        for solver in SOLVERS
    }
    for j in (0, 1):
        assert np.corrcoef(scores["libsvm"][:, j], scores["newton"][:, j])[0, 1] > 0.99
        assert average_precision_score(Y_test[:, j], scores["newton"][:, j]) == pytest.approx(
            average_precision_score(Y_test[:, j], scores["libsvm"][:, j]), abs=0.01
        )


@pytest.mark.parametrize("random_state", [0, 5, 123456])
def test_platt_folds_are_libsvms(rng, random_state):
    # libsvm's own SVMs on the folds of libsvm_permutation give SVC's Platt parameters
    X, y = svm_problem(rng, n=137, d=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        svc = SVC(kernel="linear", C=1.0, probability=True, random_state=random_state)
        svc.fit(X, y)
        prob_a, prob_b = svc.probA_[0], svc.probB_[0]
    grouped = np.concatenate([np.flatnonzero(y == 0), np.flatnonzero(y == 1)])
    permutation = grouped[libsvm_permutation(len(y), random_state)]
    n, decision = len(y), np.zeros(len(y))
    for fold in range(5):
        held = permutation[fold * n // 5 : (fold + 1) * n // 5]
        rest = np.setdiff1d(permutation, held)
        decision[held] = (
            SVC(kernel="linear", C=1.0).fit(X[rest], y[rest]).decision_function(X[held])
        )
    A, B = sigmoid_train(decision, y)
    # libsvm orients its decision values towards class 0: same A, opposite B
    assert A == pytest.approx(prob_a, rel=1e-2)
    assert B == pytest.approx(-prob_b, rel=1e-2, abs=1e-3)


def test_libsvm_path_refuses_large_training_sets_before_any_work(rng):
    X, Y = blobs(rng, n=60)
    with pytest.raises(NotApplicable) as refusal:
        LIFT(solver="libsvm", max_libsvm_instances=59).fit(X, None)  # Y is not looked at
    assert str(refusal.value) == (
        "lift with method.solver=libsvm trains 6 SVMs per label by SMO, whose cost grows with "
        "the square of the training instances: 60 instances exceed "
        "method.max_libsvm_instances=59; use method.solver=newton (the same SVM solved in the "
        "primal) or raise the cap to run anyway"
    )
    assert LIFT().max_libsvm_instances == 5000
    for params in (
        {"solver": "libsvm", "max_libsvm_instances": None},
        {"max_libsvm_instances": 59},  # the default solver, newton, has no such cap
    ):
        LIFT(n_jobs=1, random_state=0, **params).fit(X, Y)
    with pytest.raises(PmlbenchError, match=r"^method\.max_libsvm_instances must be "):
        LIFT(max_libsvm_instances=0).fit(X, Y)


def test_either_solver_refuses_too_many_label_instances_before_any_work(rng):
    X, Y = blobs(rng, n=60)
    q = Y.shape[1]
    for solver in SOLVERS:
        with pytest.raises(NotApplicable) as refusal:
            LIFT(solver=solver, max_label_instances=60 * q - 1).fit(X, Y)
        assert str(refusal.value) == (
            f"lift fits a clustering and an SVM per label: {q} labels x 60 training instances"
            f" = {60 * q} exceed method.max_label_instances={60 * q - 1}; raise it (or set it"
            " to null) to run anyway"
        )
    # the cap applies first, so it never points to solver=newton when that would refuse too
    with pytest.raises(NotApplicable, match="max_label_instances"):
        LIFT(max_libsvm_instances=59, max_label_instances=60 * q - 1).fit(X, Y)
    assert LIFT().max_label_instances == 2_000_000
    # delicious (8,052 training instances x 983 labels) is refused, corel16k001 is not
    assert 8052 * 983 > LIFT().max_label_instances > 6883 * 153
    LIFT(n_jobs=1, random_state=0, max_label_instances=60 * q).fit(X, Y)
    LIFT(n_jobs=1, random_state=0, max_label_instances=None).fit(X, Y)
    with pytest.raises(PmlbenchError, match=r"^method\.max_label_instances must be "):
        LIFT(max_label_instances=0).fit(X, Y)


# ---------------------------------------------------------------------------------------
# tuning: the declared grid and fit_grid


def noisy_emotions(n: int = 150) -> tuple[np.ndarray, np.ndarray]:
    """n rows of emotions with uniform candidate noise at rate 1.0: (X, candidates)."""
    data = emotions()
    rows = np.sort(np.random.default_rng(0).choice(data.X.shape[0], n, replace=False))
    return data.X[rows], uniform_noise(data.Y[rows], np.random.default_rng(1), rate=1.0)


def test_default_grid_is_the_svm_cost_around_libsvms_default():
    grid = LIFT.default_tuning_grid
    assert set(grid) == {"C"} and LIFT().C in grid["C"]
    assert 3 <= len(grid["C"]) <= 6
    # widened above 10, where the tuned suite's selections lay (docs/methods/lift.md)
    assert max(grid["C"]) > 10


def test_fit_grid_equals_fits_from_scratch():
    X, C = noisy_emotions()
    X_test = emotions().X[:50]
    model = LIFT(n_jobs=1, random_state=4)
    points = [{"C": value} for value in LIFT.default_tuning_grid["C"]]
    assert check_fit_grid(model, X, C, points, X_eval=X_test) == 0.0


@pytest.mark.parametrize("solver", SOLVERS)
def test_fit_grid_groups_points_by_their_clusters(rng, solver):
    """Several ratios and seeds, a rare and a degenerate label: each group is clustered on
    its own and every point equals its fit from scratch (libsvm only here: on emotions its
    SMO takes minutes at C = 10)."""
    X, Y = blobs(rng)
    mixed = [
        {"ratio": ratio, "C": cost, "random_state": seed}
        for ratio in (0.1, 0.3)
        for cost in (0.1, 10.0)
        for seed in (1, 2)
    ]
    model = LIFT(solver=solver, n_jobs=1)
    assert check_fit_grid(model, X, Y, mixed, X_eval=rng.normal(size=(10, 6))) == 0.0


def test_fit_grid_clusters_once_per_ratio(rng, monkeypatch):
    X, Y = blobs(rng)
    calls = []

    def counted(X_side, n_clusters, seed):
        calls.append(n_clusters)
        return kmeans_centres(X_side, n_clusters, seed)

    monkeypatch.setattr(lift_module, "kmeans_centres", counted)
    LIFT(n_jobs=1, random_state=3).fit(X, Y)
    per_fit = len(calls)
    calls.clear()
    points = [{"ratio": ratio, "C": cost} for ratio in (0.1, 0.3) for cost in (0.1, 1.0, 10.0)]
    fitted = dict(LIFT(n_jobs=1, random_state=3).fit_grid(X, Y, points))
    assert sorted(fitted) == list(range(len(points)))
    assert len(calls) == 2 * per_fit  # one clustering per ratio, not per point
    for index, model in fitted.items():
        assert (model.ratio, model.C) == (points[index]["ratio"], points[index]["C"])


def test_max_labels_refuses_before_any_work():
    X = np.zeros((5, 3))
    Y = np.zeros((5, 4), dtype=np.uint8)  # bad labels: never looked at
    with pytest.raises(NotApplicable) as error:
        LIFT(max_labels=3).fit(X, Y)
    message = str(error.value)
    assert "4 labels exceed method.max_labels=3" in message and "\n" not in message
    assert "docs/protocol.md" in message
    # the suite's budget (docs/methods/lift.md, "What C = 100 costs"): languagelog's 75
    # labels run, corel16k001's 153 (63.3 times ML-kNN's time in the suite) do not
    assert 75 <= LIFT().max_labels < 153
    with pytest.raises(PmlbenchError, match=r"^method\.max_labels must be "):
        LIFT(max_labels=0).fit(X, Y)


def test_fit_grid_computes_the_shared_parts_once(monkeypatch):
    """Per label, the clusterings, the distance features and the Platt problem (centred
    features, libsvm's permutation, the folds) are computed once for the whole C grid; only
    the SVMs are trained per grid point."""
    calls: dict[str, int] = {}

    def counting(name: str) -> None:
        function = getattr(lift_module, name)

        def wrapper(*args, **kwargs):
            calls[name] = calls.get(name, 0) + 1
            return function(*args, **kwargs)

        monkeypatch.setattr(lift_module, name, wrapper)

    for name in (
        "kmeans_centres",
        "euclidean_distances",
        "libsvm_permutation",
        "platt_problem",
        "platt_newton_at",
    ):
        counting(name)
    X, Y = noisy_emotions()
    LIFT(n_jobs=1, random_state=4).fit(X, Y)
    per_fit = dict(calls)
    labels = Y.shape[1]
    assert per_fit["platt_problem"] == per_fit["libsvm_permutation"] == labels
    assert per_fit["platt_newton_at"] == labels
    calls.clear()
    grid = [{"C": value} for value in LIFT.default_tuning_grid["C"]]
    fitted = dict(LIFT(n_jobs=1, random_state=4).fit_grid(X, Y, grid))
    assert sorted(fitted) == list(range(len(grid)))
    assert calls == {**per_fit, "platt_newton_at": len(grid) * labels}


def test_platt_problem_is_what_platt_newton_trains_on(rng):
    X, y = svm_problem(rng, n=200)
    problem = lift_module.platt_problem(X, y, seed=3)
    for C in (0.1, 10.0):
        shared = lift_module.platt_newton_at(problem, C, 1e-3)
        alone = platt_newton(X, y, C, 1e-3, seed=3)
        assert shared.coef.tobytes() == alone.coef.tobytes()
        assert (shared.intercept, shared.A, shared.B, shared.n_steps) == (
            alone.intercept,
            alone.A,
            alone.B,
            alone.n_steps,
        )
    # the folds partition the instances, each held-out part once
    held = np.concatenate([fold.held for fold in problem.folds])
    assert sorted(held.tolist()) == list(range(len(y)))


def test_shared_intermediates_change_no_number(rng):
    """The Newton step hands the line search the slopes at t = 0 it computed for the
    gradient, and the solver takes ``A * s`` precomputed: the same numbers, bit for bit."""
    from pmlbench.methods.lift import _exact_line_search, _huber_slope

    h, C = 1e-2, 3.0
    for _ in range(50):
        z = 1.0 - rng.normal(size=300)  # as the solver forms it: never -0.0
        dz = rng.normal(size=300)
        dz[:10] = 0.0
        wv, ww = float(rng.normal()) - 5.0, float(rng.random()) + 0.1
        plain = _exact_line_search(wv, ww, z, dz, C, h)
        given = _exact_line_search(wv, ww, z, dz, C, h, _huber_slope(z, h))
        assert np.float64(plain).tobytes() == np.float64(given).tobytes()
    X, y = svm_problem(rng, n=300, d=5)
    s = np.where(y == 1, 1.0, -1.0)
    A = np.hstack([X - X.mean(axis=0), np.ones((len(y), 1))])
    v, steps = hinge_svm_newton(A, s, 1.0, 1e-3)
    v_signed, steps_signed = hinge_svm_newton(A, s, 1.0, 1e-3, signed=A * s[:, None])
    assert v.tobytes() == v_signed.tobytes() and steps == steps_signed
