"""Every pair of methods across datasets: pairwise.csv and the multi-comparison matrix.

For each metric and unordered pair of methods, the Wilcoxon signed-rank test over datasets
with Holm's correction over all pairs of that metric (:mod:`pmlbench.stats.pairwise`). Blocks
(``--blocks``):

- ``dataset`` (default): one value per dataset and method, the mean over the noise levels
  (and their splits) both methods of the pair have. A dataset at three noise rates is one
  block, not three: the same data counted three times would inflate N and shrink p.
- ``level``: one block per dataset x noise level (the paper's PML datasets), labelled as such.

With ``--pairwise-by-level`` the same tests run separately at each noise level
(pairwise_by_level.csv, one Holm family per metric and level).

The matrix (Ismail-Fawaz et al., 2023) shows, for row method r and column method c, the mean
of r - c over the blocks both have, r's wins/ties/losses against c and the Holm-adjusted p;
a pair that differs significantly is marked.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd
from rich.table import Table

from pmlbench.errors import PmlbenchError
from pmlbench.report.across import block_means
from pmlbench.report.prepare import Prepared
from pmlbench.report.render import markdown_escape, markdown_table, metric_name, split_rich_table
from pmlbench.stats.pairwise import PAIRWISE_COLUMNS, pairwise_wilcoxon

BLOCKS = ("dataset", "level")
BLOCK_LABELS = {
    "dataset": "dataset (mean over its noise levels and splits)",
    "level": "dataset x noise level",
}
ALL_LEVELS = "all"
COLUMNS = [
    "metric",
    "method_a",
    "method_b",
    "n_datasets",
    "mean_diff",
    "wins",
    "ties",
    "losses",
    "p",
    "p_holm",
    "significant",
    "better",
    "mean_a",
    "mean_b",
    "statistic",
    "blocks",
    "level",
]
MISSING = "–"
TEST_NAME = "two-sided Wilcoxon signed-rank test, Holm-corrected over all pairs of a metric"


def check_blocks(blocks: str) -> str:
    if blocks not in BLOCKS:
        raise PmlbenchError(f"unknown --blocks {blocks!r}; use one of {list(BLOCKS)}")
    return blocks


def group_of(blocks: str) -> str | None:
    """The index level blocks are averaged over before a test (None: every row a block)."""
    return "dataset" if check_blocks(blocks) == "dataset" else None


def _frame(
    table: pd.DataFrame, metric: str, higher: bool, blocks: str, level: str, alpha: float
) -> pd.DataFrame:
    tests = pairwise_wilcoxon(
        table, higher, group=group_of(blocks) if level == ALL_LEVELS else None, alpha=alpha
    )
    tests.insert(0, "metric", metric)
    label = BLOCK_LABELS[blocks] if level == ALL_LEVELS else f"dataset at noise level {level}"
    return tests.assign(blocks=label, level=level)[COLUMNS]


def pairwise_tests(
    prepared: Prepared, blocks: str = "dataset", alpha: float = 0.05
) -> pd.DataFrame:
    """pairwise.csv: every metric x unordered pair of methods (columns: :data:`COLUMNS`)."""
    check_blocks(blocks)
    frames = [
        _frame(block_means(prepared, m), m, prepared.directions[m], blocks, ALL_LEVELS, alpha)
        for m in prepared.metrics
    ]
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)


def pairwise_by_level(prepared: Prepared, alpha: float = 0.05) -> pd.DataFrame:
    """pairwise_by_level.csv: the tests at each noise level on its own (blocks: datasets)."""
    frames = []
    levels = list(dict.fromkeys(level for _, level in prepared.blocks))
    for metric in prepared.metrics:
        table = block_means(prepared, metric)
        for level in levels:
            rows = table[table.index.get_level_values("level") == level]
            if len(rows):
                frames.append(
                    _frame(rows, metric, prepared.directions[metric], "level", level, alpha)
                )
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)


# ---------------------------------------------------------------------------- the matrix


def _oriented(frame: pd.DataFrame, metric: str) -> dict[tuple[str, str], pd.Series]:
    """(row, column) -> the test of that pair, seen from the row method."""
    cells: dict[tuple[str, str], pd.Series] = {}
    for _, t in frame[frame["metric"] == metric].iterrows():
        cells[(t["method_a"], t["method_b"])] = t
        flipped = t.copy()
        flipped["mean_diff"] = -t["mean_diff"]
        flipped["wins"], flipped["losses"] = t["losses"], t["wins"]
        cells[(t["method_b"], t["method_a"])] = flipped
    return cells


def _cell(t: pd.Series | None, digits: int) -> tuple[str, bool]:
    if t is None or int(t["n_datasets"]) == 0:
        return MISSING, False
    p = float(t["p_holm"])
    text = (
        f"{float(t['mean_diff']):+.{digits}f} {int(t['wins'])}/{int(t['ties'])}/"
        f"{int(t['losses'])} p={p:.2g}"
    )
    return text, bool(t["significant"])


def matrix_order(frame: pd.DataFrame, metric: str, higher: bool) -> list[str]:
    """Methods best first by their mean over all pairs' blocks (the matrix's order)."""
    rows = frame[frame["metric"] == metric]
    methods = list(dict.fromkeys([*rows["method_a"], *rows["method_b"]]))
    wins = {m: 0.0 for m in methods}
    for t in rows.itertuples(index=False):
        wins[t.method_a] += t.wins - t.losses
        wins[t.method_b] += t.losses - t.wins
    # net wins over all pairs; equal counts keep the input order (stable sort)
    return sorted(methods, key=lambda m: -wins[m])


class Matrix(NamedTuple):
    """The multi-comparison matrix of one metric: methods best first, and per (row, column)
    pair the cell text (mean of row - column, the row's wins/ties/losses, Holm-adjusted p;
    ``–`` without a common block) and whether the pair differs significantly."""

    order: list[str]
    cells: dict[tuple[str, str], tuple[str, bool]]

    def cell(self, row: str, column: str) -> tuple[str, bool]:
        """(text, significant) of a cell; the diagonal is empty."""
        return ("", False) if row == column else self.cells[(row, column)]


def matrix(frame: pd.DataFrame, metric: str, higher: bool, digits: int = 3) -> Matrix:
    """One metric's matrix, as pairwise.md, the terminal, report.html and the leaderboard
    show it."""
    order = matrix_order(frame, metric, higher)
    tests = _oriented(frame, metric)
    cells = {(r, c): _cell(tests.get((r, c)), digits) for r in order for c in order if r != c}
    return Matrix(order, cells)


def describe(frame: pd.DataFrame, alpha: float) -> str:
    blocks = frame["blocks"].iloc[0] if len(frame) else BLOCK_LABELS["dataset"]
    return (
        f"Every pair of methods, {TEST_NAME}, alpha {alpha:g}; one block per {blocks}; a pair "
        "uses every block both methods have (n in pairwise.csv). Cell (row, column): mean of "
        "row - column, the row's wins/ties/losses in the metric's direction, Holm-adjusted p; "
        "significant pairs in bold."
    )


def matrix_markdown(frame: pd.DataFrame, metric: str, higher: bool, digits: int = 3) -> str:
    """The multi-comparison matrix of one metric as a pipe table."""
    table = matrix(frame, metric, higher, digits)
    order = table.order
    if len(order) < 2:
        return ""
    rows = []
    for r in order:
        row = [markdown_escape(r)]
        for c in order:
            text, significant = table.cell(r, c)
            row.append(f"**{text}**" if significant else text)
        rows.append(row)
    return markdown_table(["", *order], rows, ["l"] + ["r"] * len(order))


def to_markdown(frame: pd.DataFrame, prepared: Prepared, alpha: float, digits: int = 3) -> str:
    """pairwise.md: the matrix of every metric."""
    parts = ["# Pairwise comparisons across datasets\n\n", describe(frame, alpha) + "\n"]
    for metric in prepared.metrics:
        text = matrix_markdown(frame, metric, prepared.directions[metric], digits)
        if text:
            parts.append(f"\n## {metric_name(metric)}\n\n{text}")
    return "".join(parts)


def by_level_markdown(frame: pd.DataFrame, prepared: Prepared, alpha: float, digits: int) -> str:
    """pairwise_by_level.md: one matrix per metric and noise level."""
    parts = [
        "# Pairwise comparisons at each noise level\n\n",
        f"Per noise level, blocks are datasets; {TEST_NAME} within each level, alpha "
        f"{alpha:g}. Cells as in pairwise.md.\n",
    ]
    for level in dict.fromkeys(frame["level"]):
        rows = frame[frame["level"] == level]
        for metric in prepared.metrics:
            text = matrix_markdown(rows, metric, prepared.directions[metric], digits)
            if text:
                parts.append(f"\n## {metric_name(metric)}, noise level {level}\n\n{text}")
    return "".join(parts)


def to_rich(
    frame: pd.DataFrame, prepared: Prepared, digits: int = 3, width: int | None = None
) -> list[Table]:
    """The matrices in the terminal, split to fit the console."""
    from rich.text import Text

    tables: list[Table] = []
    for metric in prepared.metrics:
        table = matrix(frame, metric, prepared.directions[metric], digits)
        order = table.order
        if len(order) < 2:
            continue
        rows = []
        for r in order:
            values: list[str | Text] = []
            for c in order:
                text, significant = table.cell(r, c)
                values.append(Text(text, style="bold") if significant else text)
            rows.append(([r], values, None))
        title = (
            f"{metric_name(metric)}: pairwise Wilcoxon over datasets, Holm-adjusted "
            "(row - column, row's W/T/L, p; bold: significant)"
        )
        tables += split_rich_table(title, [""], order, rows, width)
    return tables


def to_html(frame: pd.DataFrame, prepared: Prepared, alpha: float, digits: int = 3) -> str:
    """The matrices as static HTML tables (report.html's "Pairwise" section body)."""
    parts = [f"<p>{html.escape(describe(frame, alpha))}</p>"]
    for metric in prepared.metrics:
        table = matrix(frame, metric, prepared.directions[metric], digits)
        order = table.order
        if len(order) < 2:
            continue
        head = "".join(f'<th class="num">{html.escape(m)}</th>' for m in order)
        body = []
        for r in order:
            tds = []
            for c in order:
                text, significant = table.cell(r, c)
                text = html.escape(text)
                tds.append(
                    f'<td class="num"><b>{text}</b></td>'
                    if significant
                    else f'<td class="num">{text}</td>'
                )
            body.append(f"<tr><th>{html.escape(r)}</th>{''.join(tds)}</tr>")
        # the page's table style (report.css: .block, .scroll, table.data), as the tables
        # report.js draws
        parts.append(
            f'<div class="block"><div class="block-head"><h3>{html.escape(metric_name(metric))}'
            f'</h3></div><div class="scroll"><table class="data pairwise"><thead><tr><th></th>'
            f"{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div></div>"
        )
    return "".join(parts)


def reference_pairs(
    frame: pd.DataFrame, metric: str, reference: str
) -> tuple[list[str], list[str]]:
    """The methods the reference is significantly better / worse than (pairwise Holm)."""
    rows = frame[(frame["metric"] == metric) & frame["significant"].astype(bool)]
    mine = rows[(rows["method_a"] == reference) | (rows["method_b"] == reference)]
    other = np.where(mine["method_a"] == reference, mine["method_b"], mine["method_a"])
    better = [o for o, b in zip(other, mine["better"], strict=True) if b == reference]
    worse = [o for o, b in zip(other, mine["better"], strict=True) if b != reference]
    return better, worse


__all__: Sequence[str] = [
    "BLOCKS",
    "COLUMNS",
    "PAIRWISE_COLUMNS",
    "matrix_markdown",
    "pairwise_by_level",
    "pairwise_tests",
    "reference_pairs",
    "to_html",
    "to_markdown",
    "to_rich",
]
