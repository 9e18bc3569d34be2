"""Metrics: the spec's three regression examples, scikit-learn agreement, and a plain reference."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn import metrics as skm

from pmlbench.errors import PmlbenchError
from pmlbench.metrics import builtin as m
from tests.reference import matlab_ranking_metrics


def test_spec_example_degenerate_rows():
    Y = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 0], [1, 1, 1]])
    S = np.array([[0.2, 0.5, 0.1], [0.9, 0.8, 0.1], [0.3, 0.2, 0.1], [0.5, 0.4, 0.3]])
    assert m.ranking_loss(Y, None, S) == pytest.approx(0.5)
    assert m.ranking_loss(Y, None, S, convention="sklearn") == pytest.approx(0.25)
    assert m.average_precision(Y, None, S) == pytest.approx(0.5)
    assert m.average_precision(Y, None, S, convention="sklearn") == pytest.approx(0.75)


def test_spec_example_ties():
    Y = np.array([[0, 0, 0, 1]])
    S = np.full((1, 4), 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert m.average_precision(Y, None, S) == pytest.approx(1.0)
        assert m.average_precision(Y, None, S, convention="sklearn") == pytest.approx(0.25)
        assert m.one_error(Y, None, S) == 0.0  # a relevant label is tied for the top


def test_spec_example_macro_f1_zero_division():
    Yt = np.array([[1, 0, 0], [0, 1, 0], [1, 1, 0]])
    Yp = np.array([[1, 0, 0], [1, 1, 0], [0, 1, 0]])
    assert m.macro_f1(Yt, Yp, None) == pytest.approx(0.5)
    assert m.macro_f1(Yt, Yp, None, zero_division=1) == pytest.approx(5 / 6)
    assert m.macro_f1(Yt, Yp, None, zero_division="exclude") == pytest.approx(0.75)
    with pytest.raises(PmlbenchError, match="zero_division"):
        m.macro_f1(Yt, Yp, None, zero_division=2)


def random_problem(rng, n=200, q=12, ties=False):
    Y = (rng.random((n, q)) < 0.25).astype(int)
    S = rng.random((n, q))
    if ties:
        S = np.round(S * 4) / 4
    return Y, S


@pytest.mark.parametrize("ties", [False, True])
def test_zhang_ranking_metrics_equal_matlab_loops(rng, ties):
    Y, S = random_problem(rng, n=60, q=7, ties=ties)
    Y[0] = 0
    Y[1] = 1
    expected = matlab_ranking_metrics(Y, S)
    for name, value in expected.items():
        assert getattr(m, name)(Y, None, S) == pytest.approx(value), name


def test_conventions_coincide_without_ties_or_degenerate_rows(rng):
    Y, S = random_problem(rng)
    Y[Y.sum(axis=1) == 0, 0] = 1
    Y[Y.sum(axis=1) == Y.shape[1], 0] = 0
    for metric in (m.one_error, m.ranking_loss, m.average_precision, m.coverage):
        assert metric(Y, None, S) == pytest.approx(metric(Y, None, S, convention="sklearn"))
    assert m.ranking_loss(Y, None, S) == pytest.approx(skm.label_ranking_loss(Y, S))
    assert m.average_precision(Y, None, S) == pytest.approx(
        skm.label_ranking_average_precision_score(Y, S)
    )
    assert m.coverage(Y, None, S) == pytest.approx(skm.coverage_error(Y, S) - 1)


def test_bipartition_metrics_equal_sklearn(rng):
    Y, _ = random_problem(rng)
    P = (rng.random(Y.shape) < 0.3).astype(int)
    assert m.hamming_loss(Y, P, None) == pytest.approx(skm.hamming_loss(Y, P))
    assert m.subset_accuracy(Y, P, None) == pytest.approx(skm.accuracy_score(Y, P))
    assert m.micro_f1(Y, P, None) == pytest.approx(skm.f1_score(Y, P, average="micro"))
    assert m.macro_f1(Y, P, None) == pytest.approx(
        skm.f1_score(Y, P, average="macro", zero_division=0)
    )
    Y[:, 3] = 0
    P[:, 3] = 0
    assert m.macro_f1(Y, P, None, zero_division=1) == pytest.approx(
        skm.f1_score(Y, P, average="macro", zero_division=1)
    )


def test_ranking_metric_warns_on_two_valued_scores():
    Y = np.array([[1, 0, 1], [0, 1, 0]])
    with pytest.warns(UserWarning, match="two distinct values"):
        m.average_precision(Y, None, Y.astype(float))


def test_metric_directions_and_needs():
    assert m.average_precision.higher_is_better and m.average_precision.needs == "scores"
    assert not m.hamming_loss.higher_is_better and m.hamming_loss.needs == "bipartition"
    assert m.one_error.arrow == "↓"


def test_a_metric_that_changes_its_inputs_in_place_fails_naming_itself_and_changes_nothing():
    """A metric plugin editing the labels or scores in place would corrupt every metric
    computed after it (average precision NaN, ranking loss 1.0): it gets read-only views."""
    from pmlbench.errors import PluginError
    from pmlbench.metrics.base import Metric

    def zero_labels(Y_true, Y_pred, scores):
        Y_true[:] = 0
        return 0.0

    def negate_scores(Y_true, Y_pred, scores):
        np.negative(scores, out=scores)
        return 0.0

    rng = np.random.default_rng(0)
    Y = (rng.random((20, 4)) < 0.4).astype(np.uint8)
    Y[:, 0] = 1
    S = rng.random((20, 4))
    before = m.average_precision(Y, None, S)
    for func in (zero_labels, negate_scores):
        metric = Metric(func.__name__, func, True, "scores")
        with pytest.raises(PluginError, match=f"metric '{func.__name__}' tried to change its"):
            metric(Y, None, S)
    assert m.average_precision(Y, None, S) == before
    assert Y.flags.writeable and S.flags.writeable  # the owner's arrays stay writable
