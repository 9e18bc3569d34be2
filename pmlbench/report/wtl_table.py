"""The paper's Table 3: win/tie/loss of the reference against each baseline per metric, and
the per-dataset comparisons behind it with their effect sizes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd
from rich.table import Table

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
from pmlbench.stats.paired import TEST_NAMES
from pmlbench.stats.wtl import Comparisons

MISSING = "–"
COUNT_COLUMNS = ("win", "tie", "loss")


def describe_test(comparisons: Comparisons) -> str:
    """E.g. "two-sided paired t-test, alpha 0.05, Holm-corrected"."""
    text = (
        f"two-sided {TEST_NAMES[comparisons.test]} over matched splits, alpha {comparisons.alpha:g}"
    )
    if comparisons.correction == "holm" and comparisons.family == "pair":
        text += ", Holm-corrected within each method pair and metric over its PML datasets"
    elif comparisons.correction == "holm":
        text += (
            f", Holm-corrected over {int(comparisons.comparisons['pvalue'].notna().sum())} tests"
        )
    return text


class Grid(NamedTuple):
    """A win/tie/loss table: a row per metric (and ``total``), a column per baseline."""

    baselines: list[str]  # in the order of the frame
    metrics: list[str]  # in the order of the frame, ``total`` included
    counts: dict[tuple[str, str], tuple[int, ...]]  # (baseline, metric) -> the counts
    cells: dict[tuple[str, str], str]  # (baseline, metric) -> "win/tie/loss"

    def text(self, baseline: str, metric: str) -> str:
        """The cell of ``baseline`` and ``metric``: its counts joined by ``/``, ``–`` if none."""
        return self.cells.get((baseline, metric), MISSING)

    def latex(self, reference: str, caption: str, label: str) -> str:
        """The grid as a LaTeX tabular of ``reference`` against each baseline, ``total`` last
        in a block of its own; ``caption`` is LaTeX already."""
        body = [
            [latex_escape(metric_label(m)), *[self.text(b, m) for b in self.baselines]]
            for m in self.metrics
            if m != "total"
        ]
        total = [["total", *[self.text(b, "total") for b in self.baselines]]]
        return latex_tabular(
            [f"{reference} vs", *self.baselines],
            [(None, body), (None, total)],
            "l" + "c" * len(self.baselines),
            caption=caption,
            label=label,
        )


def grid(wtl: pd.DataFrame, columns: Sequence[str] = COUNT_COLUMNS) -> Grid:
    """The win/tie/loss grid of a frame with baseline, metric and count columns (``wtl.csv``;
    the Bayesian ``bayes_wtl.csv`` with ``columns`` win, tie, loss, undecided): what wtl.md,
    wtl.tex, the terminal, report.html and the leaderboard show."""
    counts: dict[tuple[str, str], tuple[int, ...]] = {}
    cells: dict[tuple[str, str], str] = {}
    for r in wtl.itertuples(index=False):
        values = [getattr(r, c) for c in columns]
        counts[(r.baseline, r.metric)] = tuple(int(v) for v in values)
        cells[(r.baseline, r.metric)] = "/".join(f"{v}" for v in values)
    return Grid(
        list(dict.fromkeys(wtl["baseline"])), list(dict.fromkeys(wtl["metric"])), counts, cells
    )


def metric_label(metric: str) -> str:
    """A row's label: the metric's name, or ``total``."""
    return "total" if metric == "total" else metric_name(metric)


def to_markdown(
    wtl: pd.DataFrame,
    comparisons: Comparisons,
    prepared: Prepared | None = None,
    digits: int = 3,
) -> str:
    """Table 3 and, with ``prepared``, every per-dataset comparison with its effect size."""
    table = grid(wtl)
    baselines = table.baselines
    rows = [[metric_label(m), *[table.text(b, m) for b in baselines]] for m in table.metrics]
    text = (
        f"# Table 3: win/tie/loss of {comparisons.reference} against each method\n\n"
        f"Per PML dataset (dataset x noise level) and metric: {describe_test(comparisons)}. "
        "A win means the reference is significantly better in the metric's direction.\n\n"
        + markdown_table(
            [f"{comparisons.reference} vs", *baselines], rows, ["l"] + ["r"] * len(baselines)
        )
    )
    if prepared is not None:
        text += comparisons_markdown(comparisons, prepared, digits)
    return text


def difference_text(difference: float, standard_error: float, digits: int = 3) -> str:
    """Mean difference ± its standard error, with as many decimals as show two significant
    digits of the standard error (at least ``digits``): "+0.0123 ± 0.0041"."""
    if not np.isfinite(difference):
        return MISSING
    places = digits
    if np.isfinite(standard_error) and standard_error > 0:
        places = min(max(digits, 1 - math.floor(math.log10(standard_error))), 10)
    text = f"{difference:+.{places}f}"
    if np.isfinite(standard_error):
        text += f" ± {standard_error:.{places}f}"
    return text


def cohens_d_text(value: float) -> str:
    """Cohen's d_z with two decimals; ±∞ when every split gives the same non-zero difference."""
    if np.isnan(value):
        return MISSING
    if np.isinf(value):
        return "+∞" if value > 0 else "−∞"
    return f"{value:+.2f}"


def p_text(value: float) -> str:
    return MISSING if not np.isfinite(value) else f"{value:.3g}"


def comparison_header(comparisons: Comparisons) -> list[str]:
    """Column names of the per-dataset comparison rows (:func:`comparison_rows`)."""
    header = ["dataset", "noise", "vs", "splits", "difference ± SE", "Cohen's d", "p"]
    if comparisons.correction == "holm":
        header.append("p (Holm)")
    return [*header, "outcome"]


def ordered_comparisons(comparisons: Comparisons, prepared: Prepared) -> pd.DataFrame:
    """The comparisons in report order: metric, PML dataset (row order of Table 2), baseline."""
    return in_report_order(comparisons.comparisons, prepared)


def in_report_order(frame: pd.DataFrame, prepared: Prepared) -> pd.DataFrame:
    """Rows with metric, dataset, level and baseline columns in report order: metric, PML
    dataset (row order of Table 2), baseline; rows outside the report are dropped."""
    metric = {m: i for i, m in enumerate(prepared.metrics)}
    block = {b: i for i, b in enumerate(prepared.blocks)}
    method = {m: i for i, m in enumerate(prepared.methods)}
    keys = pd.DataFrame(
        {
            "m": frame["metric"].map(metric),
            "b": [block.get(b) for b in zip(frame["dataset"], frame["level"], strict=True)],
            "k": frame["baseline"].map(method),
        },
        index=frame.index,
    )
    keys = keys.dropna().sort_values(["m", "b", "k"], kind="stable")
    return frame.loc[keys.index]


def comparison_rows(
    comparisons: Comparisons, frame: pd.DataFrame, digits: int = 3
) -> list[list[str]]:
    """Text cells of per-dataset comparisons: the mean difference (reference − baseline, on
    the metric's scale) ± its standard error (the test's denominator), Cohen's d_z, p."""
    holm = comparisons.correction == "holm"
    rows = []
    for r in frame.itertuples(index=False):
        row = [
            str(r.dataset),
            str(r.level),
            str(r.baseline),
            str(int(r.n)),
            difference_text(r.mean_difference, r.standard_error, digits),
            cohens_d_text(r.cohens_d),
            p_text(r.pvalue),
        ]
        if holm:
            row.append(p_text(r.p_adjusted))
        rows.append([*row, str(r.outcome)])
    return rows


def comparisons_markdown(comparisons: Comparisons, prepared: Prepared, digits: int = 3) -> str:
    """Per metric, every comparison of the reference with a baseline on a PML dataset."""
    frame = ordered_comparisons(comparisons, prepared)
    header = comparison_header(comparisons)
    parts = [
        f"\n## Per PML dataset: effect sizes beside the p-values\n\n"
        f"difference: mean of {comparisons.reference} − the other method over matched splits, "
        f"on the metric's scale, ± its standard error ({TEST_NAMES[comparisons.test]}'s "
        "denominator); Cohen's d: mean difference / standard deviation of the differences.\n"
    ]
    for metric in prepared.metrics:
        rows = comparison_rows(comparisons, frame[frame["metric"] == metric], digits)
        if not rows:
            continue
        parts.append(
            f"\n### {metric_name(metric)} {arrow(prepared.directions[metric])}\n\n"
            + markdown_table(
                header,
                [[markdown_escape(c) for c in row] for row in rows],
                _align(header),
            )
        )
    return "".join(parts)


def _align(header: Sequence[str]) -> list[str]:
    return ["l", "l", "l", *["r"] * (len(header) - 4), "l"]


def to_latex(wtl: pd.DataFrame, comparisons: Comparisons) -> str:
    caption = (
        f"Win/tie/loss of {latex_escape(comparisons.reference)} against each method "
        f"({latex_escape(describe_test(comparisons))})."
    )
    return grid(wtl).latex(comparisons.reference, caption, "tab:wtl")


def to_rich(wtl: pd.DataFrame, comparisons: Comparisons, width: int | None = None) -> list[Table]:
    """The win/tie/loss grid for the terminal, split into several tables (each repeating the
    metric column) where the baselines do not fit ``width`` characters."""
    table = grid(wtl)
    rows = [
        (
            [metric_label(metric)],
            [table.text(b, metric) for b in table.baselines],
            "bold" if metric == "total" else None,
        )
        for metric in table.metrics
    ]
    title = f"win/tie/loss of {comparisons.reference} ({describe_test(comparisons)})"
    return split_rich_table(title, ["metric"], table.baselines, rows, width)
