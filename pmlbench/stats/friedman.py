"""The Friedman test over many datasets and its post-hoc tests (Demšar, 2006, Sec. 3.2).

Methods are ranked within each block (a PML dataset: dataset x noise level) by the metric's
direction; the tests work on the average ranks ``R_j`` over ``N`` blocks and ``k`` methods.

Ties within a block are common in PML benchmarks (several methods at subset accuracy 0 on a
hard dataset). They share their average rank and shrink the variance of the ranks, so
Friedman's statistic is divided by the tie correction C, as ``scipy.stats.friedmanchisquare``
(and autorank, which calls it) does; without it the test is conservative and can miss a
difference that scipy reports. The Iman-Davenport F is derived from the corrected statistic.
The post-hoc tests (Nemenyi, Holm) use the standard error sqrt(k(k+1)/(6N)) of Demšar's
Sec. 3.2.2 without a tie correction, exactly as scikit-posthocs' ``posthoc_nemenyi_friedman``
and ``posthoc_siegel_friedman`` do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats

from pmlbench.errors import PmlbenchError
from pmlbench.stats.multiple import adjust_pvalues
from pmlbench.stats.ranks import merge_near_ties, rank_within_blocks


@dataclass(frozen=True)
class FriedmanResult:
    """Friedman's statistic, corrected for ties, and the Iman-Davenport F variant.

    Attributes:
        methods: method names, in the column order of the input.
        n_blocks: number of blocks N (PML datasets).
        average_ranks: average rank of each method (1 = best).
        chi2: Friedman's statistic corrected for ties,
            chi2_F = 12N/(k(k+1)) (sum_j R_j^2 - k(k+1)^2/4) / C: Demšar's chi2_F divided
            by ``tie_correction``; the value of ``scipy.stats.friedmanchisquare``.
        pvalue: p-value of chi2_F against chi2 with k-1 degrees of freedom.
        f_statistic: Iman & Davenport's F_F = (N-1) chi2_F / (N(k-1) - chi2_F) (Demšar,
            Sec. 3.2.2) of the corrected chi2_F. It equals the two-way ANOVA F statistic of the
            ranks (blocks x methods), ties included, which is how Iman and Davenport (1980)
            derived it.
        f_pvalue: p-value of F_F against F(k-1, (k-1)(N-1)); Demšar recommends this one.
            When every block ranks the methods identically (chi2_F at its maximum N(k-1)),
            F_F is infinite and the F approximation says nothing; f_pvalue is then the chi2
            p-value rather than 0.
        tie_correction: C = 1 - sum_i sum_g (t_ig^3 - t_ig) / (N k (k^2 - 1)), t_ig the sizes
            of the groups of tied values in block i; 1 without ties. ``chi2 * tie_correction``
            is the uncorrected statistic printed by Demšar.
    """

    methods: tuple[str, ...]
    n_blocks: int
    average_ranks: np.ndarray
    chi2: float
    pvalue: float
    f_statistic: float
    f_pvalue: float
    tie_correction: float = 1.0

    @property
    def k(self) -> int:
        return len(self.methods)


def tie_sum(values) -> float:
    """sum_i sum_g (t_ig^3 - t_ig) over the blocks (rows) i of a blocks x methods table.

    t_ig are the sizes of the groups of equal values in row i; the sum is 0 without ties.
    It is the ``ties`` argument of :func:`friedman_from_ranks`.
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2:
        raise PmlbenchError(f"ties are counted in a blocks x methods table, got {values.shape}")
    ordered = np.sort(values, axis=1)
    total = 0.0
    for row in ordered:
        starts = np.flatnonzero(np.concatenate([[True], row[1:] != row[:-1], [True]]))
        t = np.diff(starts).astype(np.float64)  # run lengths of equal values
        total += float(np.sum(t**3 - t))
    return total


def friedman_test(values, higher_is_better: bool, methods) -> FriedmanResult:
    """Friedman test of ``values`` (blocks x methods, one mean per block and method).

    Tied values of a block share their average rank and the statistic is corrected for
    them (see :class:`FriedmanResult`); values that agree to
    :data:`~pmlbench.stats.ranks.TIE_TOLERANCE` are tied (a mean's last bits depend on the
    order of its additions).
    """
    values = np.asarray(values, dtype=np.float64)
    n, k = values.shape if values.ndim == 2 else (0, 0)
    if k != len(methods):
        raise PmlbenchError(f"{len(methods)} method names for a table with {k} columns")
    if k < 2 or n < 2:
        raise PmlbenchError(
            f"the Friedman test needs at least 2 methods and 2 datasets, got {k} and {n}"
        )
    values = merge_near_ties(values)
    ranks = rank_within_blocks(values, higher_is_better).mean(axis=0)
    return friedman_from_ranks(ranks, n, methods, ties=tie_sum(values))


def friedman_from_ranks(average_ranks, n_blocks: int, methods, ties: float = 0.0) -> FriedmanResult:
    """Friedman's chi2_F and Iman-Davenport's F_F from the average ranks over N blocks.

    ``ties`` is :func:`tie_sum` of the table the ranks come from; the default 0 (no ties)
    gives the formulas of Demšar's worked example. When every block ties all the methods
    nothing can be ranked: chi2_F = F_F = 0 and both p-values are 1.
    """
    ranks = np.asarray(average_ranks, dtype=np.float64)
    methods = tuple(str(m) for m in methods)
    k, n = len(ranks), int(n_blocks)
    if k != len(methods) or k < 2 or n < 2:
        raise PmlbenchError(
            f"the Friedman test needs >= 2 methods (with names) and >= 2 "
            f"datasets, got {k} ranks, {len(methods)} names, {n} datasets"
        )
    most = n * k * (k * k - 1.0)
    if not 0.0 <= ties <= most:
        raise PmlbenchError(
            f"the tie term must lie in [0, N k (k^2 - 1)] = [0, {most:g}], got {ties}"
        )
    correction = 1.0 - ties / most
    if correction <= 1e-12:
        return FriedmanResult(methods, n, ranks, 0.0, 1.0, 0.0, 1.0, 0.0)
    chi2 = 12.0 * n / (k * (k + 1)) * (float(np.sum(ranks**2)) - k * (k + 1) ** 2 / 4.0)
    chi2 = max(chi2, 0.0) / correction  # rounding can make a zero statistic slightly negative
    pvalue = float(stats.chi2.sf(chi2, k - 1))
    denominator = n * (k - 1) - chi2
    # chi2_F = N(k-1) when every block ranks the methods identically (ties or not); the
    # division by C leaves rounding noise there, hence a relative tolerance
    if denominator <= 1e-9 * n * (k - 1):
        f_statistic, f_pvalue = math.inf, pvalue
    else:
        f_statistic = (n - 1) * chi2 / denominator
        f_pvalue = float(stats.f.sf(f_statistic, k - 1, (k - 1) * (n - 1)))
    return FriedmanResult(methods, n, ranks, chi2, pvalue, f_statistic, f_pvalue, correction)


def rank_standard_error(k: int, n: int) -> float:
    """Standard error of a difference of two average ranks: sqrt(k(k+1) / (6N))."""
    return math.sqrt(k * (k + 1) / (6.0 * n))


def nemenyi_critical_difference(k: int, n: int, alpha: float = 0.05) -> float:
    """Nemenyi's critical difference CD = q_alpha * sqrt(k(k+1)/(6N)).

    ``q_alpha`` is the studentized range quantile (k groups, infinite degrees of freedom)
    divided by sqrt(2); for k = 4, alpha = 0.05 it is 2.569.
    """
    if k < 2 or n < 1:
        raise PmlbenchError(f"a critical difference needs k >= 2 methods and N >= 1, got {k}, {n}")
    q_alpha = stats.studentized_range.ppf(1.0 - alpha, k, np.inf) / math.sqrt(2.0)
    return float(q_alpha * rank_standard_error(k, n))


def pairwise_posthoc(result: FriedmanResult, alpha: float = 0.05) -> pd.DataFrame:
    """Every pair of methods: rank difference, Nemenyi and Holm-adjusted p-values.

    Columns: method_a, method_b, rank_a, rank_b, z, p (unadjusted, normal), p_nemenyi
    (studentized range), p_holm (Holm over all k(k-1)/2 pairs), and the two decisions at alpha.
    """
    se = rank_standard_error(result.k, result.n_blocks)
    rows = []
    for i, j in combinations(range(result.k), 2):
        diff = float(result.average_ranks[i] - result.average_ranks[j])
        z = diff / se
        rows.append(
            {
                "method_a": result.methods[i],
                "method_b": result.methods[j],
                "rank_a": float(result.average_ranks[i]),
                "rank_b": float(result.average_ranks[j]),
                "z": z,
                "p": float(2.0 * stats.norm.sf(abs(z))),
                "p_nemenyi": float(
                    stats.studentized_range.sf(abs(z) * math.sqrt(2.0), result.k, np.inf)
                ),
            }
        )
    frame = pd.DataFrame(
        rows, columns=["method_a", "method_b", "rank_a", "rank_b", "z", "p", "p_nemenyi"]
    )
    frame["p_holm"] = adjust_pvalues(frame["p"].to_numpy(), "holm")
    cd = nemenyi_critical_difference(result.k, result.n_blocks, alpha)
    frame["significant_nemenyi"] = (frame["rank_a"] - frame["rank_b"]).abs() > cd
    frame["significant_holm"] = frame["p_holm"] < alpha
    return frame


def control_posthoc(result: FriedmanResult, control: str, alpha: float = 0.05) -> pd.DataFrame:
    """Every method against one control method, Holm-adjusted over the k-1 comparisons.

    Demšar's recommended post-hoc when a new method is compared with existing ones:
    z = (R_control - R_j) / sqrt(k(k+1)/(6N)); a negative z means the control ranks better.
    """
    if control not in result.methods:
        raise PmlbenchError(f"control method {control!r} is not among {list(result.methods)}")
    c = result.methods.index(control)
    se = rank_standard_error(result.k, result.n_blocks)
    others = [j for j in range(result.k) if j != c]
    z = np.array([(result.average_ranks[c] - result.average_ranks[j]) / se for j in others])
    p = 2.0 * stats.norm.sf(np.abs(z))
    frame = pd.DataFrame(
        {
            "method": [result.methods[j] for j in others],
            "rank": [float(result.average_ranks[j]) for j in others],
            "control_rank": float(result.average_ranks[c]),
            "z": z,
            "p": p,
        }
    )
    frame["p_holm"] = adjust_pvalues(p, "holm")
    frame["significant_holm"] = frame["p_holm"] < alpha
    return frame


def nonsignificant_groups(
    names, average_ranks, different, tolerance: float = 1e-9
) -> list[tuple[str, ...]]:
    """The thick bars of a critical-difference diagram: maximal stretches of the rank axis
    in which no two methods differ significantly.

    ``different(a, b)`` says whether methods a and b differ significantly. A bar is drawn
    over an interval of average ranks, so it speaks for every method placed inside that
    interval: methods at the same average rank (within ``tolerance``) enter or leave a bar
    together, and a bar joins only methods of which no pair differs. Methods that share a
    rank but differ significantly get no bar through their position. Bars contained in
    another bar are dropped.
    """
    ranks = np.asarray(average_ranks, dtype=np.float64)
    order = np.argsort(ranks, kind="stable")
    # the positions on the axis: methods at (numerically) the same average rank
    places: list[list[str]] = []
    previous = None
    for i in order:
        if previous is not None and ranks[i] - previous <= tolerance:
            places[-1].append(names[i])
        else:
            places.append([names[i]])
            previous = ranks[i]

    def clique(members: list[str]) -> bool:
        return not any(
            different(members[i], members[j])
            for i in range(len(members))
            for j in range(i + 1, len(members))
        )

    groups: list[tuple[str, ...]] = []
    for start in range(len(places)):
        members = list(places[start])
        if not clique(members):
            continue
        end = start
        while end + 1 < len(places) and clique(members + places[end + 1]):
            end += 1
            members += places[end]
        if len(members) > 1:
            group = tuple(members)
            if not any(set(group) <= set(g) for g in groups):
                groups.append(group)
    return groups
