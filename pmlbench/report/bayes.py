"""Bayesian comparisons of the reference with every other method (``--bayesian``).

Per PML dataset the correlated Bayesian t-test over the matched splits, across PML datasets
the Bayesian signed-rank test on the per-dataset means, both with a region of practical
equivalence of half-width ``rope`` on the metric's scale (pmlbench.stats.bayesian). The
Bayesian win/tie/loss counts a win, tie or loss only where its posterior probability is at
least ``threshold``; the other comparisons are "undecided" and counted apart.

Written as bayes.{md,tex,csv} (the probabilities; bayes_across.csv holds the signed-rank
tests) and bayes_wtl.{md,tex,csv} (the counts).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from rich.table import Table

from pmlbench.report.across import bayesian_across
from pmlbench.report.prepare import Prepared
from pmlbench.report.render import (
    arrow,
    latex_escape,
    latex_tabular,
    markdown_escape,
    markdown_table,
    metric_name,
    split_rich_table,
)
from pmlbench.report.wtl_table import grid, in_report_order, metric_label
from pmlbench.stats.bayesian import bayesian_comparisons, bayesian_win_tie_loss

MISSING = "–"
# the counts of bayes_wtl.csv, as wtl_table.grid reads them
OUTCOME_COLUMNS = ("win", "tie", "loss", "undecided")


@dataclass
class BayesianResults:
    """The Bayesian comparisons of one report.

    Attributes:
        reference: the method compared with every other one.
        rope: half-width of the region of practical equivalence, on each metric's scale.
        threshold: posterior probability a win, tie or loss needs.
        per_dataset: correlated Bayesian t-tests (pmlbench.stats.bayesian.COMPARISON_COLUMNS).
        across: Bayesian signed-rank tests (pmlbench.report.across.BAYES_ACROSS_COLUMNS).
        wtl: counts per baseline and metric plus totals: win, tie, loss, undecided.
    """

    reference: str
    rope: float
    threshold: float
    per_dataset: pd.DataFrame
    across: pd.DataFrame
    wtl: pd.DataFrame


def bayesian_results(
    prepared: Prepared, reference: str, rope: float, threshold: float, blocks: str = "level"
) -> BayesianResults:
    """Run the Bayesian tests of ``reference`` against every other method; ``blocks`` is
    what one block of the signed-rank test across datasets is (report/across.py)."""
    per_dataset = bayesian_comparisons(
        prepared.records,
        reference,
        prepared.directions,
        rope=rope,
        threshold=threshold,
        baselines=[m for m in prepared.methods if m != reference],
    )
    return BayesianResults(
        reference,
        rope,
        threshold,
        per_dataset,
        bayesian_across(prepared, reference, rope, threshold, blocks=blocks),
        bayesian_win_tie_loss(per_dataset, prepared.metrics),
    )


def describe(bayes: BayesianResults) -> str:
    """E.g. "correlated Bayesian t-test over matched splits, ROPE ±0.01, P >= 0.95"."""
    return (
        f"correlated Bayesian t-test over matched splits, ROPE ±{bayes.rope:g} on the "
        f"metric's scale, decided at posterior probability >= {bayes.threshold:g}"
    )


def probability_text(value: float) -> str:
    return MISSING if not np.isfinite(value) else f"{value:.3f}"


# ---------------------------------------------------------------------------- win/tie/loss


def wtl_markdown(bayes: BayesianResults) -> str:
    table = grid(bayes.wtl, OUTCOME_COLUMNS)
    baselines = table.baselines
    rows = [[metric_label(m), *[table.text(b, m) for b in baselines]] for m in table.metrics]
    return (
        f"# Bayesian win/tie/loss/undecided of {bayes.reference} against each method\n\n"
        f"Per PML dataset (dataset x noise level) and metric: {describe(bayes)}. A win means "
        f"P({bayes.reference} better by more than the ROPE) >= {bayes.threshold:g}, a loss "
        f"the same for the other method, a tie P(practically equivalent) >= "
        f"{bayes.threshold:g}; undecided: none of the three is that probable (the data do "
        "not settle the question). Comparisons with fewer than 2 matched splits are not "
        "counted.\n\n"
        + markdown_table(
            [f"{bayes.reference} vs", *baselines], rows, ["l"] + ["r"] * len(baselines)
        )
    )


def wtl_latex(bayes: BayesianResults) -> str:
    caption = (
        f"Bayesian win/tie/loss/undecided of {latex_escape(bayes.reference)} against each "
        f"method ({latex_escape(describe(bayes))})."
    )
    return grid(bayes.wtl, OUTCOME_COLUMNS).latex(bayes.reference, caption, "tab:bayes-wtl")


def wtl_rich(bayes: BayesianResults, width: int | None = None) -> list[Table]:
    """The Bayesian win/tie/loss/undecided grid for the terminal, split into several tables
    where the baselines do not fit ``width`` characters."""
    table = grid(bayes.wtl, OUTCOME_COLUMNS)
    rows = [
        (
            [metric_label(metric)],
            [table.text(b, metric) for b in table.baselines],
            "bold" if metric == "total" else None,
        )
        for metric in table.metrics
    ]
    title = (
        f"Bayesian win/tie/loss/undecided of {bayes.reference} (ROPE ±{bayes.rope:g}, "
        f"P >= {bayes.threshold:g})"
    )
    return split_rich_table(title, ["metric"], table.baselines, rows, width)


# ---------------------------------------------------------------------------- probabilities

ACROSS_HEADER = [
    "vs",
    "metric",
    "datasets",
    "mean difference",
    "P(reference better)",
    "P(equivalent)",
    "P(other better)",
    "outcome",
]
PER_DATASET_HEADER = [
    "dataset",
    "noise",
    "vs",
    "splits",
    "mean difference",
    "P(reference better)",
    "P(equivalent)",
    "P(other better)",
    "outcome",
]


def difference_text(value: float, digits: int) -> str:
    return MISSING if not np.isfinite(value) else f"{value:+.{digits + 1}f}"


def across_rows(bayes: BayesianResults, digits: int = 3) -> list[list[str]]:
    return [
        [
            str(r.baseline),
            metric_name(r.metric),
            str(int(r.n_datasets)),
            difference_text(r.mean_difference, digits),
            probability_text(r.p_reference_better),
            probability_text(r.p_equivalent),
            probability_text(r.p_baseline_better),
            str(r.outcome),
        ]
        for r in bayes.across.itertuples(index=False)
    ]


def ordered_per_dataset(bayes: BayesianResults, prepared: Prepared) -> pd.DataFrame:
    """The per-dataset tests in report order: metric, PML dataset, baseline."""
    return in_report_order(bayes.per_dataset, prepared)


def per_dataset_rows(frame: pd.DataFrame, digits: int = 3) -> list[list[str]]:
    return [
        [
            str(r.dataset),
            str(r.level),
            str(r.baseline),
            str(int(r.n)),
            difference_text(r.mean_difference, digits),
            probability_text(r.p_reference_better),
            probability_text(r.p_equivalent),
            probability_text(r.p_baseline_better),
            str(r.outcome),
        ]
        for r in frame.itertuples(index=False)
    ]


def _intro(bayes: BayesianResults) -> str:
    return (
        f"Posterior probabilities that {bayes.reference} is better than the other method by "
        f"more than the ROPE (±{bayes.rope:g} on the metric's scale, in its direction), that "
        "the two are practically equivalent, and that the other method is better (Benavoli "
        "et al., JMLR 2017). mean difference: reference − other, on the metric's scale. "
        f"outcome: the conclusion with probability >= {bayes.threshold:g}, else undecided.\n"
    )


def to_markdown(bayes: BayesianResults, prepared: Prepared, digits: int = 3) -> str:
    parts = [f"# Bayesian comparisons of {bayes.reference}\n\n", _intro(bayes)]
    if len(bayes.across):
        parts.append(
            "\n## Across PML datasets: Bayesian signed-rank test\n\n"
            "On the mean over splits of each PML dataset both methods have; prior strength "
            "0.5 at a zero difference, 50,000 Monte Carlo draws (seed 0).\n\n"
        )
        parts.append(
            markdown_table(
                ACROSS_HEADER,
                [[markdown_escape(c) for c in row] for row in across_rows(bayes, digits)],
                ["l", "l", "r", "r", "r", "r", "r", "l"],
            )
        )
    parts.append(
        "\n## Per PML dataset: correlated Bayesian t-test\n\n"
        "Over the matched splits, with the correlation of overlapping training sets "
        "rho = n_test / (n_test + n_train) (Corani & Benavoli 2015).\n"
    )
    frame = ordered_per_dataset(bayes, prepared)
    for metric in prepared.metrics:
        rows = per_dataset_rows(frame[frame["metric"] == metric], digits)
        if rows:
            parts.append(
                f"\n### {metric_name(metric)} {arrow(prepared.directions[metric])}\n\n"
                + markdown_table(
                    PER_DATASET_HEADER,
                    [[markdown_escape(c) for c in row] for row in rows],
                    ["l", "l", "l", "r", "r", "r", "r", "r", "l"],
                )
            )
    return "".join(parts)


def to_latex(bayes: BayesianResults, prepared: Prepared, digits: int = 3) -> str:
    """Two booktabs tables: the signed-rank tests and the per-dataset t-tests."""
    parts = []
    if len(bayes.across):
        parts.append(
            latex_tabular(
                ACROSS_HEADER,
                [(None, [[latex_escape(c) for c in row] for row in across_rows(bayes, digits)])],
                "llrrrrrl",
                caption=latex_escape(
                    f"Bayesian signed-rank test of {bayes.reference} across datasets "
                    f"(ROPE ±{bayes.rope:g})."
                ),
                label="tab:bayes-across",
            )
        )
    frame = ordered_per_dataset(bayes, prepared)
    blocks = []
    for metric in prepared.metrics:
        rows = per_dataset_rows(frame[frame["metric"] == metric], digits)
        if rows:
            up = r"$\uparrow$" if prepared.directions[metric] else r"$\downarrow$"
            blocks.append(
                (
                    rf"\textit{{{latex_escape(metric_name(metric))}}} {up}",
                    [[latex_escape(c) for c in row] for row in rows],
                )
            )
    if blocks:
        parts.append(
            latex_tabular(
                PER_DATASET_HEADER,
                blocks,
                "lllrrrrrl",
                caption=latex_escape(
                    f"Correlated Bayesian t-test of {bayes.reference} per PML dataset "
                    f"(ROPE ±{bayes.rope:g})."
                ),
                label="tab:bayes",
            )
        )
    return "\n".join(parts)
