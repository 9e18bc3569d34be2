"""Statistics: paired tests, Holm, ranks, Friedman/Nemenyi (Demšar 2006), Wilcoxon, win/tie/loss.

The references: scipy (friedmanchisquare, wilcoxon exact and permutation), scikit-posthocs
(Nemenyi and Holm post-hoc tests; optional, ``pip install scikit-posthocs``), Demšar's
published numbers, and brute-force enumerations written out here.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pmlbench.errors import PmlbenchError
from pmlbench.stats import (
    adjust_pvalues,
    compare_with_reference,
    control_posthoc,
    corrected_resampled_ttest,
    exact_signed_rank_pvalue,
    friedman_from_ranks,
    friedman_test,
    nemenyi_critical_difference,
    nonsignificant_groups,
    outcome,
    paired_effect_size,
    paired_ttest,
    pairwise_posthoc,
    rank_within_blocks,
    tie_sum,
    wilcoxon_signed_rank,
    win_tie_loss,
)

# Demšar (2006), Table 6: AUC of C4.5 with default settings, tuned m, tuned cf, both tuned
DEMSAR_METHODS = ["C4.5", "C4.5+m", "C4.5+cf", "C4.5+m+cf"]
DEMSAR_AUC = np.array(
    [
        [0.763, 0.768, 0.771, 0.798],  # adult
        [0.599, 0.591, 0.590, 0.569],  # breast cancer
        [0.954, 0.971, 0.968, 0.967],  # breast cancer wisconsin
        [0.628, 0.661, 0.654, 0.657],  # cmc
        [0.882, 0.888, 0.886, 0.898],  # ionosphere
        [0.936, 0.931, 0.916, 0.931],  # iris
        [0.661, 0.668, 0.609, 0.685],  # liver disorders
        [0.583, 0.583, 0.563, 0.625],  # lung cancer
        [0.775, 0.838, 0.866, 0.875],  # lymphography
        [1.000, 1.000, 1.000, 1.000],  # mushroom
        [0.940, 0.962, 0.965, 0.962],  # primary tumor
        [0.619, 0.666, 0.614, 0.669],  # rheum
        [0.972, 0.981, 0.975, 0.975],  # voting
        [0.957, 0.978, 0.946, 0.970],  # wine
    ]
)
DEMSAR_RANKS = [3.143, 2.000, 2.893, 1.964]  # as published


# ---------------------------------------------------------------- paired tests


def test_paired_ttest_is_scipys_ttest_rel(rng):
    a, b = rng.normal(size=7), rng.normal(size=7)
    expected = stats.ttest_rel(a, b)
    result = paired_ttest(a, b)
    assert result.statistic == pytest.approx(expected.statistic)
    assert result.pvalue == pytest.approx(expected.pvalue)
    assert result.mean_difference == pytest.approx(np.mean(a - b))


def test_identical_numbers_on_every_split_tie_without_nan():
    a = [0.5, 0.6, 0.7]
    result = paired_ttest(a, list(a))
    assert (result.statistic, result.pvalue) == (0.0, 1.0)
    assert outcome(result, result.pvalue < 0.05, higher_is_better=True) == "tie"


def test_constant_nonzero_shift_is_significant_in_its_direction():
    a = np.array([0.5, 0.25, 0.75])
    result = paired_ttest(a + 0.125, a)  # exact in binary: every difference is 0.125
    assert result.statistic == math.inf and result.pvalue == 0.0
    assert outcome(result, True, higher_is_better=True) == "win"
    assert outcome(result, True, higher_is_better=False) == "loss"
    down = paired_ttest(a - 0.125, a)
    assert down.statistic == -math.inf
    assert outcome(down, True, higher_is_better=False) == "win"


def test_paired_test_needs_two_pairs_and_finite_values():
    with pytest.raises(PmlbenchError, match="at least 2"):
        paired_ttest([1.0], [2.0])
    with pytest.raises(PmlbenchError, match="NaN"):
        paired_ttest([1.0, np.nan], [2.0, 1.0])


def test_corrected_resampled_ttest_worked_example():
    # d = [0.02, 0.02, 0.00, 0.03, 0.03]: mean 0.02, var(ddof=1) = 6e-4 / 4 = 1.5e-4, J = 5.
    a = [0.80, 0.82, 0.79, 0.81, 0.83]
    b = [0.78, 0.80, 0.79, 0.78, 0.80]
    # 50/50 splits: n_test/n_train = 1, t = 0.02 / sqrt((1/5 + 1) * 1.5e-4) = 1.4907119...
    result = corrected_resampled_ttest(a, b, n_train=100, n_test=100)
    assert result.statistic == pytest.approx(0.02 / math.sqrt(1.2 * 1.5e-4), rel=1e-9)
    assert result.statistic == pytest.approx(1.4907119849998598, rel=1e-9)
    assert result.pvalue == pytest.approx(2 * stats.t.sf(1.4907119849998598, df=4), rel=1e-9)
    # 2:1 train/test: t = 0.02 / sqrt((0.2 + 0.5) * 1.5e-4) = 1.9518001...
    other = corrected_resampled_ttest(a, b, n_train=200, n_test=100)
    assert other.statistic == pytest.approx(0.02 / math.sqrt(0.7 * 1.5e-4), rel=1e-9)
    # the plain paired t-test on the same numbers is far more confident
    plain = paired_ttest(a, b)
    assert plain.statistic == pytest.approx(0.02 / math.sqrt(1.5e-4 / 5), rel=1e-9)
    assert plain.pvalue < 0.05 < result.pvalue


def test_corrected_test_rejects_bad_sizes():
    with pytest.raises(PmlbenchError, match="n_train"):
        corrected_resampled_ttest([1, 2], [2, 2.5], n_train=0, n_test=10)


def test_effect_sizes_by_hand_and_against_the_tests(rng):
    # d = [0.02, 0.02, 0.00, 0.03, 0.03]: mean 0.02, sd = sqrt(1.5e-4) = 0.012247
    a = [0.80, 0.82, 0.79, 0.81, 0.83]
    b = [0.78, 0.80, 0.79, 0.78, 0.80]
    plain = paired_effect_size(a, b)
    assert plain.mean_difference == pytest.approx(0.02, rel=1e-9)
    assert plain.standard_error == pytest.approx(math.sqrt(1.5e-4 / 5), rel=1e-9)
    assert plain.cohens_d == pytest.approx(0.02 / math.sqrt(1.5e-4), rel=1e-9)  # 1.633
    corrected = paired_effect_size(a, b, n_train=100, n_test=100)
    assert corrected.standard_error == pytest.approx(math.sqrt(1.2 * 1.5e-4), rel=1e-9)
    assert corrected.cohens_d == plain.cohens_d  # d_z does not depend on the test
    # mean / standard error is each test's t statistic
    x, y = rng.normal(size=9), rng.normal(size=9)
    size = paired_effect_size(x, y)
    assert size.mean_difference / size.standard_error == pytest.approx(
        stats.ttest_rel(x, y).statistic, rel=1e-12
    )
    assert size.cohens_d == pytest.approx(np.mean(x - y) / np.std(x - y, ddof=1), rel=1e-12)
    size = paired_effect_size(x, y, n_train=150, n_test=50)
    assert size.mean_difference / size.standard_error == pytest.approx(
        corrected_resampled_ttest(x, y, 150, 50).statistic, rel=1e-12
    )
    # zero variance, decided like the tests
    same = paired_effect_size([0.5, 0.6], [0.5, 0.6])
    assert (same.standard_error, same.cohens_d) == (0.0, 0.0)
    shifted = paired_effect_size([0.25, 0.5], [0.5, 0.75])
    assert (shifted.standard_error, shifted.cohens_d) == (0.0, -math.inf)
    with pytest.raises(PmlbenchError, match="n_train"):
        paired_effect_size(a, b, n_train=100)


# ---------------------------------------------------------------- Holm


def test_holm_adjustment_by_hand_and_not_holm_sidak():
    adjusted = adjust_pvalues([0.01, 0.04, 0.03], "holm")
    # sorted 0.01, 0.03, 0.04 -> 3*0.01, max(0.03, 2*0.03), max(0.06, 1*0.04)
    np.testing.assert_allclose(adjusted, [0.03, 0.06, 0.06])
    assert adjusted[0] != pytest.approx(1 - 0.99**3)  # Holm-Sidak would give 0.029701
    np.testing.assert_allclose(adjust_pvalues([0.01, 0.5], "none"), [0.01, 0.5])
    with pytest.raises(PmlbenchError, match="correction"):
        adjust_pvalues([0.1], "bonferroni")


# ---------------------------------------------------------------- ranks


def test_ranks_follow_direction_and_average_ties():
    values = [[0.9, 0.8, 0.8], [0.1, 0.2, 0.3]]
    np.testing.assert_array_equal(rank_within_blocks(values, True), [[1, 2.5, 2.5], [3, 2, 1]])
    np.testing.assert_array_equal(rank_within_blocks(values, False), [[3, 1.5, 1.5], [1, 2, 3]])


# ---------------------------------------------------------------- Friedman, Demšar (2006)


def test_demsar_ranks_of_the_printed_table():
    # Row ranks by hand (1 = highest AUC, ties averaged), summed over the 14 rows:
    # C4.5 44, C4.5+m 28, C4.5+cf 41, C4.5+m+cf 27 (total 14 * 10 = 140). The paper prints
    # 2.893 and 1.964 for the last two: one of its rows was ranked on unrounded AUCs,
    # where C4.5+cf and C4.5+m+cf tie; the printed 3-decimal table does not show it.
    result = friedman_test(DEMSAR_AUC, True, DEMSAR_METHODS)
    np.testing.assert_allclose(result.average_ranks, np.array([44, 28, 41, 27]) / 14)
    assert result.n_blocks == 14 and result.k == 4


def test_demsar_friedman_statistics_from_published_ranks():
    result = friedman_from_ranks(DEMSAR_RANKS, 14, DEMSAR_METHODS)
    assert result.chi2 == pytest.approx(9.28, abs=0.005)
    assert result.f_statistic == pytest.approx(3.69, abs=0.005)
    assert result.pvalue == pytest.approx(stats.chi2.sf(result.chi2, 3))
    assert result.f_pvalue == pytest.approx(stats.f.sf(result.f_statistic, 3, 39))
    assert result.f_pvalue < 0.05  # "the null hypothesis is rejected"


def test_demsar_nemenyi_critical_difference():
    # q_0.05 = 2.569 for k = 4: CD = 2.569 * sqrt(4 * 5 / (6 * 14)) = 1.25
    assert nemenyi_critical_difference(4, 14, 0.05) == pytest.approx(
        2.569 * math.sqrt(20 / 84), abs=1e-3
    )
    assert nemenyi_critical_difference(4, 14, 0.05) == pytest.approx(1.25, abs=0.005)
    # q_0.10 = 2.291: CD = 1.12
    assert nemenyi_critical_difference(4, 14, 0.10) == pytest.approx(1.12, abs=0.005)
    for k, q in [(2, 1.960), (3, 2.343), (10, 3.164)]:
        assert nemenyi_critical_difference(k, 6, 0.05) / math.sqrt(
            k * (k + 1) / 36
        ) == pytest.approx(q, abs=1e-3)


def test_demsar_posthoc_tests():
    result = friedman_from_ranks(DEMSAR_RANKS, 14, DEMSAR_METHODS)
    pairs = pairwise_posthoc(result, alpha=0.05)
    # Nemenyi at 0.05: even the best vs the worst (1.179) stays below CD = 1.25
    assert not pairs["significant_nemenyi"].any()
    # Holm against the control C4.5: z = (R_C4.5 - R_j) / 0.488, p = 0.019, 0.608, 0.016
    control = control_posthoc(result, "C4.5", alpha=0.05).set_index("method")
    np.testing.assert_allclose(control["p"], [0.019, 0.608, 0.016], atol=0.0015)
    # Holm: 0.016 < 0.05/3 and 0.019 < 0.05/2 are rejected, 0.608 is not
    assert list(control["significant_holm"]) == [True, False, True]
    # Nemenyi at 0.10 (CD = 1.12): C4.5 is worse than C4.5+m and C4.5+m+cf; C4.5+cf is
    # in both groups (the paper's Figure 1)
    pairs10 = pairwise_posthoc(result, alpha=0.10)
    different = {
        frozenset((a, b))
        for a, b, s in pairs10[["method_a", "method_b", "significant_nemenyi"]].itertuples(
            index=False
        )
        if s
    }
    assert different == {frozenset(("C4.5", "C4.5+m")), frozenset(("C4.5", "C4.5+m+cf"))}
    groups = nonsignificant_groups(
        DEMSAR_METHODS, DEMSAR_RANKS, lambda a, b: frozenset((a, b)) in different
    )
    assert groups == [("C4.5+m+cf", "C4.5+m", "C4.5+cf"), ("C4.5+cf", "C4.5")]


def test_friedman_edge_cases():
    same = friedman_test(np.ones((3, 4)), True, "abcd")
    assert same.chi2 == 0 and same.pvalue == pytest.approx(1.0)
    separated = friedman_test(np.tile([4.0, 3.0, 2.0, 1.0], (5, 1)), True, "abcd")
    assert separated.chi2 == pytest.approx(5 * 3)  # its maximum N(k-1)
    assert separated.f_statistic == math.inf
    assert separated.f_pvalue == pytest.approx(stats.chi2.sf(15, 3))  # not a spurious 0
    with pytest.raises(PmlbenchError, match="at least 2"):
        friedman_test(np.ones((1, 3)), True, "abc")


# ---------------------------------------------------------------- Friedman with ties (issue 12)

# 12 PML datasets x 5 methods, subset accuracies rounded to two decimals; several methods
# sit at 0 on most datasets. Rank sums 36.5, 28.5, 46, 40.5, 28.5 (sum of squares 6713),
# tie term sum(t^3 - t) = 330, C = 1 - 330 / (12 * 5 * 24) = 0.7708.
FLIP_METHODS = ["m1", "m2", "m3", "m4", "m5"]
FLIP_TABLE = np.array(
    [
        [0.38, 0.38, 0.18, 0.38, 0.38],
        [0.00, 0.00, 0.00, 0.00, 0.13],
        [0.27, 0.27, 0.00, 0.00, 0.27],
        [0.00, 0.45, 0.00, 0.45, 0.00],
        [0.00, 0.43, 0.43, 0.00, 0.43],
        [0.60, 0.60, 0.41, 0.56, 0.60],
        [0.20, 0.20, 0.20, 0.15, 0.27],
        [0.00, 0.37, 0.00, 0.00, 0.58],
        [0.33, 0.00, 0.00, 0.45, 0.00],
        [0.15, 0.15, 0.14, 0.36, 0.15],
        [0.22, 0.41, 0.47, 0.16, 0.25],
        [0.18, 0.51, 0.09, 0.13, 0.15],
    ]
)


def test_tie_correction_flips_the_verdict_as_in_the_issue():
    result = friedman_test(FLIP_TABLE, True, FLIP_METHODS)
    reference = stats.friedmanchisquare(*FLIP_TABLE.T)
    assert result.chi2 == pytest.approx(reference.statistic, rel=1e-12)
    assert result.pvalue == pytest.approx(reference.pvalue, rel=1e-12)
    assert round(result.pvalue, 4) == 0.0392
    assert tie_sum(FLIP_TABLE) == 330
    assert result.tie_correction == pytest.approx(1 - 330 / 1440, rel=1e-15)
    # without the correction (Demšar's Eq. 1 as printed): chi2 = 7.767, p = 0.1005
    uncorrected = friedman_from_ranks(result.average_ranks, 12, FLIP_METHODS)
    assert uncorrected.chi2 == pytest.approx(6713 / 30 - 216, rel=1e-12)
    assert round(uncorrected.pvalue, 4) == 0.1005
    assert result.chi2 * result.tie_correction == pytest.approx(uncorrected.chi2, rel=1e-12)
    assert uncorrected.pvalue > 0.05 > result.pvalue
    # the Iman-Davenport F of the corrected statistic flips as well: 0.094 -> 0.0315
    assert uncorrected.f_pvalue > 0.05 > result.f_pvalue
    assert result.f_statistic == pytest.approx(11 * result.chi2 / (48 - result.chi2), rel=1e-12)


def _anova_f_of_ranks(ranks: np.ndarray) -> float:
    """Two-way ANOVA F of methods on the within-block ranks (Iman & Davenport, 1980)."""
    n, k = ranks.shape
    grand = ranks.mean()
    ss_methods = n * np.sum((ranks.mean(axis=0) - grand) ** 2)
    ss_blocks = k * np.sum((ranks.mean(axis=1) - grand) ** 2)  # 0: every row sums to k(k+1)/2
    ss_error = np.sum((ranks - grand) ** 2) - ss_methods - ss_blocks
    return (ss_methods / (k - 1)) / (ss_error / ((n - 1) * (k - 1)))


def test_friedman_matches_scipy_on_random_tables_with_many_ties():
    rng = np.random.default_rng(20260112)
    checked = all_tied = 0
    for _ in range(400):
        n, k = int(rng.integers(2, 30)), int(rng.integers(3, 9))
        levels = int(rng.integers(1, 5))  # few distinct values: many ties, some rows all tied
        values = rng.integers(0, levels, size=(n, k)) / 10.0
        higher = bool(rng.integers(2))
        result = friedman_test(values, higher, [f"m{j}" for j in range(k)])
        ranks = rank_within_blocks(values, higher)
        if np.all(values == values[:, :1]):
            assert (result.chi2, result.pvalue, result.f_pvalue) == (0.0, 1.0, 1.0)
            all_tied += 1
            continue
        with np.errstate(divide="ignore", invalid="ignore"):
            reference = stats.friedmanchisquare(*values.T)
        assert result.chi2 == pytest.approx(reference.statistic, rel=1e-10, abs=1e-12)
        assert result.pvalue == pytest.approx(reference.pvalue, rel=1e-10, abs=1e-15)
        if math.isfinite(result.f_statistic):
            assert result.f_statistic == pytest.approx(_anova_f_of_ranks(ranks), rel=1e-9)
            assert result.f_pvalue == pytest.approx(
                stats.f.sf(result.f_statistic, k - 1, (k - 1) * (n - 1)), rel=1e-12
            )
        checked += 1
    assert checked > 250 and all_tied > 10


def test_demsar_table_with_its_ties_matches_scipy():
    # the printed Table 6 has ties (mushroom: all four at 1.000; lung cancer, iris, ...)
    result = friedman_test(DEMSAR_AUC, True, DEMSAR_METHODS)
    reference = stats.friedmanchisquare(*DEMSAR_AUC.T)
    assert result.chi2 == pytest.approx(reference.statistic, rel=1e-12)
    assert result.tie_correction < 1
    uncorrected = friedman_from_ranks(result.average_ranks, 14, DEMSAR_METHODS)
    assert result.chi2 > uncorrected.chi2


def test_identical_rankings_with_ties_give_the_maximal_statistic():
    values = np.tile([0.5, 0.5, 0.2, 0.0], (6, 1))
    result = friedman_test(values, True, "abcd")
    assert result.chi2 == pytest.approx(6 * 3)  # N(k-1), ties or not
    assert result.chi2 == pytest.approx(stats.friedmanchisquare(*values.T).statistic)
    assert result.f_statistic == math.inf
    assert result.f_pvalue == pytest.approx(result.pvalue)
    with pytest.raises(PmlbenchError, match="tie term"):
        friedman_from_ranks([1.5, 1.5], 2, "ab", ties=100.0)


def test_posthoc_tests_match_scikit_posthocs_on_tied_tables():
    sp = pytest.importorskip("scikit_posthocs", reason="pip install scikit-posthocs")
    rng = np.random.default_rng(7)
    for values in [FLIP_TABLE, DEMSAR_AUC, rng.integers(0, 3, size=(15, 6)) / 4.0]:
        k = values.shape[1]
        names = [f"m{j}" for j in range(k)]
        # scikit-posthocs ranks ascending: our lower-is-better ranks
        result = friedman_test(values, False, names)
        pairs = pairwise_posthoc(result).set_index(["method_a", "method_b"])
        nemenyi = sp.posthoc_nemenyi_friedman(values).to_numpy()
        siegel = sp.posthoc_siegel_friedman(values).to_numpy()
        siegel_holm = sp.posthoc_siegel_friedman(values, p_adjust="holm").to_numpy()
        for i, j in itertools.combinations(range(k), 2):
            row = pairs.loc[(names[i], names[j])]
            assert row["p_nemenyi"] == pytest.approx(nemenyi[i, j], rel=1e-10, abs=1e-14)
            assert row["p"] == pytest.approx(siegel[i, j], rel=1e-10, abs=1e-14)
            assert row["p_holm"] == pytest.approx(siegel_holm[i, j], rel=1e-10, abs=1e-14)


# ---------------------------------------------------------------- Wilcoxon


def test_wilcoxon_by_hand():
    # d = [1, 2, -3, 4, 5]: R+ = 1 + 2 + 4 + 5 = 12, R- = 3; exact two-sided p = 2 * 5/32
    a = np.array([11.0, 12.0, 7.0, 14.0, 15.0])
    b = np.full(5, 10.0)
    result = wilcoxon_signed_rank(a, b, higher_is_better=True)
    assert (result.rank_sum_a, result.rank_sum_b, result.statistic) == (12, 3, 3)
    assert result.pvalue == pytest.approx(2 * 5 / 32)
    assert (result.n_a_better, result.n_b_better) == (4, 1)
    flipped = wilcoxon_signed_rank(a, b, higher_is_better=False)
    assert (flipped.rank_sum_a, flipped.rank_sum_b) == (3, 12)
    zero = wilcoxon_signed_rank(b, b, True)
    assert zero.pvalue == 1.0


def _enumerated_pvalue(d: np.ndarray) -> float:
    """Two-sided p of R+ (zsplit) by enumerating all 2^n sign vectors of the non-zero d."""
    ranks = stats.rankdata(np.abs(d))
    free = ranks[d != 0]
    signs = np.array(list(itertools.product([0.0, 1.0], repeat=len(free))))
    null = signs @ free
    observed = ranks[d > 0].sum()
    return min(1.0, 2.0 * min(np.mean(null <= observed), np.mean(null >= observed)))


def test_wilcoxon_without_ties_is_scipys_exact_test():
    rng = np.random.default_rng(3)
    for n in range(2, 26):
        for _ in range(5):
            a, b = rng.normal(size=n), rng.normal(size=n)
            result = wilcoxon_signed_rank(a, b, higher_is_better=True)
            reference = stats.wilcoxon(a, b, method="exact")
            assert result.method == "exact"
            assert result.pvalue == pytest.approx(reference.pvalue, rel=1e-12)
            assert result.statistic == reference.statistic


def test_wilcoxon_with_zeros_and_ties_is_the_exact_permutation_test():
    rng = np.random.default_rng(4)
    # small N: scipy's own permutation test enumerates all 2^N sign vectors
    for n in range(4, 11):
        for _ in range(2):
            d = rng.integers(-2, 3, size=n) / 100.0
            if np.all(d == 0):
                continue
            b = np.full(n, 0.5)
            result = wilcoxon_signed_rank(b + d, b, higher_is_better=True)
            reference = stats.wilcoxon(d, zero_method="zsplit", method=stats.PermutationMethod())
            assert result.pvalue == pytest.approx(reference.pvalue, rel=1e-12)
            assert result.pvalue == pytest.approx(_enumerated_pvalue(d), rel=1e-12)
    # N = 14..18, where scipy's "auto" falls back to the normal approximation
    for n in range(14, 19):
        d = rng.integers(-3, 4, size=n).astype(np.float64)
        d[0], d[1] = 0.0, 1.0  # at least one zero and one tie
        result = wilcoxon_signed_rank(d, np.zeros(n), higher_is_better=True)
        assert result.method == "exact"
        assert result.pvalue == pytest.approx(_enumerated_pvalue(d), rel=1e-12)


def test_wilcoxon_demsar_table_2():
    # Demšar (2006), Table 2: C4.5+m against C4.5 on the 14 datasets of Table 6, two zero
    # differences (lung cancer, mushroom) split between the signs: R+ = 93, R- = 12.
    result = wilcoxon_signed_rank(DEMSAR_AUC[:, 1], DEMSAR_AUC[:, 0], higher_is_better=True)
    assert (result.rank_sum_a, result.rank_sum_b, result.statistic) == (93, 12, 12)
    # exact: 0.0078 (scipy's "auto" gives the normal approximation's 0.011 here); Demšar's
    # table of exact critical values rejects at 0.05 (T = 12 < 21 for N = 14)
    d = DEMSAR_AUC[:, 1] - DEMSAR_AUC[:, 0]
    assert result.pvalue == pytest.approx(_enumerated_pvalue(d), rel=1e-12)
    assert result.pvalue == pytest.approx(0.0078125, rel=1e-9)
    asymptotic = wilcoxon_signed_rank(DEMSAR_AUC[:, 1], DEMSAR_AUC[:, 0], True, "asymptotic")
    assert asymptotic.pvalue == pytest.approx(
        stats.wilcoxon(d, zero_method="zsplit", method="asymptotic").pvalue, rel=1e-12
    )


def test_wilcoxon_large_n_uses_the_normal_approximation():
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=60).round(1), rng.normal(size=60).round(1)
    result = wilcoxon_signed_rank(a, b, higher_is_better=False)
    # differences of one-decimal numbers: 0.3 - 0.1 and 0.4 - 0.2 are the same difference
    # (they tie), though their floats differ in the last bit
    d = np.round(a - b, 10)
    reference = stats.wilcoxon(d, zero_method="zsplit", method="asymptotic")
    assert result.method == "asymptotic"
    assert result.pvalue == pytest.approx(reference.pvalue, rel=1e-12)
    forced = wilcoxon_signed_rank(a, b, higher_is_better=False, method="exact")
    assert forced.method == "exact"
    assert forced.pvalue == pytest.approx(exact_signed_rank_pvalue(d), rel=1e-12)
    assert forced.pvalue == pytest.approx(result.pvalue, abs=0.01)  # close at N = 60
    with pytest.raises(PmlbenchError, match="method"):
        wilcoxon_signed_rank(a, b, True, method="permutation")


# ---------------------------------------------------------------- win/tie/loss


def _fixture() -> pd.DataFrame:
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
                    "n_train": 50,
                    "n_test": 50,
                }
            )

    # d1/ap: A better on every split (d = .10, .09, .11; t = 17.3, p = 0.0033): win
    add("d1", "ap", "A", [0.90, 0.91, 0.92])
    add("d1", "ap", "B", [0.80, 0.82, 0.81])
    # d2/ap: identical numbers: tie
    add("d2", "ap", "A", [0.5, 0.6, 0.7])
    add("d2", "ap", "B", [0.5, 0.6, 0.7])
    # d1/hl (lower is better): A lower by exactly 0.125 on every split: win, not NaN
    add("d1", "hl", "A", [0.125, 0.25, 0.375])
    add("d1", "hl", "B", [0.25, 0.375, 0.5])
    # d2/hl: A higher (worse) on every split by varying amounts: loss
    add("d2", "hl", "A", [0.30, 0.41, 0.35])
    add("d2", "hl", "B", [0.10, 0.20, 0.16])
    # d3/ap: B lacks split 2: tested on splits 0, 1, split 2 reported as unmatched
    add("d3", "ap", "A", [0.7, 0.8, 0.9])
    add("d3", "ap", "B", [0.6, 0.75], splits=[0, 1])
    # d3/hl: one matched split only: untested
    add("d3", "hl", "A", [0.2, 0.3], splits=[0, 1])
    add("d3", "hl", "B", [0.1], splits=[0])
    return pd.DataFrame(rows)


DIRECTIONS = {"ap": True, "hl": False}


def test_win_tie_loss_on_hand_made_fixture():
    comparisons = compare_with_reference(_fixture(), "A", DIRECTIONS)
    table = comparisons.comparisons.set_index(["metric", "dataset"])
    assert table.loc[("ap", "d1"), "outcome"] == "win"
    size = paired_effect_size([0.90, 0.91, 0.92], [0.80, 0.82, 0.81])
    assert table.loc[("ap", "d1"), "standard_error"] == pytest.approx(size.standard_error)
    assert table.loc[("ap", "d1"), "cohens_d"] == pytest.approx(size.cohens_d)
    assert table.loc[("hl", "d1"), "cohens_d"] == -math.inf  # A lower by 0.125 everywhere
    assert table.loc[("ap", "d1"), "pvalue"] == pytest.approx(
        stats.ttest_rel([0.90, 0.91, 0.92], [0.80, 0.82, 0.81]).pvalue
    )
    assert table.loc[("ap", "d2"), "outcome"] == "tie"
    assert table.loc[("hl", "d1"), "outcome"] == "win"
    assert table.loc[("hl", "d2"), "outcome"] == "loss"
    assert table.loc[("ap", "d3"), "n"] == 2
    assert table.loc[("hl", "d3"), "outcome"] == "untested"
    unmatched = comparisons.unmatched
    assert set(
        zip(
            unmatched["dataset"],
            unmatched["metric"],
            unmatched["split"],
            unmatched["only_in"],
            strict=True,
        )
    ) == {("d3", "ap", 2, "A"), ("d3", "hl", 1, "A")}
    wtl = win_tie_loss(comparisons.comparisons, ["ap", "hl"])
    assert list(wtl.columns) == ["baseline", "metric", "win", "tie", "loss"]
    assert wtl.to_dict(orient="records") == [
        {"baseline": "B", "metric": "ap", "win": 1, "tie": 2, "loss": 0},
        {"baseline": "B", "metric": "hl", "win": 1, "tie": 0, "loss": 1},
        {"baseline": "B", "metric": "total", "win": 2, "tie": 2, "loss": 1},
    ]


def test_holm_and_corrected_test_change_decisions_consistently():
    records = _fixture()
    plain = compare_with_reference(records, "A", DIRECTIONS).comparisons
    holm = compare_with_reference(records, "A", DIRECTIONS, correction="holm").comparisons
    tested = plain["pvalue"].notna()
    np.testing.assert_allclose(
        holm.loc[tested, "p_adjusted"], adjust_pvalues(plain.loc[tested, "pvalue"], "holm")
    )
    assert (holm.loc[tested, "p_adjusted"] >= plain.loc[tested, "pvalue"]).all()
    corrected = compare_with_reference(records, "A", DIRECTIONS, test="corrected").comparisons
    row = corrected[(corrected["metric"] == "ap") & (corrected["dataset"] == "d1")].iloc[0]
    expected = corrected_resampled_ttest([0.90, 0.91, 0.92], [0.80, 0.82, 0.81], 50, 50)
    assert row["statistic"] == pytest.approx(expected.statistic)
    assert row["mean_difference"] / row["standard_error"] == pytest.approx(expected.statistic)
    # the constant shift stays significant under every variant
    for frame in (holm, corrected):
        hl = frame[(frame["metric"] == "hl") & (frame["dataset"] == "d1")].iloc[0]
        assert hl["outcome"] == "win"


def test_unknown_reference_is_a_one_line_error():
    with pytest.raises(PmlbenchError, match="reference method 'C'"):
        compare_with_reference(_fixture(), "C", DIRECTIONS)


# ---------------------------------------------------------------- ties to a tolerance (issue 32)

# 20 errors each on 97 test instances over five splits, spread differently: the means over
# the splits (as the report's groupby takes them) differ by 7e-18 from the order of the
# additions alone
SPREAD = np.array([2, 2, 2, 5, 9]) / 97
EVEN = np.array([4, 4, 4, 4, 4]) / 97


def _split_means() -> tuple[float, float]:
    frame = pd.DataFrame({"method": ["a"] * 5 + ["b"] * 5, "value": [*SPREAD, *EVEN]})
    means = frame.groupby("method")["value"].mean()
    return float(means["a"]), float(means["b"])


def test_means_of_equal_counts_differ_in_the_last_bit_and_merge_into_a_tie():
    from pmlbench.stats.ranks import TIE_TOLERANCE, merge_near_ties

    spread, even = _split_means()
    assert spread != even and abs(spread - even) < 1e-16  # the defect's premise
    merged = merge_near_ties([[spread, even, 0.5, np.nan]])
    assert merged[0, 0] == merged[0, 1] == min(spread, even)
    assert merged[0, 2] == 0.5 and np.isnan(merged[0, 3])
    # genuine differences stay, bit for bit; a vector is one row
    values = np.array([[0.1, 0.1 + 10 * TIE_TOLERANCE, 0.3]])
    assert np.array_equal(merge_near_ties(values), values)
    assert np.array_equal(merge_near_ties([even, spread]), [min(spread, even)] * 2)
    # relative to the value's size: coverage-like numbers in the hundreds
    assert merge_near_ties([200.0, 200.0 + 1e-11])[0] == merge_near_ties([200.0, 200.0 + 1e-11])[1]


def test_equal_error_counts_tie_in_ranks_friedman_and_wilcoxon():
    spread, even = _split_means()
    # lower is better; two methods with 20 errors each, a third with more
    values = np.array([[spread, even, 0.4], [0.2, 0.25, 0.3], [0.1, 0.12, 0.11]])
    ranks = rank_within_blocks(values, higher_is_better=False)
    assert list(ranks[0]) == [1.5, 1.5, 3.0]
    result = friedman_test(values, False, "abc")
    exact = friedman_test(np.where(values == spread, even, values), False, "abc")
    assert result.chi2 == exact.chi2 and result.tie_correction < 1
    # the block counts as a zero difference, not a win
    w = wilcoxon_signed_rank(values[:, 0], values[:, 1], higher_is_better=False)
    assert (w.n_a_better, w.n_b_better) == (2, 0)


def test_bars_of_a_cd_diagram_never_span_two_methods_that_differ():
    """Methods at the same average rank sit at one point of the axis: a bar through that
    point speaks for both. ML-kNN and Schirn tie at 9.64 in the archived macro-F1 ranks and
    ML-kNN differs from PARTICLE-MAP: no bar may join Schirn and PARTICLE-MAP."""
    names = ["lead", "mlknn", "schirn", "particle_map"]
    different = {frozenset(("mlknn", "particle_map"))}
    groups = nonsignificant_groups(
        names, [5.0, 9.64, 9.64, 11.7], lambda a, b: frozenset((a, b)) in different
    )
    assert groups == [("lead", "mlknn", "schirn")]
    # a bar joins every method at the ranks it spans, no two of which differ
    ranks = {"a": 1.0, "b": 2.0, "c": 2.0, "d": 3.0}
    different = {frozenset(("b", "c"))}  # tied, yet different: no bar through rank 2
    groups = nonsignificant_groups(
        list(ranks), list(ranks.values()), lambda a, b: frozenset((a, b)) in different
    )
    assert groups == []
    groups = nonsignificant_groups(list(ranks), list(ranks.values()), lambda a, b: False)
    assert groups == [("a", "b", "c", "d")]


# ---------------------------------------------------------------- win/tie/loss per dataset


def test_a_dataset_counts_once_by_the_majority_of_its_levels_without_a_contrary_one():
    from pmlbench.stats.wtl import dataset_outcome, dataset_outcomes

    assert dataset_outcome(["win", "win", "tie"]) == "win"
    assert dataset_outcome(["win", "tie", "tie"]) == "tie"  # one level of three
    assert dataset_outcome(["win", "win", "loss"]) == "tie"  # the levels disagree
    assert dataset_outcome(["loss", "loss", "loss"]) == "loss"
    assert dataset_outcome(["win", "tie"]) == "tie"  # half is not a majority
    assert dataset_outcome(["win", "untested", "untested"]) == "win"  # tested levels only
    assert dataset_outcome(["untested"]) == "untested"
    assert dataset_outcome(["tie"]) == "tie"
    frame = pd.DataFrame(
        {
            "baseline": ["b"] * 5,
            "metric": ["m"] * 5,
            "dataset": ["d1", "d1", "d1", "d2", "d3"],
            "level": ["x", "y", "z", "natural", "natural"],
            "outcome": ["win", "win", "tie", "loss", "untested"],
        }
    )
    outcomes = dataset_outcomes(frame)
    assert list(outcomes["outcome"]) == ["win", "loss", "untested"]
    assert list(outcomes["levels"]) == [3, 1, 0]
    assert list(outcomes[["level_win", "level_tie", "level_loss"]].iloc[0]) == [2, 1, 0]
    counts = win_tie_loss(outcomes, ["m"])
    assert list(counts.iloc[0][["win", "tie", "loss"]]) == [1, 0, 1]


def test_holm_within_each_pair_and_metric_or_over_the_table():
    from pmlbench.stats.wtl import adjust_within

    frame = pd.DataFrame(
        {
            "baseline": ["b", "b", "c", "c", "c"],
            "metric": ["m", "m", "m", "m", "n"],
            "pvalue": [0.01, 0.04, 0.02, np.nan, 0.03],
        }
    )
    pair = adjust_within(frame, "holm", "pair")
    # families: (b, m) = {0.01, 0.04}; (c, m) = {0.02} (untested left out); (c, n) = {0.03}
    np.testing.assert_allclose(pair, [0.02, 0.04, 0.02, np.nan, 0.03])
    table = adjust_within(frame, "holm", "table")  # one family of the four tested
    np.testing.assert_allclose(table[[0, 1, 2, 4]], [0.04, 0.06, 0.06, 0.06])
    assert np.isnan(table[3])
    none = adjust_within(frame, "none", "pair")
    assert list(none[[0, 1, 2, 4]]) == [0.01, 0.04, 0.02, 0.03]
    with pytest.raises(PmlbenchError, match="family"):
        compare_with_reference(
            pd.DataFrame(
                {
                    "dataset": ["d"] * 4,
                    "level": ["x"] * 4,
                    "method": ["r", "r", "b", "b"],
                    "seed": [0] * 4,
                    "split": [0, 1, 0, 1],
                    "metric": ["m"] * 4,
                    "value": [1.0, 2.0, 1.0, 2.0],
                }
            ),
            "r",
            {"m": True},
            correction="holm",
            family="everything",
        )
