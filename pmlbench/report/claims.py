"""What the leaderboard claims, computed from a :class:`~pmlbench.report.model.Report`: the
pools its ranks and leaders come from, each method's coverage, the Bayesian signed-rank
comparisons behind any claim of equivalence, the reference's win/tie/loss counted once per
dataset under Holm's correction, and the power of the pairwise tests.

- **Rank pools.** The Friedman ranks need every ranked method on every ranked dataset. The
  *all methods* pool ranks every method over the datasets where all of them have a result
  (:attr:`Report.ranks`); methods that decline the larger datasets shrink it to the small
  ones. The *full coverage* pool ranks the methods with a result on every dataset over all
  of them, so that a lead earned on the small datasets only shows.
- **Coverage.** Per method: the datasets and PML datasets (dataset x noise level) with
  results, those it declined up front (n/a) and the budget caps named in its reasons.
- **Equivalence.** A test that does not reject says nothing about equality. The page calls
  two methods practically equivalent only where the Bayesian signed-rank test over datasets
  (Benavoli et al., JMLR 2017; :func:`pmlbench.stats.bayesian.bayesian_signed_rank`) puts
  at least ``threshold`` of its posterior inside the region of practical equivalence (ROPE).
  It compares the reference and the control with every other method.
- **Win/tie/loss.** The reference against each method per PML dataset, Holm-corrected
  within each method pair and metric over its PML datasets, then one outcome per dataset
  (:data:`pmlbench.stats.wtl.DATASET_RULE`), so that a dataset at three noise levels is one
  piece of evidence, not three.
- **Power.** With N datasets the exact Wilcoxon signed-rank test cannot give a p below
  2^(1-N); Holm's correction over m pairs rejects its first pair only below alpha/m.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pmlbench.report.across import bayesian_across, block_names, ranked_table
from pmlbench.report.model import Report
from pmlbench.stats.bayesian import DEFAULT_THRESHOLD
from pmlbench.stats.friedman import FriedmanResult, friedman_test
from pmlbench.stats.wilcoxon import wilcoxon_signed_rank
from pmlbench.stats.wtl import (
    Comparisons,
    compare_with_reference,
    dataset_outcomes,
    win_tie_loss,
)

CONTROL = "ridge"  # least squares on the candidates: a control, not a PML method
ALL_METHODS = "all methods"
FULL_COVERAGE = "full coverage"
# an option of a method named in a reason for declining: the budget cap that lifts it
_CAP = re.compile(r"\bmethod\.([A-Za-z_][A-Za-z0-9_]*)")
_RANK_TIE = 1e-9  # average ranks this close are the same rank


@dataclass
class Pool:
    """A set of methods ranked together, and per metric the Friedman test over its blocks.

    Attributes:
        name: :data:`ALL_METHODS` or :data:`FULL_COVERAGE`.
        methods: the methods ranked (over every metric).
        ranks: metric -> the Friedman test (average ranks, N blocks).
        ranked: metric -> the blocks ranked, by name (datasets, or "dataset (level)").
    """

    name: str
    methods: list[str]
    ranks: dict[str, FriedmanResult]
    ranked: dict[str, list[str]]

    def datasets(self) -> list[str] | None:
        """The blocks ranked when every metric ranks the same ones, else None."""
        lists = list(dict.fromkeys(tuple(v) for v in self.ranked.values()))
        return list(lists[0]) if len(lists) == 1 else None

    def leaders(self, metric: str) -> tuple[list[str], float]:
        """The methods with the best average rank of ``metric`` (several when tied), and
        that rank."""
        result = self.ranks[metric]
        best = float(np.min(result.average_ranks))
        return [
            m
            for m, r in zip(result.methods, result.average_ranks, strict=True)
            if r - best <= _RANK_TIE
        ], best


def all_methods_pool(report: Report) -> Pool | None:
    """Every method ranked over the blocks where all have a result (the report's ranks)."""
    if not report.ranks:
        return None
    methods = list(dict.fromkeys(m for r in report.ranks.values() for m in r.friedman.methods))
    return Pool(
        ALL_METHODS,
        methods,
        {m: r.friedman for m, r in report.ranks.items()},
        {m: list(r.ranked) for m, r in report.ranks.items()},
    )


def full_coverage_methods(report: Report) -> list[str]:
    """The methods with a result on every PML dataset of the report, in every metric."""
    p = report.prepared
    have = report.table2[report.table2["n"] > 0]
    cells = set(zip(have["metric"], have["dataset"], have["level"], have["method"], strict=True))
    return [
        m
        for m in p.methods
        if all((metric, d, lv, m) in cells for metric in p.metrics for d, lv in p.blocks)
    ]


def full_coverage_pool(report: Report) -> Pool | None:
    """The methods with a result on every dataset, ranked over all of them; None when fewer
    than two methods cover every dataset, or when they are all the methods (then the
    all-methods pool is this one)."""
    methods = full_coverage_methods(report)
    everyone = set(report.prepared.methods)
    if len(methods) < 2 or set(methods) == everyone:
        return None
    blocks = report.options.blocks
    ranks, ranked = {}, {}
    for metric in report.prepared.metrics:
        table, _ = ranked_table(report.prepared, metric, blocks, methods)
        if len(table) < 2:
            continue
        ranks[metric] = friedman_test(
            table.to_numpy(), report.prepared.directions[metric], list(table.columns)
        )
        ranked[metric] = block_names(table)
    return Pool(FULL_COVERAGE, methods, ranks, ranked) if ranks else None


def pools(report: Report) -> list[Pool]:
    """The rank pools the page shows: all methods, and full coverage where it differs."""
    return [p for p in (all_methods_pool(report), full_coverage_pool(report)) if p is not None]


# ---------------------------------------------------------------------------- coverage

COVERAGE_COLUMNS = [
    "method",
    "datasets",
    "datasets_done",
    "blocks",
    "blocks_done",
    "declined",
    "missing",
    "caps",
    "reasons",
]


def cap_options(reason: str) -> list[str]:
    """The method options a reason for declining names (``method.max_order``), in order."""
    return list(dict.fromkeys(f"method.{name}" for name in _CAP.findall(str(reason))))


def _by_dataset(blocks: list[tuple[str, str]], all_levels: dict[str, list[str]]) -> list[str]:
    """PML datasets by name: a dataset whose every level is listed by its name alone."""
    levels: dict[str, list[str]] = {}
    for dataset, level in blocks:
        levels.setdefault(dataset, []).append(level)
    return [
        d if len(lv) == len(all_levels[d]) else f"{d} ({', '.join(lv)})" for d, lv in levels.items()
    ]


def coverage(report: Report, blocks: list[tuple[str, str]], methods: list[str]) -> pd.DataFrame:
    """One row per method (columns :data:`COVERAGE_COLUMNS`): of the ``blocks`` (dataset,
    level) the page shows, the datasets with a result on every level and the PML datasets
    with a result; the PML datasets it declined up front (by name, a dataset whose every
    level it declined by its name alone) and those with no result for another reason; the
    budget caps its reasons name, and the reasons."""
    have = report.table2[report.table2["n"] > 0]
    done = set(zip(have["dataset"], have["level"], have["method"], strict=True))
    all_levels: dict[str, list[str]] = {}
    for dataset, level in blocks:
        all_levels.setdefault(dataset, []).append(level)
    unfinished = report.unfinished
    declined_rows = unfinished[unfinished["status"] == "not_applicable"]
    rows = []
    for method in methods:
        finished = [b for b in blocks if (*b, method) in done]
        declined = [b for b in blocks if (method, *b) in report.declined and b not in finished]
        missing = [b for b in blocks if b not in finished and b not in declined]
        full = [d for d, lv in all_levels.items() if all((d, x) in finished for x in lv)]
        reasons = list(dict.fromkeys(declined_rows.loc[declined_rows["method"] == method, "error"]))
        caps = list(dict.fromkeys(c for r in reasons for c in cap_options(r)))
        rows.append(
            {
                "method": method,
                "datasets": len(all_levels),
                "datasets_done": len(full),
                "blocks": len(blocks),
                "blocks_done": len(finished),
                "declined": _by_dataset(declined, all_levels),
                "missing": _by_dataset(missing, all_levels),
                "caps": caps,
                "reasons": reasons,
            }
        )
    return pd.DataFrame(rows, columns=COVERAGE_COLUMNS)


# ---------------------------------------------------------------------------- Bayesian

BAYES_COLUMNS = [
    "reference",
    "baseline",
    "metric",
    "n_datasets",
    "rope",
    "p_reference_better",
    "p_equivalent",
    "p_baseline_better",
    "outcome",
]


def bayesian_references(report: Report) -> list[str]:
    """The methods the page compares with every other one by the Bayesian signed-rank test:
    the reference and the control, those that have results."""
    reference = report.comparisons.reference if report.comparisons is not None else None
    found = [m for m in (reference, CONTROL) if m is not None and m in report.prepared.methods]
    return list(dict.fromkeys(found))


def bayesian_pairs(report: Report, threshold: float = DEFAULT_THRESHOLD) -> pd.DataFrame:
    """The Bayesian signed-rank test over datasets (ROPE ``report.options.rope``) of each of
    :func:`bayesian_references` against every other method, per metric; the blocks are those
    of the report's tests across datasets (``--blocks``). Columns: :data:`BAYES_COLUMNS`."""
    frames = []
    for reference in bayesian_references(report):
        frame = bayesian_across(
            report.prepared,
            reference,
            report.options.rope,
            threshold,
            blocks=report.options.blocks,
        )
        frames.append(frame.assign(reference=reference))
    if not frames:
        return pd.DataFrame(columns=BAYES_COLUMNS)
    return pd.concat(frames, ignore_index=True)[BAYES_COLUMNS]


# ---------------------------------------------------------------------------- win/tie/loss


@dataclass
class DatasetWtl:
    """The reference's win/tie/loss, Holm-corrected within each method pair and metric.

    Attributes:
        comparisons: the tests per PML dataset (family ``"pair"``).
        levels: win/tie/loss counted over PML datasets (``win_tie_loss`` of them).
        datasets: one row per baseline, metric and dataset (``dataset_outcomes``).
        counts: win/tie/loss counted over datasets.
    """

    comparisons: Comparisons
    levels: pd.DataFrame
    datasets: pd.DataFrame
    counts: pd.DataFrame


def dataset_wtl(report: Report) -> DatasetWtl | None:
    """The leaderboard's win/tie/loss of the reference (None without a reference): the
    test ``ReportOptions.leaderboard_test`` per PML dataset, Holm within each method pair and
    metric over its PML datasets, and one outcome per dataset."""
    if report.comparisons is None:
        return None
    p, options = report.prepared, report.options
    comparisons = compare_with_reference(
        p.records,
        report.comparisons.reference,
        p.directions,
        test=options.leaderboard_test,
        alpha=options.alpha,
        correction="holm",
        family="pair",
        baselines=[m for m in p.methods if m != report.comparisons.reference],
    )
    datasets = dataset_outcomes(comparisons.comparisons)
    return DatasetWtl(
        comparisons,
        win_tie_loss(comparisons.comparisons, p.metrics),
        datasets,
        win_tie_loss(datasets, p.metrics),
    )


# ---------------------------------------------------------------------------- power


@dataclass(frozen=True)
class Power:
    """How far the pairwise Wilcoxon-Holm tests of one metric can reject.

    Attributes:
        pairs: the pairs tested (Holm's family).
        smallest_n: the fewest datasets a tested pair has.
        best_p: the smallest p the test can give with ``smallest_n`` datasets (every
            difference in one direction).
        first_threshold: alpha / pairs, below which Holm rejects its first pair.
        weak_pairs: pairs whose best reachable p is not below ``first_threshold``.
        weak_n: the most datasets such a pair has (0 without one).
    """

    pairs: int
    smallest_n: int
    best_p: float
    first_threshold: float
    weak_pairs: int
    weak_n: int


def best_reachable_p(n: int) -> float:
    """The smallest two-sided p of the Wilcoxon signed-rank test over ``n`` datasets (as
    :func:`~pmlbench.stats.wilcoxon.wilcoxon_signed_rank` computes it): every difference in
    one direction, no ties; 2^(1-n) for the exact test."""
    if n < 1:
        return 1.0
    return wilcoxon_signed_rank(np.arange(1.0, n + 1), np.zeros(n), True).pvalue


def power(report: Report, metric: str) -> Power | None:
    """The reach of the pairwise tests of ``metric`` (None without tested pairs)."""
    table = report.pairwise
    if table is None or table.empty:
        return None
    rows = table[(table["metric"] == metric) & table["p_holm"].notna()]
    if rows.empty:
        return None
    sizes = rows["n_datasets"].astype(int)
    threshold = report.options.alpha / len(rows)
    best = {n: best_reachable_p(n) for n in sorted(set(sizes))}
    weak = [n for n in sizes if best[n] >= threshold]
    smallest = int(sizes.min())
    return Power(len(rows), smallest, best[smallest], threshold, len(weak), max(weak, default=0))


# ---------------------------------------------------------------------------- all of it


@dataclass
class Claims:
    """Everything :mod:`pmlbench.report.findings` and the leaderboard state beside the
    report's own tables."""

    pools: list[Pool]
    bayes: pd.DataFrame
    threshold: float
    wtl: DatasetWtl | None
    power: dict[str, Power]


def compute_claims(report: Report, threshold: float = DEFAULT_THRESHOLD) -> Claims:
    """The pools, the Bayesian comparisons, the win/tie/loss per dataset and the power of
    the pairwise tests of ``report``."""
    found = {m: power(report, m) for m in report.prepared.metrics}
    return Claims(
        pools(report),
        bayesian_pairs(report, threshold),
        threshold,
        dataset_wtl(report),
        {m: v for m, v in found.items() if v is not None},
    )


__all__ = [
    "ALL_METHODS",
    "CONTROL",
    "Claims",
    "FULL_COVERAGE",
    "DatasetWtl",
    "Pool",
    "Power",
    "bayesian_pairs",
    "bayesian_references",
    "best_reachable_p",
    "cap_options",
    "compute_claims",
    "coverage",
    "dataset_wtl",
    "full_coverage_methods",
    "pools",
    "power",
]
