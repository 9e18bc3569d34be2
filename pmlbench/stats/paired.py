"""Paired tests over matched splits: the paper's paired t-test and the corrected variant.

Both tests look at the per-split differences ``d = a - b`` of two methods evaluated on the
same splits. Two cases make Student's statistic undefined (zero variance of ``d``) and are
decided explicitly instead of returning NaN:

- every difference is exactly zero: the methods are indistinguishable, p = 1 (a tie);
- every difference is the same non-zero number: the shift is systematic, t = +-inf, p = 0
  (significant in the direction of the shift).

The ``*_many`` variants test many pairs of equal length at once (one per row).

Effect sizes go beside the p-values (:func:`paired_effect_size`): the mean difference, its
standard error (the denominator of the test's t) and Cohen's d for paired samples.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy import stats

from pmlbench.errors import PmlbenchError

TESTS = ("ttest", "corrected")
TEST_NAMES = {"ttest": "paired t-test", "corrected": "corrected resampled t-test"}


@dataclass(frozen=True)
class PairedTest:
    """Outcome of a two-sided paired test of ``a`` against ``b``.

    Attributes:
        n: number of matched pairs.
        mean_difference: mean of ``a - b`` (its sign says which side is larger).
        statistic: the t statistic of ``a - b`` (+-inf for a constant non-zero shift).
        pvalue: two-sided p-value.
    """

    n: int
    mean_difference: float
    statistic: float
    pvalue: float


def _rows(a, b) -> tuple[np.ndarray, np.ndarray]:
    a = np.atleast_2d(np.asarray(a, dtype=np.float64))
    b = np.atleast_2d(np.asarray(b, dtype=np.float64))
    if a.ndim != 2 or a.shape != b.shape:
        raise PmlbenchError(
            f"paired samples must have equal shapes, got {a.shape} and "
            f"{b.shape}; pass one value per matched split"
        )
    if a.shape[1] < 2:
        raise PmlbenchError(
            f"a paired test needs at least 2 matched splits, got {a.shape[1]}; "
            "run more splits (protocol.n_splits)"
        )
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise PmlbenchError("paired samples contain NaN or infinite values; check results.csv")
    return a, b


def _decide_zero_variance(d: np.ndarray, statistic: np.ndarray, pvalue: np.ndarray) -> None:
    """Overwrite the undefined tests in place (see the module docstring)."""
    constant = np.all(d == d[:, :1], axis=1)
    zero = constant & (d[:, 0] == 0)
    shifted = constant & ~zero
    statistic[zero], pvalue[zero] = 0.0, 1.0
    statistic[shifted] = np.copysign(np.inf, d[shifted, 0])
    pvalue[shifted] = 0.0


def paired_ttest_many(a, b) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row-wise two-sided paired t-tests (scipy.stats.ttest_rel).

    Returns (mean of a - b, t statistic, p-value), one entry per row.
    """
    a, b = _rows(a, b)
    d = a - b
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        # zero-variance rows trigger scipy's precision warning; they are decided below
        warnings.simplefilter("ignore", RuntimeWarning)
        result = stats.ttest_rel(a, b, axis=1)
    statistic = np.array(result.statistic, dtype=np.float64, ndmin=1)
    pvalue = np.array(result.pvalue, dtype=np.float64, ndmin=1)
    _decide_zero_variance(d, statistic, pvalue)
    return d.mean(axis=1), statistic, pvalue


def corrected_resampled_ttest_many(
    a, b, test_train_ratio
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row-wise Nadeau-Bengio corrected resampled t-tests (see
    :func:`corrected_resampled_ttest`); ``test_train_ratio`` is n_test/n_train per row."""
    a, b = _rows(a, b)
    ratio = np.broadcast_to(np.asarray(test_train_ratio, dtype=np.float64), (a.shape[0],))
    if not np.all(ratio > 0):
        raise PmlbenchError(
            "the corrected t-test needs positive n_train and n_test; check the "
            "n_train/n_test columns of results.csv"
        )
    d = a - b
    j = d.shape[1]
    variance = np.var(d, axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        statistic = d.mean(axis=1) / np.sqrt((1.0 / j + ratio) * variance)
    pvalue = 2.0 * stats.t.sf(np.abs(statistic), df=j - 1)
    _decide_zero_variance(d, statistic, pvalue)
    return d.mean(axis=1), statistic, pvalue


def paired_ttest(a, b) -> PairedTest:
    """Two-sided paired t-test over matched splits (scipy.stats.ttest_rel), as in the paper.

    The paper's Table 3 counts a win/loss when this test rejects at alpha = 0.05 over the five
    splits of one PML dataset. Zero-variance differences are decided as the module explains.
    """
    mean, statistic, pvalue = paired_ttest_many(np.ravel(a), np.ravel(b))
    return PairedTest(np.size(a), float(mean[0]), float(statistic[0]), float(pvalue[0]))


def corrected_resampled_ttest(a, b, n_train: float, n_test: float) -> PairedTest:
    """Nadeau & Bengio's (2003) corrected resampled t-test over J random train/test splits.

    Overlapping training sets make the per-split differences correlated, so the naive
    variance ``var(d)/J`` is too small and the plain paired t-test too liberal. The
    correction inflates it by the test/train size ratio:

        t = mean(d) / sqrt((1/J + n_test/n_train) * var(d, ddof=1)),  df = J - 1.
    """
    if not (n_train > 0 and n_test > 0):
        raise PmlbenchError(
            f"the corrected t-test needs positive n_train and n_test, got "
            f"{n_train} and {n_test}; check the n_train/n_test columns"
        )
    mean, statistic, pvalue = corrected_resampled_ttest_many(
        np.ravel(a), np.ravel(b), n_test / n_train
    )
    return PairedTest(np.size(a), float(mean[0]), float(statistic[0]), float(pvalue[0]))


@dataclass(frozen=True)
class EffectSize:
    """Size of the difference ``a - b`` over matched splits.

    Attributes:
        n: number of matched pairs.
        mean_difference: mean of ``d = a - b``.
        standard_error: standard error of the mean difference, the denominator of the
            test's t statistic: sd(d)/sqrt(n) for the paired t-test, Nadeau and Bengio's
            sqrt((1/n + n_test/n_train) var(d)) for the corrected one.
        cohens_d: Cohen's d for paired samples (d_z; Cohen 1988, Lakens 2013):
            mean(d) / sd(d), sd with ddof = 1; it does not depend on n or on the test.
            0 when every difference is zero, +-inf for a constant non-zero shift.
    """

    n: int
    mean_difference: float
    standard_error: float
    cohens_d: float


def effect_sizes_many(a, b, test_train_ratio=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row-wise (mean of a - b, standard error of that mean, Cohen's d_z) as in
    :class:`EffectSize`; with ``test_train_ratio`` (n_test/n_train per row) the standard error
    is the corrected resampled one."""
    a, b = _rows(a, b)
    d = a - b
    j = d.shape[1]
    mean = d.mean(axis=1)
    sd = np.std(d, axis=1, ddof=1)
    if test_train_ratio is None:
        factor = np.full(d.shape[0], 1.0 / j)
    else:
        ratio = np.broadcast_to(np.asarray(test_train_ratio, dtype=np.float64), (d.shape[0],))
        if not np.all(ratio > 0):
            raise PmlbenchError(
                "the corrected standard error needs positive n_train and n_test; check the "
                "n_train/n_test columns of results.csv"
            )
        factor = 1.0 / j + ratio
    standard_error = np.sqrt(factor) * sd
    with np.errstate(divide="ignore", invalid="ignore"):
        cohens_d = mean / sd
    constant = np.all(d == d[:, :1], axis=1)
    standard_error[constant] = 0.0
    cohens_d[constant] = np.where(d[constant, 0] == 0, 0.0, np.copysign(np.inf, d[constant, 0]))
    return mean, standard_error, cohens_d


def paired_effect_size(
    a, b, n_train: float | None = None, n_test: float | None = None
) -> EffectSize:
    """Mean difference, its standard error and Cohen's d of ``a - b`` over matched splits.

    Without sizes the standard error is the paired t-test's sd(d)/sqrt(n); with ``n_train``
    and ``n_test`` it is the corrected resampled test's (see
    :func:`corrected_resampled_ttest`). In both cases mean / standard_error is the test's t.
    """
    ratio = None
    if n_train is not None or n_test is not None:
        if not (n_train is not None and n_test is not None and n_train > 0 and n_test > 0):
            raise PmlbenchError(
                f"the corrected standard error needs positive n_train and n_test, got "
                f"{n_train} and {n_test}"
            )
        ratio = n_test / n_train
    mean, standard_error, cohens_d = effect_sizes_many(np.ravel(a), np.ravel(b), ratio)
    return EffectSize(np.size(a), float(mean[0]), float(standard_error[0]), float(cohens_d[0]))


def outcome(test: PairedTest, significant: bool, higher_is_better: bool) -> str:
    """``"win"``/``"loss"`` when ``a`` is significantly better/worse than ``b``, else ``"tie"``."""
    if not significant or test.mean_difference == 0:
        return "tie"
    a_better = test.mean_difference > 0 if higher_is_better else test.mean_difference < 0
    return "win" if a_better else "loss"
