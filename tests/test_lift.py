"""LIFT: the cluster-count rule, the degenerate-label fallbacks, and the per-label pipeline
against a direct scikit-learn reference (a Platt SVC on distances to the stored centres)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics.pairwise import euclidean_distances
from sklearn.svm import SVC

from pmlbench.errors import PmlbenchError
from pmlbench.methods.lift import LIFT, cluster_count


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
    model = LIFT(n_jobs=1, random_state=3).fit(X, Y)
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


def test_learns_feature_driven_labels(rng):
    X, Y = blobs(rng, n=200)
    X_test = rng.normal(size=(200, X.shape[1]))
    predicted = LIFT(n_jobs=1, random_state=0).fit(X, Y).predict(X_test)
    assert np.mean(predicted[:, 0] == (X_test[:, 0] > 0)) > 0.9
    assert np.mean(predicted[:, 1] == (X_test[:, 1] > 0.5)) > 0.85


def test_single_class_labels_get_constant_predictions(rng):
    X, Y = blobs(rng, n=30)
    Y[:, 2] = 0  # never a candidate
    Y[:, 3] = 1  # always a candidate
    model = LIFT(n_jobs=1, random_state=0).fit(X, Y)
    for j, constant in ((2, 0), (3, 1)):
        label_model = model.models_[j]
        assert label_model.constant == constant and label_model.n_positive_centres == 0
        # fallback centres: k-means of all data with min(50, n) clusters (here n = 30)
        assert label_model.centres.shape == (30, X.shape[1])
    scores = model.decision_function(rng.normal(size=(5, X.shape[1])))
    np.testing.assert_array_equal(scores[:, 2], 0.0)
    np.testing.assert_array_equal(scores[:, 3], 1.0)
    assert model.diagnostics_["n_constant_labels"] == 2


def test_seeded_parallel_sparse_and_dense_agree(rng):
    X, Y = blobs(rng, n=80)
    X = np.abs(X) * (rng.random(X.shape) < 0.5)  # sparse-looking non-negative features
    X_test = rng.random((20, X.shape[1]))
    dense = LIFT(n_jobs=1, random_state=7).fit(X, Y).decision_function(X_test)
    again = LIFT(n_jobs=2, random_state=7).fit(sp.csr_matrix(X), Y)
    np.testing.assert_allclose(again.decision_function(sp.csr_matrix(X_test)), dense, atol=1e-8)
    other_seed = LIFT(n_jobs=1, random_state=8).fit(X, Y).decision_function(X_test)
    assert not np.allclose(other_seed, dense)


@pytest.mark.parametrize(
    "params", [{"ratio": 0}, {"ratio": 1.5}, {"C": -1}, {"n_jobs": 0}, {"random_state": 0.5}]
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
