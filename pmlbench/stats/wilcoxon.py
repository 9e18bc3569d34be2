"""The Wilcoxon signed-rank test of two methods across datasets (Demšar, 2006, Sec. 3.1.3)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from pmlbench.errors import PmlbenchError


@dataclass(frozen=True)
class WilcoxonResult:
    """Outcome of a two-sided signed-rank test of ``a`` against ``b`` over N datasets.

    Attributes:
        n: number of datasets.
        n_a_better / n_b_better: datasets where the direction-aware difference favours a / b.
        rank_sum_a / rank_sum_b: signed-rank sums in favour of a / b (zero differences split
            evenly); the larger one says which method the test leans to.
        statistic: scipy's statistic (the smaller rank sum).
        pvalue: two-sided p-value (1 when every difference is zero).
    """

    n: int
    n_a_better: int
    n_b_better: int
    rank_sum_a: float
    rank_sum_b: float
    statistic: float
    pvalue: float


def wilcoxon_signed_rank(a, b, higher_is_better: bool) -> WilcoxonResult:
    """Signed-rank test on per-dataset means; zero differences split between both sides.

    Demšar recommends splitting the ranks of zero differences evenly (scipy's
    ``zero_method="zsplit"``) rather than discarding them.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape or len(a) < 1:
        raise PmlbenchError(
            f"the Wilcoxon test needs two equal-length samples, got {a.shape} and {b.shape}"
        )
    d = a - b if higher_is_better else b - a
    n_a, n_b = int(np.sum(d > 0)), int(np.sum(d < 0))
    ranks = stats.rankdata(np.abs(d))
    half_zero = 0.5 * float(ranks[d == 0].sum())
    r_a = float(ranks[d > 0].sum()) + half_zero
    r_b = float(ranks[d < 0].sum()) + half_zero
    if np.all(d == 0):
        return WilcoxonResult(len(d), 0, 0, r_a, r_b, min(r_a, r_b), 1.0)
    result = stats.wilcoxon(a, b, zero_method="zsplit", alternative="two-sided")
    return WilcoxonResult(len(d), n_a, n_b, r_a, r_b, float(result.statistic), float(result.pvalue))
