"""Win/tie/loss of a reference method against each other method (the paper's Table 3).

For every PML dataset (dataset x noise level), metric and baseline, the reference and the
baseline are paired by (seed, split); a two-sided paired test at ``alpha`` decides a win
(the reference is significantly better in the metric's direction), a loss (significantly
worse) or a tie. Splits only one of the two methods has are returned as ``unmatched`` so
that they can be reported; they never enter a test.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from pmlbench.errors import PmlbenchError
from pmlbench.stats.multiple import adjust_pvalues
from pmlbench.stats.paired import (
    TESTS,
    PairedTest,
    corrected_resampled_ttest_many,
    outcome,
    paired_ttest_many,
)

BLOCK = ["dataset", "level"]
PAIR = ["seed", "split"]
OUTCOMES = ("win", "tie", "loss")
UNTESTED = "untested"
COMPARISON_COLUMNS = [
    "baseline",
    "metric",
    "dataset",
    "level",
    "n",
    "reference_mean",
    "baseline_mean",
    "mean_difference",
    "statistic",
    "pvalue",
    "p_adjusted",
    "outcome",
]
UNMATCHED_COLUMNS = [
    "reference",
    "baseline",
    "metric",
    "dataset",
    "level",
    "seed",
    "split",
    "only_in",
]


@dataclass
class Comparisons:
    """Every paired comparison with the reference, and the splits that could not be paired."""

    reference: str
    comparisons: pd.DataFrame
    unmatched: pd.DataFrame
    test: str
    alpha: float
    correction: str


def _batched(
    test: str,
    ref: np.ndarray,
    base: np.ndarray,
    starts: np.ndarray,
    counts: np.ndarray,
    ratio: np.ndarray | None,
):
    """Test every group with >= 2 pairs; groups of equal size go to scipy in one call."""
    mean = np.full(len(counts), np.nan)
    statistic, pvalue = mean.copy(), mean.copy()
    for n in np.unique(counts[counts >= 2]):
        groups = np.flatnonzero(counts == n)
        rows = starts[groups, None] + np.arange(n)
        if test == "ttest":
            result = paired_ttest_many(ref[rows], base[rows])
        else:
            result = corrected_resampled_ttest_many(ref[rows], base[rows], ratio[groups])
        mean[groups], statistic[groups], pvalue[groups] = result
    return mean, statistic, pvalue


def compare_with_reference(
    records: pd.DataFrame,
    reference: str,
    directions: dict[str, bool],
    *,
    test: str = "ttest",
    alpha: float = 0.05,
    correction: str = "none",
    baselines: list[str] | None = None,
) -> Comparisons:
    """Pair the reference with every other method per PML dataset and metric, and test.

    ``records`` is tidy: dataset, level, method, seed, split, metric, value (and n_train,
    n_test for the corrected test), one row per key. ``directions`` maps each metric to
    higher_is_better. With ``correction="holm"`` the p-values of all tests in the table form
    one family. Comparisons with fewer than two matched splits are ``"untested"``.
    ``baselines`` orders (and selects) the methods compared; default: all others.
    """
    if test not in TESTS:
        raise PmlbenchError(f"unknown test {test!r}; use one of {list(TESTS)}")
    if not 0 < alpha < 1:
        raise PmlbenchError(f"alpha must lie in (0, 1), got {alpha}")
    methods = list(dict.fromkeys(records["method"]))
    if reference not in methods:
        raise PmlbenchError(
            f"reference method {reference!r} has no results; choose one of {methods}"
        )
    if test == "corrected" and not {"n_train", "n_test"} <= set(records.columns):
        raise PmlbenchError(
            "the corrected t-test needs n_train and n_test columns in "
            "results.csv; use --test ttest for these results"
        )
    key = ["metric", *BLOCK, *PAIR]
    wide = records.set_index([*key, "method"])["value"].unstack("method")
    index = wide.index
    codes, groups = pd.factorize(
        pd.MultiIndex.from_arrays([index.get_level_values(i) for i in range(3)])
    )
    ratio = None
    if test == "corrected":
        sizes = records.groupby(key)[["n_train", "n_test"]].first().reindex(index)
        ratio = (sizes["n_test"] / sizes["n_train"]).to_numpy(dtype=np.float64)
    ref_all = wide[reference].to_numpy(dtype=np.float64)
    has_ref = ~np.isnan(ref_all)
    frames, unmatched = [], []
    if baselines is None:
        baselines = [m for m in methods if m != reference]
    for baseline in baselines:
        if baseline not in wide.columns:
            raise PmlbenchError(f"baseline {baseline!r} has no results; choose among {methods}")
        base_all = wide[baseline].to_numpy(dtype=np.float64)
        has_base = ~np.isnan(base_all)
        lonely = np.flatnonzero(has_ref ^ has_base)
        if len(lonely):
            unmatched.append(
                pd.DataFrame(
                    {
                        "reference": reference,
                        "baseline": baseline,
                        **{name: index.get_level_values(name)[lonely] for name in key},
                        "only_in": np.where(has_ref[lonely], reference, baseline),
                    }
                )
            )
        both = np.flatnonzero(has_ref & has_base)
        order = both[np.argsort(codes[both], kind="stable")]
        counts = np.bincount(codes[order], minlength=len(groups))
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        ref, base = ref_all[order], base_all[order]
        group_ratio = None
        if ratio is not None:
            with np.errstate(invalid="ignore", divide="ignore"):
                group_ratio = (
                    np.bincount(codes[order], weights=ratio[order], minlength=len(groups)) / counts
                )
        mean_diff, statistic, pvalue = _batched(test, ref, base, starts, counts, group_ratio)
        with np.errstate(invalid="ignore", divide="ignore"):
            ref_mean = np.bincount(codes[order], weights=ref, minlength=len(groups)) / counts
            base_mean = np.bincount(codes[order], weights=base, minlength=len(groups)) / counts
        present = np.bincount(codes[has_ref | has_base], minlength=len(groups)) > 0
        frames.append(
            pd.DataFrame(
                {
                    "baseline": baseline,
                    "metric": groups.get_level_values(0),
                    "dataset": groups.get_level_values(1),
                    "level": groups.get_level_values(2),
                    "n": counts,
                    "reference_mean": ref_mean,
                    "baseline_mean": base_mean,
                    "mean_difference": mean_diff,
                    "statistic": statistic,
                    "pvalue": pvalue,
                }
            )[present]
        )
    comparisons = (
        pd.concat(frames, ignore_index=True)
        if frames
        else pd.DataFrame(columns=COMPARISON_COLUMNS[:-2])
    )
    tested = comparisons["pvalue"].notna().to_numpy()
    adjusted = np.full(len(comparisons), np.nan)
    adjusted[tested] = adjust_pvalues(comparisons["pvalue"].to_numpy()[tested], correction)
    comparisons["p_adjusted"] = adjusted
    comparisons["outcome"] = [
        outcome(
            PairedTest(
                int(row.n), float(row.mean_difference), float(row.statistic), float(row.pvalue)
            ),
            bool(row.p_adjusted < alpha),
            directions[row.metric],
        )
        if not np.isnan(row.pvalue)
        else UNTESTED
        for row in comparisons.itertuples(index=False)
    ]
    unmatched_frame = (
        pd.concat(unmatched, ignore_index=True)
        if unmatched
        else pd.DataFrame(columns=UNMATCHED_COLUMNS)
    )
    return Comparisons(
        reference,
        comparisons[COMPARISON_COLUMNS],
        unmatched_frame[UNMATCHED_COLUMNS],
        test,
        alpha,
        correction,
    )


def win_tie_loss(comparisons: pd.DataFrame, metrics: list[str] | None = None) -> pd.DataFrame:
    """Counts per baseline and metric plus a ``metric="total"`` row per baseline.

    Columns exactly: baseline, metric, win, tie, loss. Untested comparisons are not counted.
    """
    metrics = list(dict.fromkeys(comparisons["metric"])) if metrics is None else metrics
    rows = []
    for baseline in dict.fromkeys(comparisons["baseline"]):
        mine = comparisons[comparisons["baseline"] == baseline]
        total = dict.fromkeys(OUTCOMES, 0)
        for metric in metrics:
            counts = mine.loc[mine["metric"] == metric, "outcome"].value_counts()
            row = {o: int(counts.get(o, 0)) for o in OUTCOMES}
            rows.append({"baseline": baseline, "metric": metric, **row})
            total = {o: total[o] + row[o] for o in OUTCOMES}
        rows.append({"baseline": baseline, "metric": "total", **total})
    return pd.DataFrame(rows, columns=["baseline", "metric", *OUTCOMES])
