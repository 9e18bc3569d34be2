"""Bipartition rules on hand-made scores with hand-computed label sets."""

from __future__ import annotations

import numpy as np
import pytest
from hydra import compose, initialize_config_dir
from sklearn.base import BaseEstimator
from sklearn.model_selection import KFold

from pmlbench.errors import PmlbenchError
from pmlbench.hydra_app.config_nodes import register_config_nodes
from pmlbench.hydra_app.config_tree import config_dir
from pmlbench.methods.mlknn import MLkNN
from pmlbench.protocol.bipartition import (
    RULES,
    Bipartition,
    ThresholdRule,
    make_bipartition,
    out_of_fold_scores,
)


class FixedScores(BaseEstimator):
    """decision_function(X) returns X itself: the 'features' are the scores."""

    def fit(self, X, Y):
        return self

    def decision_function(self, X):
        return np.asarray(X, dtype=float)

    def predict(self, X):
        return (np.asarray(X) > 0.75).astype(np.uint8)


S_TRAIN = np.array([[0.9, 0.6, 0.1], [0.8, 0.3, 0.2], [0.7, 0.4, 0.35]])
Y_TRAIN = np.array([[1, 1, 0], [1, 0, 0], [1, 1, 0]], dtype=np.uint8)
S_TEST = np.array([[0.5, 0.38, 0.36], [0.2, 0.1, 0.05], [0.9, 0.8, 0.7]])


def fitted(rule: str, Y=Y_TRAIN, S=S_TRAIN, **options) -> Bipartition:
    rule = Bipartition(rule=rule, training_scores="train", **options)
    return rule.fit(FixedScores(), S, Y)


def test_method_and_fixed_threshold():
    assert fitted("method").apply(FixedScores(), S_TEST, S_TEST).tolist() == [
        [0, 0, 0],
        [0, 0, 0],
        [1, 1, 0],
    ]
    assert fitted("threshold", threshold=0.37).apply(FixedScores(), S_TEST, S_TEST).tolist() == [
        [1, 1, 0],
        [0, 0, 0],
        [1, 1, 1],
    ]


def test_global_threshold_maximises_micro_f1_on_the_training_split():
    # Only t in (0.35, 0.4] reproduces Y_TRAIN exactly (micro-F1 1); the midpoint is 0.375.
    rule = fitted("global", objective="micro_f1")
    assert rule.fitted["threshold"] == pytest.approx(0.375)
    assert rule.apply(FixedScores(), S_TEST, S_TEST).tolist() == [[1, 1, 0], [0, 0, 0], [1, 1, 1]]
    assert "0.375" in rule.describe() and "micro_f1" in rule.describe()


def test_global_threshold_minimising_hamming_loss():
    Y = np.array([[1, 0, 0], [1, 0, 0], [1, 0, 0]], dtype=np.uint8)
    # errors: t in (0.6, 0.7] makes none (column 0 kept, everything else dropped)
    rule = fitted("global", Y=Y, objective="hamming_loss")
    assert rule.fitted["threshold"] == pytest.approx(0.65)


@pytest.mark.parametrize("objective", ["micro_f1", "hamming_loss"])
def test_per_label_thresholds(objective):
    Y = np.array([[1, 0, 0], [0, 0, 1], [1, 1, 1]], dtype=np.uint8)
    # candidate thresholds are midpoints of a column's distinct scores plus both ends
    # label 0: scores .9 .8 .7, truth 1 0 1; t=.65 (all) F1 .8, t=.75 F1 .5, t=.85 F1 2/3
    # label 1: scores .6 .3 .4, truth 0 0 1; t=.25 F1 .5, t=.35 F1 2/3, t=.5 F1 0
    # label 2: scores .1 .2 .35, truth 0 1 1; t=.15 is perfect
    # Hamming errors: label 0 .65/.85 -> 1 (tie: .65 is closer to 0.5), label 1 .35/.65 -> 1
    # (tie at equal distance from 0.5: the lower), label 2 .15 -> 0
    rule = fitted("per_label", Y=Y, objective=objective)
    np.testing.assert_allclose(rule.fitted["thresholds"], [0.65, 0.35, 0.15])
    assert rule.apply(FixedScores(), S_TEST, S_TEST).tolist() == [[0, 1, 1], [0, 0, 0], [1, 1, 1]]
    assert "3 thresholds" in rule.describe()


def test_top_k_uses_the_candidate_cardinality():
    Y_cand = np.array([[1, 1, 0], [1, 1, 1], [1, 0, 1], [1, 1, 1]], dtype=np.uint8)
    rule = Bipartition(rule="top_k").fit(FixedScores(), np.zeros((4, 3)), Y_cand)
    assert rule.fitted["k"] == 3  # mean 2.5 rounds half up, not to even (2)
    scores = np.array([[0.1, 0.5, 0.3], [0.9, 0.2, 0.2]])
    assert rule.apply(FixedScores(), scores, scores).tolist() == [[1, 1, 1], [1, 1, 1]]
    rule = Bipartition(rule="top_k").fit(FixedScores(), np.zeros((3, 3)), Y_TRAIN)
    assert rule.fitted["k"] == 2  # mean 5/3
    # ties go to the lower label index
    assert rule.apply(FixedScores(), scores, scores).tolist() == [[0, 1, 1], [1, 1, 0]]
    assert "k=2" in rule.describe()


@pytest.mark.parametrize("rule", ["method", "threshold", "global", "per_label", "top_k"])
def test_allow_empty_false_never_leaves_an_empty_row(rule, rng):
    S = rng.random((50, 5)) * 0.4
    Y = (rng.random((50, 5)) < 0.1).astype(np.uint8)
    bip = fitted(rule, Y=Y, S=S, allow_empty=False, threshold=0.99)
    test = rng.random((40, 5)) * 0.6
    Y_pred = bip.apply(FixedScores(), test, test)
    assert (Y_pred.sum(axis=1) >= 1).all()
    empty_before = fitted(rule, Y=Y, S=S, threshold=0.99).apply(FixedScores(), test, test)
    rows = np.flatnonzero(empty_before.sum(axis=1) == 0)
    assert (Y_pred[rows, test[rows].argmax(axis=1)] == 1).all()
    assert (Y_pred[rows].sum(axis=1) == 1).all()


def test_cross_validated_training_scores_match_a_manual_loop(rng):
    X = rng.random((40, 4))
    Y = (rng.random((40, 3)) < 0.4).astype(np.uint8)
    got = out_of_fold_scores(MLkNN(k=3).fit(X, Y), X, Y, 4, random_state=3)
    expected = np.zeros(Y.shape)
    for a, b in KFold(4, shuffle=True, random_state=3).split(X):
        expected[b] = MLkNN(k=3).fit(X[a], Y[a]).decision_function(X[b])
    np.testing.assert_allclose(got, expected)


@pytest.mark.parametrize(
    "config, message",
    [
        ({"rule": "median"}, "bipartition.rule must be one of 'method', 'threshold',"),
        ({"rule": "global", "objective": "average_precision"}, "ranking metric"),
        ({"rule": "global", "objective": "nope"}, "nope"),
        ({"rule": "global", "cv": 1}, "bipartition.cv must be an integer in [2, inf), got 1"),
        ({"rule": "method", "cv": 2.5}, "bipartition.cv must be an integer in [2, inf), got 2.5"),
        (
            {"rule": "global", "training_scores": "test"},
            "bipartition.training_scores must be one of 'cv', 'train', got 'test'",
        ),
        ({"threshold": "high"}, "bipartition.threshold must be a number, got 'high'"),
        ({"threshold": True}, "bipartition.threshold must be a number, got True"),
        ({"allow_empty": "no"}, "bipartition.allow_empty must be true or false, got 'no'"),
        ({"rule": "global", "colour": 1}, "unknown bipartition options ['colour']"),
    ],
)
def test_bad_bipartition_config_is_a_one_line_error(config, message):
    with pytest.raises(PmlbenchError) as info:
        make_bipartition(config)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_unfitted_learned_rule_refuses_to_apply():
    for rule in ("global", "per_label", "top_k"):
        with pytest.raises(PmlbenchError, match="must be fitted before apply"):
            Bipartition(rule=rule).apply(FixedScores(), S_TEST, S_TEST)


def test_each_rule_dispatches_to_its_registry_entry(monkeypatch):
    """Bipartition calls the table's rule object, not a branch of its own."""
    calls = []

    class Spy(ThresholdRule):
        def apply(self, bip, estimator, X, scores):
            calls.append(bip.rule)
            return super().apply(bip, estimator, X, scores)

    monkeypatch.setitem(RULES, "threshold", Spy())
    fitted("threshold").apply(FixedScores(), S_TEST, S_TEST)
    assert calls == ["threshold"]


def test_rule_is_a_hydra_override():
    register_config_nodes()
    with initialize_config_dir(config_dir=str(config_dir()), version_base=None):
        cfg = compose(
            "config",
            overrides=[
                "method=mlknn",
                "bipartition.rule=per_label",
                "bipartition.objective=micro_f1",
            ],
        )
    assert cfg.bipartition.rule == "per_label" and cfg.bipartition.training_scores == "cv"
    assert cfg.bipartition.objective == "micro_f1"
    make_bipartition(dict(cfg.bipartition))
