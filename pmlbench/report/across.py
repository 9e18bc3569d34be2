"""Tests across datasets: Friedman with post-hoc tests, and Wilcoxon against the reference.

A block is a dataset (``blocks="dataset"``, the default: the mean over the noise levels
and splits the compared methods all have, so that a dataset at three noise rates counts once)
or a PML dataset (``blocks="level"``: dataset x noise level, the mean over its splits). The
Friedman test ranks the blocks where every method has a result; the others are named in the
report's notes. A Wilcoxon or Bayesian test of two methods uses every block both have.

Means are compared with a tolerance (:func:`pmlbench.stats.ranks.merge_near_ties`): block
means that differ only in the order of their additions are the same result, so equal error
counts tie in the ranks, the Friedman test and the pairwise tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from pmlbench.report.prepare import Prepared
from pmlbench.stats.bayesian import bayesian_outcome, bayesian_signed_rank
from pmlbench.stats.friedman import (
    FriedmanResult,
    control_posthoc,
    friedman_test,
    nemenyi_critical_difference,
    pairwise_posthoc,
)
from pmlbench.stats.multiple import adjust_pvalues
from pmlbench.stats.ranks import TIE_TOLERANCE, merge_near_ties
from pmlbench.stats.wilcoxon import wilcoxon_signed_rank

WILCOXON_COLUMNS = [
    "baseline",
    "metric",
    "n_datasets",
    "reference_better",
    "baseline_better",
    "statistic",
    "pvalue",
    "p_adjusted",
    "outcome",
]


BAYES_ACROSS_COLUMNS = [
    "baseline",
    "metric",
    "n_datasets",
    "reference_mean",
    "baseline_mean",
    "mean_difference",
    "rope",
    "p_reference_better",
    "p_equivalent",
    "p_baseline_better",
    "outcome",
]


@dataclass
class MetricRanks:
    """Friedman test and post-hoc tests of one metric."""

    metric: str
    friedman: FriedmanResult
    critical_difference: float
    pairwise: pd.DataFrame
    control: pd.DataFrame | None
    dropped_blocks: list[tuple[str, str]]
    # what one Friedman block is: "dataset" or "level" (dataset x noise level)
    blocks: str = "level"
    # the blocks ranked, by name: datasets, or "dataset (level)" for PML datasets
    ranked: list[str] = field(default_factory=list)


def block_means(prepared: Prepared, metric: str) -> pd.DataFrame:
    """Blocks (dataset, level) x methods table of mean values over splits; the means of a
    block that agree to :data:`~pmlbench.stats.ranks.TIE_TOLERANCE` are made equal."""
    rows = prepared.records[prepared.records["metric"] == metric]
    table = rows.groupby(["dataset", "level", "method"])["value"].mean().unstack("method")
    blocks = [b for b in prepared.blocks if b in table.index]
    table = table.reindex(
        index=pd.MultiIndex.from_tuples(blocks, names=["dataset", "level"])
        if blocks
        else table.index[:0],
        columns=[m for m in prepared.methods if m in table.columns],
    )
    return _merged(table)


def _merged(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with the values of each row that agree to the tie tolerance made equal."""
    if table.empty:
        return table
    return pd.DataFrame(merge_near_ties(table.to_numpy()), index=table.index, columns=table.columns)


def ranked_table(
    prepared: Prepared, metric: str, blocks: str = "level", methods: list[str] | None = None
) -> tuple[pd.DataFrame, list[tuple[str, str]]]:
    """The blocks x methods table the Friedman test ranks, and the PML datasets left out.

    ``methods`` (default: every method with a result) are the columns; the PML datasets
    where one of them has no result are left out, and with ``blocks="dataset"`` the others
    are averaged per dataset (merging near ties again, :func:`block_means`)."""
    table = block_means(prepared, metric)
    if methods is not None:
        table = table[[m for m in table.columns if m in methods]]
    complete = table.dropna(how="any")
    dropped = [b for b in table.index if b not in complete.index]
    if blocks == "dataset":
        complete = _merged(complete.groupby(level="dataset", sort=True).mean())
    return complete, dropped


def rank_definition(blocks: str) -> str:
    """The report's one definition of a method's average rank, stated once (stats.md, the
    page's ranks section) and used by every table, diagram and sentence that shows one."""
    unit = (
        "PML dataset (its mean over noise levels and splits)"
        if blocks == "dataset"
        else "PML dataset and noise level (its mean over splits)"
    )
    return (
        f"Average rank: the mean over blocks of a method's rank within each block, one block "
        f"per {unit}, over the blocks where every method has a result; 1 = best, means that "
        f"agree to {TIE_TOLERANCE:g} tie and ties share the average rank. These are the "
        "Friedman test's ranks; Table 2's footer, the ranks table, the summary and the "
        "critical-difference diagrams show the same numbers."
    )


def iman_davenport_text(f: Any, digits: int = 3) -> str:
    """``Iman-Davenport F_F = ...`` for a Friedman result; when every block ranks the methods
    alike F_F divides by zero, and the text says so instead of printing ``inf``."""
    if not np.isfinite(f.f_statistic):
        return "Iman-Davenport F_F unbounded (every block ranks the methods the same way)"
    return f"Iman-Davenport F_F = {f.f_statistic:.{digits}f}"


def block_names(table: pd.DataFrame) -> list[str]:
    """The blocks of a ranked table by name: a dataset, or "dataset (level)"."""
    if table.index.nlevels == 1:
        return [str(d) for d in table.index]
    return [f"{d} ({lv})" for d, lv in table.index]


def rank_tests(
    prepared: Prepared,
    alpha: float,
    reference: str | None,
    notes: list[str],
    blocks: str = "level",
) -> dict[str, MetricRanks]:
    """Friedman + Nemenyi/Holm post-hoc per metric over complete blocks; with
    ``blocks="dataset"`` the complete PML datasets are averaged per dataset first."""
    out = {}
    for metric in prepared.metrics:
        complete, dropped = ranked_table(prepared, metric, blocks)
        unit = "datasets" if blocks == "dataset" else "PML datasets"
        if complete.shape[1] < 2 or len(complete) < 2:
            notes.append(
                f"{metric}: no Friedman test ({complete.shape[1]} methods on "
                f"{len(complete)} {unit} with results for every method; "
                "needs at least 2 of each)"
            )
            continue
        if dropped:
            notes.append(
                f"{metric}: the Friedman test leaves out {len(dropped)} PML datasets "
                f"where some method has no result: " + ", ".join(f"{d} ({lv})" for d, lv in dropped)
            )
        methods = list(complete.columns)
        result = friedman_test(complete.to_numpy(), prepared.directions[metric], methods)
        cd = nemenyi_critical_difference(result.k, result.n_blocks, alpha)
        control = (
            control_posthoc(result, reference, alpha)
            if reference is not None and reference in methods
            else None
        )
        out[metric] = MetricRanks(
            metric,
            result,
            cd,
            pairwise_posthoc(result, alpha),
            control,
            dropped,
            blocks,
            block_names(complete),
        )
    return out


def ranks_frame(ranks: dict[str, MetricRanks]) -> pd.DataFrame:
    rows = [
        {
            "metric": m,
            "method": method,
            "average_rank": float(rank),
            "n_datasets": r.friedman.n_blocks,
        }
        for m, r in ranks.items()
        for method, rank in zip(r.friedman.methods, r.friedman.average_ranks, strict=True)
    ]
    return pd.DataFrame(rows, columns=["metric", "method", "average_rank", "n_datasets"])


def friedman_frame(ranks: dict[str, MetricRanks], alpha: float) -> pd.DataFrame:
    rows = [
        {
            "metric": m,
            "k": r.friedman.k,
            "n_datasets": r.friedman.n_blocks,
            "chi2": r.friedman.chi2,
            "pvalue": r.friedman.pvalue,
            "f_statistic": r.friedman.f_statistic,
            "f_pvalue": r.friedman.f_pvalue,
            "alpha": alpha,
            "nemenyi_cd": r.critical_difference,
        }
        for m, r in ranks.items()
    ]
    return pd.DataFrame(
        rows,
        columns=[
            "metric",
            "k",
            "n_datasets",
            "chi2",
            "pvalue",
            "f_statistic",
            "f_pvalue",
            "alpha",
            "nemenyi_cd",
        ],
    )


def _pairs_across_datasets(prepared: Prepared, reference: str, blocks: str = "level"):
    """(metric, baseline, per-block means of reference and baseline) for every metric and
    other method, over the blocks where both have results (``blocks="dataset"``: the PML
    datasets both have, averaged per dataset)."""
    for metric in prepared.metrics:
        table = block_means(prepared, metric)
        if reference not in table.columns:
            continue
        for baseline in (m for m in table.columns if m != reference):
            pair = table[[reference, baseline]].dropna()
            if blocks == "dataset":
                pair = _merged(pair.groupby(level="dataset", sort=True).mean())
            if len(pair):
                yield metric, baseline, pair


def wilcoxon_tests(
    prepared: Prepared, reference: str, alpha: float, correction: str, blocks: str = "level"
) -> pd.DataFrame:
    """Signed-rank test of the reference against each method per metric across datasets;
    with ``correction="holm"`` all these tests form one family."""
    rows = []
    for metric, baseline, pair in _pairs_across_datasets(prepared, reference, blocks):
        result = wilcoxon_signed_rank(
            pair[reference].to_numpy(), pair[baseline].to_numpy(), prepared.directions[metric]
        )
        rows.append(
            {
                "baseline": baseline,
                "metric": metric,
                "n_datasets": result.n,
                "reference_better": result.n_a_better,
                "baseline_better": result.n_b_better,
                "statistic": result.statistic,
                "pvalue": result.pvalue,
                "_lean": result.rank_sum_a - result.rank_sum_b,
            }
        )
    frame = pd.DataFrame(rows, columns=[*WILCOXON_COLUMNS[:7], "_lean"])
    frame["p_adjusted"] = adjust_pvalues(frame["pvalue"].to_numpy(), correction)
    frame["outcome"] = np.where(
        frame["p_adjusted"] >= alpha, "tie", np.where(frame["_lean"] > 0, "win", "loss")
    )
    return frame[WILCOXON_COLUMNS]


def bayesian_across(
    prepared: Prepared,
    reference: str,
    rope: float,
    threshold: float,
    seed: int = 0,
    blocks: str = "level",
) -> pd.DataFrame:
    """Bayesian signed-rank test of the reference against each method per metric across PML
    datasets, on the per-dataset means of the PML datasets where both have results (the
    pairs the Wilcoxon test uses). Each test draws from its own generator seeded with
    ``seed``, so a table is reproducible and no test depends on which others ran."""
    rows = []
    for metric, baseline, pair in _pairs_across_datasets(prepared, reference, blocks):
        ref, base = pair[reference].to_numpy(), pair[baseline].to_numpy()
        result = bayesian_signed_rank(
            ref, base, rope=rope, higher_is_better=prepared.directions[metric], seed=seed
        )
        rows.append(
            {
                "baseline": baseline,
                "metric": metric,
                "n_datasets": result.n,
                "reference_mean": float(ref.mean()),
                "baseline_mean": float(base.mean()),
                "mean_difference": result.mean_difference,
                "rope": result.rope,
                "p_reference_better": result.p_a_better,
                "p_equivalent": result.p_equivalent,
                "p_baseline_better": result.p_b_better,
                "outcome": bayesian_outcome(
                    result.p_a_better, result.p_equivalent, result.p_b_better, threshold
                ),
            }
        )
    return pd.DataFrame(rows, columns=BAYES_ACROSS_COLUMNS)
