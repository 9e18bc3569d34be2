"""The paper's Table 3: win/tie/loss of the reference against each baseline per metric."""

from __future__ import annotations

import pandas as pd
from rich.table import Table

from pmlbench.report.render import latex_escape, latex_tabular, markdown_table, metric_name
from pmlbench.stats.paired import TEST_NAMES
from pmlbench.stats.wtl import Comparisons


def describe_test(comparisons: Comparisons) -> str:
    """E.g. "two-sided paired t-test, alpha 0.05, Holm-corrected"."""
    text = (
        f"two-sided {TEST_NAMES[comparisons.test]} over matched splits, alpha {comparisons.alpha:g}"
    )
    if comparisons.correction == "holm":
        text += (
            f", Holm-corrected over {int(comparisons.comparisons['pvalue'].notna().sum())} tests"
        )
    return text


def _grid(wtl: pd.DataFrame) -> tuple[list[str], list[str], dict]:
    baselines = list(dict.fromkeys(wtl["baseline"]))
    metrics = list(dict.fromkeys(wtl["metric"]))
    cells = {
        (r.baseline, r.metric): f"{r.win}/{r.tie}/{r.loss}" for r in wtl.itertuples(index=False)
    }
    return baselines, metrics, cells


def _label(metric: str) -> str:
    return "total" if metric == "total" else metric_name(metric)


def to_markdown(wtl: pd.DataFrame, comparisons: Comparisons) -> str:
    baselines, metrics, cells = _grid(wtl)
    rows = [[_label(m), *[cells.get((b, m), "–") for b in baselines]] for m in metrics]
    return (
        f"# Table 3: win/tie/loss of {comparisons.reference} against each method\n\n"
        f"Per PML dataset (dataset x noise level) and metric: {describe_test(comparisons)}. "
        "A win means the reference is significantly better in the metric's direction.\n\n"
        + markdown_table(
            [f"{comparisons.reference} vs", *baselines], rows, ["l"] + ["r"] * len(baselines)
        )
    )


def to_latex(wtl: pd.DataFrame, comparisons: Comparisons) -> str:
    baselines, metrics, cells = _grid(wtl)
    body = [
        [latex_escape(_label(m)), *[cells.get((b, m), "–") for b in baselines]]
        for m in metrics
        if m != "total"
    ]
    total = [["total", *[cells.get((b, "total"), "–") for b in baselines]]]
    caption = (
        f"Win/tie/loss of {latex_escape(comparisons.reference)} against each method "
        f"({latex_escape(describe_test(comparisons))})."
    )
    return latex_tabular(
        [f"{comparisons.reference} vs", *baselines],
        [(None, body), (None, total)],
        "l" + "c" * len(baselines),
        caption=caption,
        label="tab:wtl",
    )


def to_rich(wtl: pd.DataFrame, comparisons: Comparisons) -> Table:
    baselines, metrics, cells = _grid(wtl)
    table = Table(
        title=f"win/tie/loss of {comparisons.reference} ({describe_test(comparisons)})",
        title_justify="left",
    )
    table.add_column("metric")
    for baseline in baselines:
        table.add_column(baseline, justify="right")
    for metric in metrics:
        style = "bold" if metric == "total" else None
        table.add_row(
            _label(metric), *[cells.get((b, metric), "–") for b in baselines], style=style
        )
    return table
