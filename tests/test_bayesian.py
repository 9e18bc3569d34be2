"""Bayesian comparisons: correlated t-test, Bayesian signed-rank test, their win/tie/loss.

References: the worked examples of baycomp's documentation (docs/functions.rst and
docs/classes.rst of github.com/janezd/baycomp, computed on its docs/code/accuracies.txt),
baycomp itself when installed (``pip install baycomp``), closed forms, and Monte Carlo
samples of the same posteriors drawn here.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pmlbench.errors import PmlbenchError
from pmlbench.stats import (
    bayesian_comparisons,
    bayesian_outcome,
    bayesian_signed_rank,
    bayesian_win_tie_loss,
    correlated_bayesian_ttest,
)
from pmlbench.stats.bayesian import signed_rank_posterior

# baycomp's accuracies.txt: naive Bayes and J48 on "sonar", the first run of 10-fold
# cross-validation (accuracy in %). 10 folds: n_test/n_train = 1/9, rho = 0.1.
SONAR_NBC = [94.203, 92.754, 95.652, 91.176, 92.647, 91.176, 92.647, 92.647, 86.765, 91.176]
SONAR_J48 = [92.754, 92.754, 89.855, 89.706, 95.588, 89.706, 95.588, 94.118, 91.176, 92.647]

# the same file: mean accuracy (%) over 10 x 10-fold cross-validation on its 54 data sets
# (credit appears twice), naive Bayes and J48
NBC_MEANS = np.array(
    [
        95.94595, 71.39521, 83.3377, 49.98591, 76.16673, 86.21744, 86.21744, 81.87252,
        52.8114, 75.04, 71.93504, 50.12499, 72.03123, 60, 83.6875, 84.36091, 98.31118,
        89.40237, 93.33322, 87.79086, 87.59993, 56.84723, 85.09998, 62.66532, 74.63639,
        96.38929, 95.76072, 90.29939, 92.16903, 93.37478, 80.41671, 87.72004, 75.26002,
        68.11142, 47.19786, 91.14715, 85.59372, 86.62217, 93.81435, 76.71185, 92.19582,
        89.82622, 79.21932, 95.41686, 59.03334, 62.06667, 46.32085, 58.78783, 79.968,
        64.92861, 98.70582, 97.19638, 57.61428, 93.98181,
    ]
)  # fmt: skip
J48_MEANS = np.array(
    [
        98.64226, 77.2214, 77.1957, 49.49834, 83.50006, 86.28991, 86.28991, 80.21214,
        64.20668, 72.17, 72.31167, 39.66248, 71.50976, 60, 78.57087, 80.51726, 99.18611,
        90.11586, 93.59991, 99.43702, 85.79996, 56.84723, 76.37137, 64.09357, 97.80228,
        98.91727, 100, 97.18137, 78.59252, 96.60513, 73.16674, 88.61625, 74.32345,
        69.77806, 41.00794, 94.14284, 88.9546, 89.9792, 97.841, 74.67613, 92.63445,
        92.85163, 81.05974, 94.16605, 63.5, 77.66667, 46.78335, 76.53533, 74.872, 60.95248,
        90.72864, 95.03683, 57.0753, 92.60908,
    ]
)  # fmt: skip


def _probs(result) -> tuple[float, float, float]:
    return (result.p_a_better, result.p_equivalent, result.p_b_better)


# ---------------------------------------------------------------- correlated t-test


def test_correlated_ttest_reproduces_baycomps_published_example():
    # docs/functions.rst: two_on_single(nbc, j48) = (0.4145119975061462, 0.5854880024938538)
    # and with rope=0.5 (0.28584464173791002, 0.2691518716880249, 0.44500348657406508)
    no_rope = correlated_bayesian_ttest(SONAR_NBC, SONAR_J48, n_train=9, n_test=1, rope=0.0)
    assert no_rope.p_a_better == pytest.approx(0.4145119975061462, rel=1e-12)
    assert no_rope.p_b_better == pytest.approx(0.5854880024938538, rel=1e-12)
    assert no_rope.p_equivalent == 0.0
    result = correlated_bayesian_ttest(SONAR_NBC, SONAR_J48, n_train=9, n_test=1, rope=0.5)
    np.testing.assert_allclose(
        _probs(result), (0.28584464173791002, 0.2691518716880249, 0.44500348657406508), rtol=1e-12
    )
    assert result.mean_difference == pytest.approx(-0.3049, rel=1e-9)
    assert result.outcome() == "undecided"
    # accuracy is higher-is-better; read as an error rate, the two sides swap
    error = correlated_bayesian_ttest(
        SONAR_NBC, SONAR_J48, n_train=9, n_test=1, rope=0.5, higher_is_better=False
    )
    np.testing.assert_allclose(_probs(error), _probs(result)[::-1], rtol=1e-12)


def test_correlated_ttest_is_baycomps_on_random_cross_validations():
    baycomp = pytest.importorskip("baycomp", reason="pip install baycomp")
    rng = np.random.default_rng(11)
    for folds, runs in [(10, 1), (5, 2), (2, 5), (3, 1)]:
        for rope in (0.0, 0.01, 0.05):
            a = rng.normal(0.7, 0.03, size=folds * runs)
            b = a - rng.normal(0.01, 0.03, size=folds * runs)
            # baycomp's rho = 1/folds; here n_test/n_train = 1/(folds - 1), the same rho
            result = correlated_bayesian_ttest(a, b, n_train=folds - 1, n_test=1, rope=rope)
            expected = baycomp.two_on_single(a, b, rope=rope, runs=runs)
            if rope == 0:
                expected = (expected[0], 0.0, expected[1])
            np.testing.assert_allclose(_probs(result), expected, rtol=1e-10, atol=1e-14)


def test_correlated_ttest_closed_form_against_a_monte_carlo_of_its_posterior():
    # Corani & Benavoli's posterior, sampled hierarchically rather than through the t
    # distribution: sigma^2 | d ~ (J-1) s^2 / chi2(J-1), mu | sigma^2 ~ N(mean, sigma^2 c)
    rng = np.random.default_rng(12)
    a = np.array([0.712, 0.705, 0.731, 0.698, 0.720])
    b = np.array([0.701, 0.708, 0.715, 0.690, 0.703])
    n_train, n_test, rope = 120, 80, 0.005
    d = a - b
    j, c = len(d), 1 / len(d) + n_test / n_train
    sigma2 = (j - 1) * np.var(d, ddof=1) / rng.chisquare(j - 1, size=1_000_000)
    mu = rng.normal(d.mean(), np.sqrt(sigma2 * c))
    sampled = (np.mean(mu > rope), np.mean(np.abs(mu) <= rope), np.mean(mu < -rope))
    result = correlated_bayesian_ttest(a, b, n_train, n_test, rope=rope)
    # 5 standard errors of a proportion over 10^6 draws: at most 0.0025
    np.testing.assert_allclose(_probs(result), sampled, atol=0.0025)
    assert sum(_probs(result)) == pytest.approx(1.0, abs=1e-12)


def test_correlated_ttest_uses_the_nadeau_bengio_scale():
    a = [0.80, 0.82, 0.79, 0.81, 0.83]
    b = [0.78, 0.80, 0.79, 0.78, 0.80]
    result = correlated_bayesian_ttest(a, b, n_train=100, n_test=100, rope=0.0)
    # P(mu < 0) is the one-sided p-value of the corrected resampled t-test
    t = 0.02 / math.sqrt((1 / 5 + 1) * 1.5e-4)
    assert result.p_b_better == pytest.approx(stats.t.sf(t, df=4), rel=1e-9)


def test_correlated_ttest_zero_variance_is_a_point_mass():
    same = correlated_bayesian_ttest([0.5, 0.6, 0.7], [0.5, 0.6, 0.7], 50, 50)
    assert _probs(same) == (0.0, 1.0, 0.0) and same.outcome() == "tie"
    a = np.array([0.5, 0.25, 0.75])
    shifted = correlated_bayesian_ttest(a + 0.125, a, 50, 50, rope=0.01)
    assert _probs(shifted) == (1.0, 0.0, 0.0) and shifted.outcome() == "win"
    inside = correlated_bayesian_ttest(a + 0.125, a, 50, 50, rope=0.25)
    assert _probs(inside) == (0.0, 1.0, 0.0)
    lower = correlated_bayesian_ttest(a + 0.125, a, 50, 50, higher_is_better=False)
    assert _probs(lower) == (0.0, 0.0, 1.0) and lower.outcome() == "loss"


def test_correlated_ttest_rejects_bad_input():
    with pytest.raises(PmlbenchError, match="n_train"):
        correlated_bayesian_ttest([1, 2], [2, 3], n_train=0, n_test=5)
    with pytest.raises(PmlbenchError, match="ROPE"):
        correlated_bayesian_ttest([1, 2], [2, 3], 5, 5, rope=-0.1)
    with pytest.raises(PmlbenchError, match="at least 2"):
        correlated_bayesian_ttest([1.0], [2.0], 5, 5)


# ---------------------------------------------------------------- signed-rank test


def test_signed_rank_reproduces_baycomps_published_example():
    # docs/classes.rst: SignedRankTest.probs(nbc, j48, rope=1) = (0.23014, 0.00674, 0.76312),
    # a Monte Carlo estimate from 50,000 draws (standard error about 0.002 each)
    result = bayesian_signed_rank(NBC_MEANS, J48_MEANS, rope=1.0)
    np.testing.assert_allclose(_probs(result), (0.23014, 0.00674, 0.76312), atol=0.01)
    assert result.n == 54 and result.outcome() == "undecided"
    # deterministic for a seed, and another seed moves the estimate by Monte Carlo noise only
    assert bayesian_signed_rank(NBC_MEANS, J48_MEANS, rope=1.0) == result
    other = bayesian_signed_rank(NBC_MEANS, J48_MEANS, rope=1.0, seed=1)
    assert other != result
    np.testing.assert_allclose(_probs(other), _probs(result), atol=0.012)
    # the direction swaps the sides
    swapped = bayesian_signed_rank(NBC_MEANS, J48_MEANS, rope=1.0, higher_is_better=False)
    np.testing.assert_allclose(_probs(swapped), _probs(result)[::-1], atol=0.012)


def test_signed_rank_posterior_is_baycomps_for_the_same_dirichlet_draws():
    baycomp = pytest.importorskip("baycomp", reason="pip install baycomp")
    d = NBC_MEANS - J48_MEANS
    z = np.concatenate([[0.0], d])
    # no pair sum on the ROPE boundary, where the two conventions differ (see the module)
    assert not np.any(np.isclose(np.abs(z[:, None] + z[None, :]), 2.0, rtol=0, atol=1e-9))
    weights = np.random.RandomState(3).dirichlet(np.concatenate([[0.5], np.ones(54)]), 20_000)
    theta = signed_rank_posterior(d, 1.0, weights)
    expected = baycomp.SignedRankTest.sample(
        NBC_MEANS, J48_MEANS, rope=1.0, prior=0.5, nsamples=20_000, random_state=3
    )
    np.testing.assert_allclose(theta, expected, rtol=0, atol=1e-12)


def test_signed_rank_one_dataset_closed_form():
    # n = 1, d > 2 rope: theta_a = 1 - w0^2 and theta_equivalent = w0^2 with w0 ~ Beta(s, 1),
    # so P(a better) = P(w0^2 < 1/2) = 2^(-s/2)
    for s in (0.5, 1.0, 2.0):
        result = bayesian_signed_rank(
            [0.9], [0.8], rope=0.01, prior_strength=s, n_samples=200_000, seed=5
        )
        expected = 2 ** (-s / 2)
        tolerance = 5 * math.sqrt(expected * (1 - expected) / 200_000)
        assert result.p_a_better == pytest.approx(expected, abs=tolerance)
        assert result.p_b_better == 0.0
        assert result.p_equivalent == pytest.approx(1 - result.p_a_better, abs=1e-12)


def test_signed_rank_edge_cases():
    same = bayesian_signed_rank([0.5, 0.6, 0.7], [0.5, 0.6, 0.7], rope=0.0)
    assert _probs(same) == (0.0, 1.0, 0.0)  # every pair sum is 0: inside the closed ROPE
    many = bayesian_signed_rank(np.full(30, 0.9), np.full(30, 0.5), n_samples=1000)
    assert many.p_a_better == 1.0 and many.outcome() == "win"
    with pytest.raises(PmlbenchError, match="equal-length"):
        bayesian_signed_rank([1.0, 2.0], [1.0])
    with pytest.raises(PmlbenchError, match="prior"):
        bayesian_signed_rank([1.0], [2.0], prior_strength=0)


# ---------------------------------------------------------------- win/tie/loss


def test_bayesian_outcome_rule():
    assert bayesian_outcome(0.95, 0.05, 0.0) == "win"
    assert bayesian_outcome(0.01, 0.03, 0.96) == "loss"
    assert bayesian_outcome(0.02, 0.97, 0.01) == "tie"
    assert bayesian_outcome(0.5, 0.4, 0.1) == "undecided"
    assert bayesian_outcome(0.5, 0.4, 0.1, threshold=0.51) == "undecided"
    assert bayesian_outcome(0.6, 0.3, 0.1, threshold=0.6) == "win"
    with pytest.raises(PmlbenchError, match="threshold"):
        bayesian_outcome(0.5, 0.5, 0.0, threshold=0.5)


def _records() -> pd.DataFrame:
    rows = []

    def add(dataset, metric, method, values, splits=None):
        for split, value in zip(splits or range(len(values)), values, strict=True):
            rows.append(
                {
                    "dataset": dataset,
                    "level": "rate=1",
                    "method": method,
                    "seed": 0,
                    "split": split,
                    "metric": metric,
                    "value": value,
                    "n_train": 80,
                    "n_test": 20,
                }
            )

    # ap (higher is better): A clearly better on d1, equal on d2, slightly apart on d3
    add("d1", "ap", "A", [0.90, 0.91, 0.92, 0.90, 0.91])
    add("d1", "ap", "B", [0.80, 0.82, 0.81, 0.80, 0.81])
    add("d2", "ap", "A", [0.5, 0.6, 0.7, 0.6, 0.5])
    add("d2", "ap", "B", [0.5, 0.6, 0.7, 0.6, 0.5])
    add("d3", "ap", "A", [0.70, 0.74, 0.69, 0.73, 0.71])
    add("d3", "ap", "B", [0.69, 0.70, 0.71, 0.70, 0.69])
    # hl (lower is better): A higher (worse) on every split; d2: one matched split only
    add("d1", "hl", "A", [0.30, 0.41, 0.35, 0.38, 0.33])
    add("d1", "hl", "B", [0.10, 0.20, 0.16, 0.15, 0.12])
    add("d2", "hl", "A", [0.2, 0.3], splits=[0, 1])
    add("d2", "hl", "B", [0.1], splits=[0])
    return pd.DataFrame(rows)


def test_bayesian_comparisons_table_agrees_with_the_single_tests():
    records = _records()
    table = bayesian_comparisons(records, "A", {"ap": True, "hl": False}, rope=0.01)
    assert list(table.columns) == [
        "baseline",
        "metric",
        "dataset",
        "level",
        "n",
        "reference_mean",
        "baseline_mean",
        "mean_difference",
        "rope",
        "p_reference_better",
        "p_equivalent",
        "p_baseline_better",
        "outcome",
    ]
    indexed = table.set_index(["metric", "dataset"])
    for (metric, dataset), row in indexed.iterrows():
        if row["outcome"] == "untested":
            continue
        mine = records[(records["metric"] == metric) & (records["dataset"] == dataset)]
        a = mine[mine["method"] == "A"].sort_values("split")["value"].to_numpy()
        b = mine[mine["method"] == "B"].sort_values("split")["value"].to_numpy()
        single = correlated_bayesian_ttest(a, b, 80, 20, rope=0.01, higher_is_better=metric == "ap")
        np.testing.assert_allclose(
            row[["p_reference_better", "p_equivalent", "p_baseline_better"]].to_numpy(float),
            _probs(single),
            rtol=1e-12,
            atol=1e-15,
        )
        assert row["mean_difference"] == pytest.approx(np.mean(a - b))
        assert row["outcome"] == single.outcome()
    assert indexed.loc[("ap", "d1"), "outcome"] == "win"
    assert indexed.loc[("ap", "d2"), "outcome"] == "tie"
    assert indexed.loc[("ap", "d3"), "outcome"] == "undecided"
    assert indexed.loc[("hl", "d1"), "outcome"] == "loss"
    assert indexed.loc[("hl", "d2"), "outcome"] == "untested"
    assert np.isnan(indexed.loc[("hl", "d2"), "p_equivalent"])
    wtl = bayesian_win_tie_loss(table, ["ap", "hl"])
    assert wtl.to_dict(orient="records") == [
        {"baseline": "B", "metric": "ap", "win": 1, "tie": 1, "loss": 0, "undecided": 1},
        {"baseline": "B", "metric": "hl", "win": 0, "tie": 0, "loss": 1, "undecided": 0},
        {"baseline": "B", "metric": "total", "win": 1, "tie": 1, "loss": 1, "undecided": 1},
    ]
    # a wider ROPE for ap turns the small d3 difference into a practical equivalence
    wide = bayesian_comparisons(
        records, "A", {"ap": True, "hl": False}, rope={"ap": 0.1, "hl": 0.01}
    )
    assert wide.set_index(["metric", "dataset"]).loc[("ap", "d3"), "outcome"] == "tie"


def test_bayesian_comparisons_need_split_sizes():
    records = _records().drop(columns=["n_train", "n_test"])
    with pytest.raises(PmlbenchError, match="n_train and n_test"):
        bayesian_comparisons(records, "A", {"ap": True, "hl": False})
    with pytest.raises(PmlbenchError, match="ROPE width for metric 'hl'"):
        bayesian_comparisons(_records(), "A", {"ap": True, "hl": False}, rope={"ap": 0.01})
