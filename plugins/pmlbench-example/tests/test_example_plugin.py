"""Tests of the example plugins: pmlbench's contract checks, then the mathematics of each
plugin against independent references and exact properties."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import scipy.sparse as sp
from pmlbench_example.cooccurrence import cooccurrence_noise, cooccurrence_weights
from pmlbench_example.cwbr import ConfidenceWeightedBR, candidate_confidence
from pmlbench_example.metrics import macro_auc
from pmlbench_example.ridge import ExternalRidge
from pmlbench_example.synthetic import example_synth
from scipy.stats import rankdata
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits

from pmlbench.plugin import PmlbenchError, uniform_noise
from pmlbench.testing import check_method, parametrize_plugin_checks


@pytest.fixture(autouse=True)
def _one_blas_thread():
    """Tiny problems: BLAS threads only add overhead (and oversubscribe a shared machine)."""
    with threadpool_limits(1, user_api="blas"):
        yield


def _labels(n=200, n_labels=6, seed=0):
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, n_labels)) < 0.3).astype(np.uint8)
    Y[np.arange(n), rng.integers(0, n_labels, n)] = 1
    return Y


# --- the contract: every check of pmlbench check-plugin, one test each ----------------------


@parametrize_plugin_checks(
    [
        ("method", ConfidenceWeightedBR),
        ("method", ExternalRidge),
        ("dataset", example_synth, {"n_instances": 60}),
        ("noise", cooccurrence_noise),
        ("metric", macro_auc),
    ]
)
def test_plugin_contract(check):
    check()


def test_contract_checks_take_parameters_and_instances():
    report = check_method(ConfidenceWeightedBR, params={"k": 3, "alpha": 0.8})
    assert report.ok and not report.skipped
    assert "k=3" in report.results[0].detail
    assert check_method(ConfidenceWeightedBR(C=0.5)).ok


@pytest.mark.parametrize("params", [{"k": 3.5}, {"alpha": 1.5}, {"C": 0}])
def test_cwbr_refuses_bad_parameters_in_one_line(params):
    with pytest.raises(PmlbenchError, match=f"method.{next(iter(params))} must be") as error:
        ConfidenceWeightedBR(**params).fit(np.zeros((4, 2)), np.eye(4, 2, dtype=np.uint8))
    assert "\n" not in str(error.value)


# --- noise: cooccurrence -------------------------------------------------------------------


def test_cooccurrence_noise_keeps_truth_and_adds_as_many_labels_as_uniform():
    Y = _labels()
    for rate in (0.5, 1.0, 2.0):
        cand = cooccurrence_noise(Y, np.random.default_rng(1), rate=rate)
        reference = uniform_noise(Y, np.random.default_rng(1), rate=rate)
        assert np.all(cand >= Y)
        np.testing.assert_array_equal(cand.sum(axis=1), reference.sum(axis=1))


def test_cooccurrence_noise_is_reproducible_and_leaves_input_alone():
    Y = _labels()
    before = Y.copy()
    a = cooccurrence_noise(Y, np.random.default_rng(5))
    b = cooccurrence_noise(Y, np.random.default_rng(5))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(Y, before)


def test_cooccurrence_weights_by_hand():
    # labels 0 and 1 always together (2 rows), label 2 alone (1 row), label 3 with 0 once
    Y = np.array([[1, 1, 0, 0], [1, 1, 0, 1], [0, 0, 1, 0]], dtype=np.uint8)
    W = cooccurrence_weights(Y, smoothing=0.0)
    # row 2 has true label 2, which co-occurs with nothing
    np.testing.assert_allclose(W[2], [0, 0, 0, 0])
    # row 0: true {0, 1}; P(3 | 0) = 1/2, P(3 | 1) = 1/2, P(2 | .) = 0
    np.testing.assert_allclose(W[0], [0, 0, 0, 1.0])


def test_cooccurrence_noise_draws_in_proportion_to_weights():
    # label 0 is true everywhere, label 1 in a third of the rows, label 2 in a sixth
    n = 30000
    Y = np.zeros((n, 4), dtype=np.uint8)
    Y[:, 0] = 1
    Y[: n // 3, 1] = 1  # these rows have two true labels, rate 0.5 -> one wrong label
    Y[n // 3 : n // 2, 2] = 1
    rows = np.arange(n // 2, n)  # true set {0}: weights P(1|0) = 1/3, P(2|0) = 1/6, P(3|0) = 0
    # so their one wrong label is label 1 with probability 2/3 and label 2 with 1/3
    cand = cooccurrence_noise(Y, np.random.default_rng(0), rate=1.0, smoothing=0.0)
    picked = cand[rows] - Y[rows]
    share = picked[:, 1:].mean(axis=0)
    np.testing.assert_allclose(share, [2 / 3, 1 / 3, 0.0], atol=0.015)


def test_cooccurrence_noise_falls_back_to_unweighted_labels_when_needed():
    # true {0}; label 0 co-occurs with nothing, so all wrong labels have weight 0 at smoothing 0
    Y = np.array([[1, 0, 0, 0]] * 50, dtype=np.uint8)
    cand = cooccurrence_noise(Y, np.random.default_rng(0), rate=2.0, smoothing=0.0)
    assert np.all(cand.sum(axis=1) == 3)
    assert set(np.flatnonzero(cand[:, 1:].sum(axis=0))) == {0, 1, 2}


# --- metric: macro_auc ---------------------------------------------------------------------


def _auc_by_ranks(y, s):
    """Mann-Whitney U / (n+ n-): an AUC reference independent of scikit-learn."""
    ranks = rankdata(s)
    n_pos, n_neg = y.sum(), len(y) - y.sum()
    return (ranks[y == 1].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def test_macro_auc_matches_rank_formula_and_skips_undefined_labels():
    rng = np.random.default_rng(3)
    Y = (rng.random((40, 5)) < 0.4).astype(np.uint8)
    Y[:, 4] = 1  # single class: no AUC, left out
    scores = np.round(rng.random((40, 5)), 1)  # with ties
    expected = np.mean([_auc_by_ranks(Y[:, j], scores[:, j]) for j in range(4)])
    assert macro_auc(Y, Y, scores) == pytest.approx(expected, abs=1e-12)
    assert macro_auc.higher_is_better is True and macro_auc.needs == "scores"
    assert np.isnan(macro_auc(np.ones((3, 2), np.uint8), np.ones((3, 2)), np.ones((3, 2))))


# --- method: cwbr --------------------------------------------------------------------------


def test_candidate_confidence_by_hand():
    X = np.array([[0.0], [1.0], [10.0], [11.0]])
    S = np.array([[1, 1, 0], [1, 0, 0], [0, 1, 1], [0, 1, 1]], dtype=np.uint8)
    C = candidate_confidence(X, S, k=1, alpha=0.0)  # neighbour agreement only
    # row 0's neighbour is row 1 (candidates {0}): label 0 agreed, label 1 not
    np.testing.assert_allclose(C[0], [1.0, 0.0, 0.0])
    np.testing.assert_allclose(C[1], [1.0, 0.0, 0.0])  # sole candidate
    np.testing.assert_allclose(C[2], [0.0, 1.0, 1.0])
    C = candidate_confidence(X, S, k=1, alpha=1.0)  # co-occurrence only
    # row 0: P(0 | 1) = 1/3 and P(1 | 0) = 1/2; rescaled by the maximum
    np.testing.assert_allclose(C[0], [2 / 3, 1.0, 0.0])
    assert np.all(C[S == 0] == 0)


def test_cwbr_equals_logistic_regression_when_candidates_are_certain():
    # one candidate per instance: every confidence is 1, so CWBR is plain binary relevance
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    labels = np.argmax(X[:, :3], axis=1)
    S = np.eye(3, dtype=np.uint8)[labels]
    model = ConfidenceWeightedBR(C=0.5).fit(X, S)
    for j in range(3):
        reference = LogisticRegression(C=0.5, max_iter=500).fit(X, S[:, j])
        np.testing.assert_allclose(
            model.decision_function(X)[:, j], reference.predict_proba(X)[:, 1], atol=1e-5
        )


def test_cwbr_trusts_true_candidates_more_than_noisy_ones():
    data = example_synth(n_instances=400, seed=1)
    cand = cooccurrence_noise(data.Y, np.random.default_rng(0), rate=1.0)
    conf = candidate_confidence(data.X, cand, k=10, alpha=0.5)
    true_conf = conf[(cand == 1) & (data.Y == 1)].mean()
    noisy_conf = conf[(cand == 1) & (data.Y == 0)].mean()
    assert true_conf > noisy_conf + 0.1


def test_cwbr_accepts_sparse_features():
    data = example_synth(n_instances=50, n_labels=4, avg_labels=1, seed=2)
    dense = ConfidenceWeightedBR(k=5).fit(data.X, data.Y).decision_function(data.X)
    sparse = (
        ConfidenceWeightedBR(k=5)
        .fit(sp.csr_matrix(data.X), data.Y)
        .decision_function(sp.csr_matrix(data.X))
    )
    np.testing.assert_allclose(dense, sparse, atol=1e-4)


# --- dataset: example_synth ----------------------------------------------------------------


def test_example_synth_is_seeded_and_fully_labelled():
    a, b = example_synth(seed=3), example_synth(seed=3)
    np.testing.assert_array_equal(a.X, b.X)
    assert a.X.shape == (300, 20) and a.Y.shape == (300, 8)
    assert a.Y.sum(axis=1).min() >= 1
    assert not np.array_equal(example_synth(seed=4).Y, a.Y)


# --- method: ext_ridge (external program) ---------------------------------------------------


def _ridge_reference(X, Y, X_test, lam):
    X1 = np.hstack([np.ones((len(X), 1)), X])
    penalty = lam * np.eye(X1.shape[1])
    penalty[0, 0] = 0
    W = np.linalg.solve(X1.T @ X1 + penalty, X1.T @ Y)
    return np.hstack([np.ones((len(X_test), 1)), X_test]) @ W


def test_external_ridge_python_program_matches_closed_form():
    data = example_synth(n_instances=60, n_features=5, seed=0)
    X, Y = data.X[:40], data.Y[:40]
    model = ExternalRidge(lam=2.0, program="python").fit(X, Y)
    scores = model.decision_function(data.X[40:])
    np.testing.assert_allclose(scores, _ridge_reference(X, Y, data.X[40:], 2.0), atol=1e-8)
    np.testing.assert_array_equal(model.predict(data.X[40:]), scores >= 0.5)


@pytest.mark.skipif(shutil.which("octave-cli") is None, reason="GNU Octave is not installed")
def test_external_ridge_octave_program_matches_python_program():
    data = example_synth(n_instances=60, n_features=5, seed=0)
    X, Y = data.X[:40], data.Y[:40]
    octave = ExternalRidge(lam=2.0, program="octave").fit(X, Y).decision_function(data.X[40:])
    python = ExternalRidge(lam=2.0, program="python").fit(X, Y).decision_function(data.X[40:])
    np.testing.assert_allclose(octave, python, atol=1e-8)
