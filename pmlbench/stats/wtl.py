"""Win/tie/loss of a reference method against each other method (the paper's Table 3).

For every PML dataset (dataset x noise level), metric and baseline, the reference and the
baseline are paired by (seed, split); a two-sided paired test at ``alpha`` decides a win
(the reference is significantly better in the metric's direction), a loss (significantly
worse) or a tie. Splits only one of the two methods has are returned as ``unmatched`` so
that they can be reported; they never enter a test.

With Holm's correction the family is every test of the table (``family="table"``) or the
tests of one baseline and metric over its PML datasets (``family="pair"``).
:func:`dataset_outcomes` then counts a dataset once, whatever its number of noise levels
(:data:`DATASET_RULE`), instead of each noise level as independent evidence.
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
    effect_sizes_many,
    outcome,
    paired_ttest_many,
)

BLOCK = ["dataset", "level"]
PAIR = ["seed", "split"]
OUTCOMES = ("win", "tie", "loss")
UNTESTED = "untested"
# what one family of Holm's correction is: every test of the table, or the tests of one
# baseline and metric (over its PML datasets)
FAMILIES = ("table", "pair")
FAMILY_COLUMNS = {"table": [], "pair": ["baseline", "metric"]}
DATASET_RULE = (
    "a dataset is a win when more than half of its tested noise levels are wins and none "
    "is a loss, a loss when more than half are losses and none is a win, and a tie "
    "otherwise"
)
DATASET_COLUMNS = [
    "baseline",
    "metric",
    "dataset",
    "levels",
    "level_win",
    "level_tie",
    "level_loss",
    "outcome",
]
COMPARISON_COLUMNS = [
    "baseline",
    "metric",
    "dataset",
    "level",
    "n",
    "reference_mean",
    "baseline_mean",
    "mean_difference",
    "standard_error",
    "cohens_d",
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
    family: str = "table"  # Holm's family (FAMILIES), with correction="holm"


def _batched(
    test: str,
    ref: np.ndarray,
    base: np.ndarray,
    starts: np.ndarray,
    counts: np.ndarray,
    ratio: np.ndarray | None,
):
    """Test every group with >= 2 pairs; groups of equal size go to scipy in one call.

    Returns mean difference, standard error, Cohen's d, statistic and p-value per group.
    """
    mean = np.full(len(counts), np.nan)
    se, cohens_d, statistic, pvalue = mean.copy(), mean.copy(), mean.copy(), mean.copy()
    for n in np.unique(counts[counts >= 2]):
        groups = np.flatnonzero(counts == n)
        rows = starts[groups, None] + np.arange(n)
        if test == "ttest":
            result = paired_ttest_many(ref[rows], base[rows])
            sizes = effect_sizes_many(ref[rows], base[rows])
        else:
            assert ratio is not None  # the corrected test is only asked for with sizes
            result = corrected_resampled_ttest_many(ref[rows], base[rows], ratio[groups])
            sizes = effect_sizes_many(ref[rows], base[rows], ratio[groups])
        mean[groups], statistic[groups], pvalue[groups] = result
        se[groups], cohens_d[groups] = sizes[1], sizes[2]
    return mean, se, cohens_d, statistic, pvalue


@dataclass
class PairedGroups:
    """The matched splits of the reference and one baseline, grouped by (metric, dataset,
    level): group g holds ``ref[starts[g] : starts[g] + counts[g]]`` and the same rows of
    ``base``; ``ratio`` is the mean n_test/n_train of its splits (None when not asked for)."""

    baseline: str
    groups: pd.MultiIndex
    counts: np.ndarray
    starts: np.ndarray
    ref: np.ndarray
    base: np.ndarray
    ratio: np.ndarray | None
    reference_mean: np.ndarray
    baseline_mean: np.ndarray
    present: np.ndarray  # groups where either method has a result
    unmatched: pd.DataFrame | None

    def frame(self, columns: dict[str, np.ndarray]) -> pd.DataFrame:
        """One row per present group: baseline, metric, dataset, level, n, both means and
        ``columns``."""
        return pd.DataFrame(
            {
                "baseline": self.baseline,
                "metric": self.groups.get_level_values(0),
                "dataset": self.groups.get_level_values(1),
                "level": self.groups.get_level_values(2),
                "n": self.counts,
                "reference_mean": self.reference_mean,
                "baseline_mean": self.baseline_mean,
                **columns,
            }
        )[self.present]


def paired_groups(
    records: pd.DataFrame,
    reference: str,
    baselines: list[str] | None = None,
    *,
    sizes: bool = False,
    sizes_missing: str = (
        "the corrected t-test needs n_train and n_test columns in results.csv; use --test "
        "ttest for these results"
    ),
) -> list[PairedGroups]:
    """Pair the reference with each baseline by (seed, split) per metric and PML dataset.

    ``records`` is tidy (see :func:`compare_with_reference`); with ``sizes`` its n_train and
    n_test columns give each group's test/train ratio (``sizes_missing`` is the error when
    they are missing).
    """
    methods = list(dict.fromkeys(records["method"]))
    if reference not in methods:
        raise PmlbenchError(
            f"reference method {reference!r} has no results; choose one of {methods}"
        )
    if sizes and not {"n_train", "n_test"} <= set(records.columns):
        raise PmlbenchError(sizes_missing)
    key = ["metric", *BLOCK, *PAIR]
    wide = records.set_index([*key, "method"])["value"].unstack("method")
    index = wide.index
    codes, groups = pd.factorize(
        pd.MultiIndex.from_arrays([index.get_level_values(i) for i in range(3)])
    )
    ratio = None
    if sizes:
        split_sizes = records.groupby(key)[["n_train", "n_test"]].first().reindex(index)
        ratio = (split_sizes["n_test"] / split_sizes["n_train"]).to_numpy(dtype=np.float64)
    ref_all = wide[reference].to_numpy(dtype=np.float64)
    has_ref = ~np.isnan(ref_all)
    if baselines is None:
        baselines = [m for m in methods if m != reference]
    out = []
    for baseline in baselines:
        if baseline not in wide.columns:
            raise PmlbenchError(f"baseline {baseline!r} has no results; choose among {methods}")
        base_all = wide[baseline].to_numpy(dtype=np.float64)
        has_base = ~np.isnan(base_all)
        lonely = np.flatnonzero(has_ref ^ has_base)
        unmatched = None
        if len(lonely):
            unmatched = pd.DataFrame(
                {
                    "reference": reference,
                    "baseline": baseline,
                    **{name: index.get_level_values(name)[lonely] for name in key},
                    "only_in": np.where(has_ref[lonely], reference, baseline),
                }
            )
        both = np.flatnonzero(has_ref & has_base)
        order = both[np.argsort(codes[both], kind="stable")]
        counts = np.bincount(codes[order], minlength=len(groups))
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        ref, base = ref_all[order], base_all[order]
        with np.errstate(invalid="ignore", divide="ignore"):
            group_ratio = None
            if ratio is not None:
                group_ratio = (
                    np.bincount(codes[order], weights=ratio[order], minlength=len(groups)) / counts
                )
            ref_mean = np.bincount(codes[order], weights=ref, minlength=len(groups)) / counts
            base_mean = np.bincount(codes[order], weights=base, minlength=len(groups)) / counts
        present = np.bincount(codes[has_ref | has_base], minlength=len(groups)) > 0
        out.append(
            PairedGroups(
                baseline,
                groups,
                counts,
                starts,
                ref,
                base,
                group_ratio,
                ref_mean,
                base_mean,
                present,
                unmatched,
            )
        )
    return out


def compare_with_reference(
    records: pd.DataFrame,
    reference: str,
    directions: dict[str, bool],
    *,
    test: str = "ttest",
    alpha: float = 0.05,
    correction: str = "none",
    baselines: list[str] | None = None,
    family: str = "table",
) -> Comparisons:
    """Pair the reference with every other method per PML dataset and metric, and test.

    ``records`` is tidy: dataset, level, method, seed, split, metric, value (and n_train,
    n_test for the corrected test), one row per key. ``directions`` maps each metric to
    higher_is_better. With ``correction="holm"`` the p-values of all tests in the table form
    one family (``family="table"``), or those of each baseline and metric over its PML
    datasets one family each (``family="pair"``). Comparisons with fewer than two matched
    splits are ``"untested"``. Beside the test, every comparison carries its effect size
    (see ``paired.effect_sizes_many``): the ``standard_error`` of the mean difference (the
    test's t denominator) and ``cohens_d``.
    ``baselines`` orders (and selects) the methods compared; default: all others.
    """
    if test not in TESTS:
        raise PmlbenchError(f"unknown test {test!r}; use one of {list(TESTS)}")
    if not 0 < alpha < 1:
        raise PmlbenchError(f"alpha must lie in (0, 1), got {alpha}")
    if family not in FAMILIES:
        raise PmlbenchError(f"unknown Holm family {family!r}; use one of {list(FAMILIES)}")
    frames, unmatched = [], []
    for pair in paired_groups(records, reference, baselines, sizes=test == "corrected"):
        if pair.unmatched is not None:
            unmatched.append(pair.unmatched)
        mean_diff, se, cohens_d, statistic, pvalue = _batched(
            test, pair.ref, pair.base, pair.starts, pair.counts, pair.ratio
        )
        frames.append(
            pair.frame(
                {
                    "mean_difference": mean_diff,
                    "standard_error": se,
                    "cohens_d": cohens_d,
                    "statistic": statistic,
                    "pvalue": pvalue,
                }
            )
        )
    comparisons = (
        pd.concat(frames, ignore_index=True)
        if frames
        else pd.DataFrame(columns=COMPARISON_COLUMNS[:-2])
    )
    comparisons["p_adjusted"] = adjust_within(comparisons, correction, family)
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
        family,
    )


def adjust_within(comparisons: pd.DataFrame, correction: str, family: str) -> np.ndarray:
    """The adjusted p-value of every comparison (NaN where untested): ``correction`` applied
    to each family of tested comparisons (:data:`FAMILIES`)."""
    pvalues = comparisons["pvalue"].to_numpy(dtype=np.float64)
    adjusted = np.full(len(comparisons), np.nan)
    tested = ~np.isnan(pvalues)
    columns = FAMILY_COLUMNS[family]
    if not columns:
        adjusted[tested] = adjust_pvalues(pvalues[tested], correction)
        return adjusted
    keys = comparisons[columns].astype(str).agg("\x1f".join, axis=1).to_numpy()
    for key in dict.fromkeys(keys[tested]):
        rows = np.flatnonzero(tested & (keys == key))
        adjusted[rows] = adjust_pvalues(pvalues[rows], correction)
    return adjusted


def dataset_outcome(outcomes) -> str:
    """One dataset's outcome from those of its noise levels (:data:`DATASET_RULE`);
    untested levels do not count, and a dataset with none tested is untested."""
    tested = [o for o in outcomes if o in OUTCOMES]
    if not tested:
        return UNTESTED
    wins, losses = tested.count("win"), tested.count("loss")
    if 2 * wins > len(tested) and losses == 0:
        return "win"
    if 2 * losses > len(tested) and wins == 0:
        return "loss"
    return "tie"


def dataset_outcomes(comparisons: pd.DataFrame) -> pd.DataFrame:
    """The per-PML-dataset comparisons of :func:`compare_with_reference`, one row per
    baseline, metric and dataset: its tested noise levels, their wins, ties and losses, and
    the dataset's outcome (:func:`dataset_outcome`). Columns: :data:`DATASET_COLUMNS`."""
    rows = []
    for (baseline, metric, dataset), group in comparisons.groupby(
        ["baseline", "metric", "dataset"], sort=False
    ):
        outcomes = list(group["outcome"])
        rows.append(
            {
                "baseline": baseline,
                "metric": metric,
                "dataset": dataset,
                "levels": sum(o in OUTCOMES for o in outcomes),
                "level_win": outcomes.count("win"),
                "level_tie": outcomes.count("tie"),
                "level_loss": outcomes.count("loss"),
                "outcome": dataset_outcome(outcomes),
            }
        )
    return pd.DataFrame(rows, columns=DATASET_COLUMNS)


def win_tie_loss(comparisons: pd.DataFrame, metrics: list[str] | None = None) -> pd.DataFrame:
    """Counts per baseline and metric plus a ``metric="total"`` row per baseline.

    Columns exactly: baseline, metric, win, tie, loss. Untested comparisons are not counted.
    """
    return count_outcomes(comparisons, OUTCOMES, metrics)


def count_outcomes(
    comparisons: pd.DataFrame, outcomes: tuple[str, ...], metrics: list[str] | None = None
) -> pd.DataFrame:
    """How often each of ``outcomes`` occurs per baseline and metric, plus a
    ``metric="total"`` row per baseline; other outcomes (e.g. untested) are not counted."""
    metrics = list(dict.fromkeys(comparisons["metric"])) if metrics is None else metrics
    rows = []
    for baseline in dict.fromkeys(comparisons["baseline"]):
        mine = comparisons[comparisons["baseline"] == baseline]
        total = dict.fromkeys(outcomes, 0)
        for metric in metrics:
            counts = mine.loc[mine["metric"] == metric, "outcome"].value_counts()
            row = {o: int(counts.get(o, 0)) for o in outcomes}
            rows.append({"baseline": baseline, "metric": metric, **row})
            total = {o: total[o] + row[o] for o in outcomes}
        rows.append({"baseline": baseline, "metric": "total", **total})
    return pd.DataFrame(rows, columns=["baseline", "metric", *outcomes])
