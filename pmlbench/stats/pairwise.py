"""Every pair of methods compared by the Wilcoxon signed-rank test over datasets, Holm-adjusted.

Benavoli, Corani & Mangili (JMLR 2016, "Should we really use post-hoc tests based on
mean-ranks?") show that the Nemenyi test on mean ranks makes the verdict on two methods
depend on which other methods are ranked with them. The multi-comparison matrix of
Ismail-Fawaz et al. (2023) and aeon's critical-difference diagram instead test every pair
on its own: the Wilcoxon signed-rank test over datasets (Demšar 2006, Sec. 3.1.3; exact for
N <= 50, :mod:`pmlbench.stats.wilcoxon`) and Holm's (1979) step-down correction over the
k(k-1)/2 pairs of one metric.

A pair uses every block (dataset) where both methods have a result, so a method that
declines some datasets removes them from its own pairs only. When blocks are averaged into
datasets (``group``), the average runs over the sub-blocks (noise levels) both methods have.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd

from pmlbench.errors import PmlbenchError
from pmlbench.stats.friedman import nonsignificant_groups
from pmlbench.stats.multiple import adjust_pvalues
from pmlbench.stats.ranks import merge_near_ties
from pmlbench.stats.wilcoxon import wilcoxon_signed_rank

PAIRWISE_COLUMNS = [
    "method_a",
    "method_b",
    "n_datasets",
    "mean_a",
    "mean_b",
    "mean_diff",
    "wins",
    "ties",
    "losses",
    "statistic",
    "p",
    "p_holm",
    "significant",
    "better",
]


def pair_values(
    values: pd.DataFrame, a: str, b: str, group: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The per-block values of methods ``a`` and ``b`` over the blocks both have.

    ``values`` is blocks x methods (NaN: no result). With ``group`` (a level of the row
    index, e.g. ``"dataset"``) the common rows are averaged per group first: one value per
    dataset, the mean over the noise levels both methods have. The two values of a block
    that agree to :data:`~pmlbench.stats.ranks.TIE_TOLERANCE` are made equal (a mean's last
    bits depend on the order of its additions).
    """
    pair = values[[a, b]].dropna(how="any")
    if group is not None:
        if group not in (pair.index.names or []):
            raise PmlbenchError(
                f"cannot group blocks by {group!r}: the table's index levels are "
                f"{list(values.index.names)}"
            )
        pair = pair.groupby(level=group, sort=True).mean()
    merged = merge_near_ties(pair[[a, b]].to_numpy(dtype=np.float64))
    return merged[:, 0], merged[:, 1]


def pairwise_wilcoxon(
    values: pd.DataFrame,
    higher_is_better: bool,
    *,
    group: str | None = None,
    alpha: float = 0.05,
    method: str = "auto",
) -> pd.DataFrame:
    """One row per unordered pair of methods (columns of ``values``, in column order).

    Columns (:data:`PAIRWISE_COLUMNS`): ``n_datasets`` the blocks both methods have (after
    ``group``, see :func:`pair_values`); ``mean_a``/``mean_b`` their means over those
    blocks and ``mean_diff`` = mean_a - mean_b (raw, not direction-aware); ``wins``/``ties``/
    ``losses`` the blocks where a is better/equal/worse in the metric's direction; the
    signed-rank ``statistic`` (the smaller rank sum) and two-sided ``p``
    (:func:`pmlbench.stats.wilcoxon.wilcoxon_signed_rank`, zero differences split);
    ``p_holm`` Holm's adjustment over every tested pair of the table; ``significant``
    p_holm < alpha, and ``better`` the method the test leans to when significant (else "").
    A pair with no common block has n_datasets 0 and p, p_holm NaN; it is left out of
    Holm's family.
    """
    if not 0 < alpha < 1:
        raise PmlbenchError(f"alpha must lie in (0, 1), got {alpha}")
    methods = [str(m) for m in values.columns]
    if len(set(methods)) != len(methods):
        raise PmlbenchError(f"method names repeat in the comparison table: {methods}")
    rows = []
    for a, b in combinations(methods, 2):
        x, y = pair_values(values, a, b, group)
        row: dict[str, object] = {"method_a": a, "method_b": b, "n_datasets": len(x)}
        if len(x) == 0:
            nan = float("nan")
            row.update(mean_a=nan, mean_b=nan, mean_diff=nan, wins=0, ties=0, losses=0)
            row.update(statistic=nan, p=nan, _lean=0.0)
        else:
            result = wilcoxon_signed_rank(x, y, higher_is_better, method=method)
            row.update(
                mean_a=float(x.mean()),
                mean_b=float(y.mean()),
                mean_diff=float(np.mean(x - y)),
                wins=result.n_a_better,
                ties=result.n - result.n_a_better - result.n_b_better,
                losses=result.n_b_better,
                statistic=result.statistic,
                p=result.pvalue,
                _lean=result.rank_sum_a - result.rank_sum_b,
            )
        rows.append(row)
    frame = pd.DataFrame(rows, columns=[*PAIRWISE_COLUMNS[:11], "_lean"])
    p = frame["p"].to_numpy(dtype=np.float64)
    tested = ~np.isnan(p)
    adjusted = np.full(len(frame), np.nan)
    adjusted[tested] = adjust_pvalues(p[tested], "holm")
    frame["p_holm"] = adjusted
    frame["significant"] = frame["p_holm"] < alpha  # NaN compares False: untested
    lean = frame["_lean"].to_numpy()
    frame["better"] = np.where(
        frame["significant"] & (lean > 0),
        frame["method_a"],
        np.where(frame["significant"] & (lean < 0), frame["method_b"], ""),
    )
    return frame[PAIRWISE_COLUMNS]


def pairwise_cliques(names, average_ranks, pairwise: pd.DataFrame) -> list[tuple[str, ...]]:
    """Cliques of a critical-difference diagram from pairwise tests (the ``significant``
    column of :func:`pairwise_wilcoxon`): maximal runs of methods, in rank order, no two of
    which differ significantly. A pair missing from ``pairwise`` counts as not different."""
    different = {
        frozenset((a, b))
        for a, b, s in zip(
            pairwise["method_a"], pairwise["method_b"], pairwise["significant"], strict=True
        )
        if bool(s)
    }
    return nonsignificant_groups(
        list(names), average_ranks, lambda a, b: frozenset((a, b)) in different
    )
