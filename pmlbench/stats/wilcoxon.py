"""The Wilcoxon signed-rank test of two methods across datasets (Demšar, 2006, Sec. 3.1.3).

Which null distribution gives the p-value (``method="auto"``):

- N <= 50 datasets: the **exact** distribution. Demšar recommends exact critical values up to
  N = 25; 50 is scipy's own threshold for ``method="auto"``, and the exact computation costs
  nothing at that size. Without zero differences and ties among the ``|d_i|`` it is Wilcoxon's
  distribution of R+ (scipy's ``method="exact"``, same p-value to rounding). With zeros or
  ties, where scipy's ``"exact"`` is no longer exact and its ``"auto"`` switches to a
  permutation test for N <= 13 and to the normal approximation above, the p-value comes
  from the exact permutation distribution of R+ given the observed average ranks: under
  the null hypothesis every non-zero difference is positive or negative with probability
  1/2, and zero differences keep their half rank on each side (``zero_method="zsplit"``).
  That is the distribution scipy's ``PermutationMethod`` enumerates, computed here by
  convolution for any N instead of by enumerating 2^N sign vectors.
- N > 50: the normal approximation with the tie correction of the variance and no
  continuity correction (scipy's ``method="asymptotic"``).

A difference within :data:`~pmlbench.stats.ranks.TIE_TOLERANCE` of zero (relative to
max(1, |a|, |b|)) is a zero difference, and absolute differences that agree to that
tolerance share their rank: means that differ only in the order of their additions are the
same result (:mod:`pmlbench.stats.ranks`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from pmlbench.errors import PmlbenchError
from pmlbench.stats.ranks import TIE_TOLERANCE, merge_near_ties

EXACT_MAX_N = 50
METHODS = ("auto", "exact", "asymptotic")


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
        method: ``"exact"`` or ``"asymptotic"``: the null distribution the p-value used.
    """

    n: int
    n_a_better: int
    n_b_better: int
    rank_sum_a: float
    rank_sum_b: float
    statistic: float
    pvalue: float
    method: str = "exact"


def exact_signed_rank_pvalue(d) -> float:
    """Two-sided p-value of R+ under its exact permutation distribution given ``|d|``'s ranks.

    The ranks are average ranks of ``|d|`` over all differences, zeros included (scipy's
    ``zero_method="zsplit"``); a zero adds half its rank to R+ whatever the signs, the
    other ranks add theirs with probability 1/2 each. Twice the ranks are integers, so the
    null distribution is a convolution over integers: P(R+ = r) for every attainable r.
    p = min(1, 2 min(P(R+ <= r+), P(R+ >= r+))), as for scipy's exact and permutation tests.
    """
    d = np.asarray(d, dtype=np.float64)
    doubled = np.rint(2.0 * stats.rankdata(np.abs(d))).astype(np.int64)
    free = doubled[d != 0]
    observed = int(doubled[d > 0].sum())  # the constant half ranks of zeros cancel out
    probability = np.zeros(int(free.sum()) + 1)
    probability[0] = 1.0
    top = 0
    for rank in free:
        # each sign with probability 1/2: shift by the rank or stay
        probability[rank : top + rank + 1] += probability[: top + 1].copy()
        probability[: top + rank + 1] *= 0.5
        top += rank
    lower = float(probability[: observed + 1].sum())
    upper = float(probability[observed:].sum())
    return min(1.0, 2.0 * min(lower, upper))


def wilcoxon_signed_rank(a, b, higher_is_better: bool, method: str = "auto") -> WilcoxonResult:
    """Signed-rank test on per-dataset means; zero differences split between both sides.

    Demšar recommends splitting the ranks of zero differences evenly (scipy's
    ``zero_method="zsplit"``) rather than discarding them. Differences are compared with
    a tolerance (see the module docstring). ``method``: ``"auto"`` (exact for
    N <= 50, see the module docstring), ``"exact"`` or ``"asymptotic"``.
    """
    if method not in METHODS:
        raise PmlbenchError(f"unknown Wilcoxon method {method!r}; use one of {list(METHODS)}")
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape or len(a) < 1:
        raise PmlbenchError(
            f"the Wilcoxon test needs two equal-length samples, got {a.shape} and {b.shape}"
        )
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise PmlbenchError("the Wilcoxon test got NaN or infinite values; check results.csv")
    d = a - b if higher_is_better else b - a
    scale = np.maximum(1.0, np.maximum(np.abs(a), np.abs(b)))
    d = np.where(np.abs(d) <= TIE_TOLERANCE * scale, 0.0, d)
    d = np.sign(d) * merge_near_ties(np.abs(d))
    n_a, n_b = int(np.sum(d > 0)), int(np.sum(d < 0))
    ranks = stats.rankdata(np.abs(d))
    half_zero = 0.5 * float(ranks[d == 0].sum())
    r_a = float(ranks[d > 0].sum()) + half_zero
    r_b = float(ranks[d < 0].sum()) + half_zero
    exact = method == "exact" or (method == "auto" and len(d) <= EXACT_MAX_N)
    chosen = "exact" if exact else "asymptotic"
    if np.all(d == 0):
        return WilcoxonResult(len(d), 0, 0, r_a, r_b, min(r_a, r_b), 1.0, chosen)
    if exact:
        pvalue = exact_signed_rank_pvalue(d)
    else:
        result = stats.wilcoxon(d, zero_method="zsplit", method="asymptotic")
        pvalue = float(result.pvalue)
    return WilcoxonResult(len(d), n_a, n_b, r_a, r_b, min(r_a, r_b), pvalue, chosen)
