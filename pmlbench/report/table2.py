"""The paper's Table 2: mean ± std of every metric per PML dataset and method.

Rows are PML datasets (dataset x noise level), columns methods, one block per metric. The
best mean of a row is bold, judged on the displayed (rounded) means in the metric's
direction, so that equal-looking numbers are bold together.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from rich.table import Table
from rich.text import Text

from pmlbench.report.prepare import Prepared
from pmlbench.report.render import (
    arrow,
    latex_escape,
    latex_tabular,
    markdown_cell,
    markdown_table,
    metric_name,
    split_rich_table,
)

SUMMARY_COLUMNS = ["metric", "dataset", "level", "method", "mean", "std", "n", "best"]
MISSING = "–"
NOT_APPLICABLE = "n/a"
HEADER = ("dataset", "noise")
LEGEND = "n/a: the method declined this dataset up front; –: no result"


def summarise(prepared: Prepared, digits: int = 3) -> pd.DataFrame:
    """Mean, sample std (ddof = 1) and count per metric, PML dataset and method; ``best`` marks
    the rounded mean that is best in the metric's direction (ties all True)."""
    grouped = prepared.records.groupby(["metric", "dataset", "level", "method"], sort=False)
    summary = (
        grouped["value"].agg(mean="mean", std=lambda v: v.std(ddof=1), n="count").reset_index()
    )
    rounded = summary["mean"].round(digits)
    higher = summary["metric"].map(prepared.directions)
    signed = rounded.where(higher, -rounded)
    best = signed.groupby([summary["metric"], summary["dataset"], summary["level"]]).transform(
        "max"
    )
    summary["best"] = signed == best
    order = {b: i for i, b in enumerate(prepared.blocks)}
    summary["_m"] = summary["metric"].map({m: i for i, m in enumerate(prepared.metrics)})
    summary["_b"] = [order[b] for b in zip(summary["dataset"], summary["level"], strict=True)]
    summary["_k"] = summary["method"].map({m: i for i, m in enumerate(prepared.methods)})
    summary = summary.sort_values(["_m", "_b", "_k"]).drop(columns=["_m", "_b", "_k"])
    return summary[SUMMARY_COLUMNS].reset_index(drop=True)


class Cell(NamedTuple):
    """One Table 2 cell as every rendering shows it."""

    mean: str  # the mean with ``digits`` decimals
    std: str  # the sample std with ``digits`` decimals, ``–`` from a single split
    best: bool  # the best rounded mean of its row in the metric's direction


def cells(summary: pd.DataFrame, digits: int) -> dict[tuple[str, str, str], dict[str, Cell]]:
    """(metric, dataset, level) -> method -> its :class:`Cell`, for every row of
    :func:`summarise`'s frame: the texts of table2.md, table2.tex, the terminal, report.html
    and the leaderboard."""
    found: dict[tuple[str, str, str], dict[str, Cell]] = {}
    for row in summary.itertuples(index=False):
        std = MISSING if np.isnan(row.std) else f"{row.std:.{digits}f}"
        found.setdefault((row.metric, row.dataset, row.level), {})[row.method] = Cell(
            f"{row.mean:.{digits}f}", std, bool(row.best)
        )
    return found


def markdown_text(cell: Cell) -> str:
    """A cell in Markdown: ``mean ± std``, in bold when it is the best of its row."""
    text = f"{cell.mean} ± {cell.std}"
    return f"**{text}**" if cell.best else text


def _rows(
    prepared: Prepared,
    summary: pd.DataFrame,
    digits: int,
    fmt: Callable[[Cell], Any],
    declined: frozenset[tuple[str, str, str]] = frozenset(),
) -> Iterator[tuple[str, list[list[Any]]]]:
    """Per metric, the rows [dataset, level, cell per method]; a cell without results is
    ``n/a`` where its method declined the dataset up front, ``–`` otherwise."""
    table = cells(summary, digits)
    for metric in prepared.metrics:
        rows = []
        for dataset, level in prepared.blocks:
            found = table.get((metric, dataset, level))
            if found is None:
                continue
            rows.append(
                [
                    dataset,
                    level,
                    *[
                        fmt(found[m])
                        if m in found
                        else NOT_APPLICABLE
                        if (m, dataset, level) in declined
                        else MISSING
                        for m in prepared.methods
                    ],
                ]
            )
        yield metric, rows


def to_markdown(
    prepared: Prepared,
    summary: pd.DataFrame,
    digits: int = 3,
    declined: frozenset[tuple[str, str, str]] = frozenset(),
) -> str:
    parts = ["# Table 2: mean ± std over splits (best per row in bold)\n"]
    if declined:
        parts.append(f"\n{LEGEND}.\n")
    header = [*HEADER, *prepared.methods]
    for metric, rows in _rows(prepared, summary, digits, markdown_text, declined):
        direction = "higher is better" if prepared.directions[metric] else "lower is better"
        parts.append(
            f"\n## {metric_name(metric)} {arrow(prepared.directions[metric])} ({direction})\n\n"
        )
        named = [[markdown_cell(r[0]), markdown_cell(r[1]), *r[2:]] for r in rows]
        parts.append(markdown_table(header, named, ["l", "l"] + ["r"] * len(prepared.methods)))
    return "".join(parts)


def to_latex(
    prepared: Prepared,
    summary: pd.DataFrame,
    digits: int = 3,
    declined: frozenset[tuple[str, str, str]] = frozenset(),
) -> str:
    def fmt(cell: Cell) -> str:
        text = f"{cell.mean}$\\pm${cell.std}" if cell.std != MISSING else cell.mean
        return rf"\textbf{{{text}}}" if cell.best else text

    blocks = []
    for metric, rows in _rows(prepared, summary, digits, fmt, declined):
        up = r"$\uparrow$" if prepared.directions[metric] else r"$\downarrow$"
        escaped = [[latex_escape(r[0]), latex_escape(r[1]), *r[2:]] for r in rows]
        blocks.append((rf"\textit{{{latex_escape(metric_name(metric))}}} {up}", escaped))
    return latex_tabular(
        [*HEADER, *prepared.methods],
        blocks,
        "ll" + "c" * len(prepared.methods),
        caption="Mean $\\pm$ std over splits; best per row in bold."
        + (f" {latex_escape(LEGEND)}." if declined else ""),
        label="tab:results",
    )


def to_rich(
    prepared: Prepared,
    summary: pd.DataFrame,
    digits: int = 3,
    width: int | None = None,
    declined: frozenset[tuple[str, str, str]] = frozenset(),
) -> list[Table]:
    """One terminal table per metric; where the methods do not fit ``width`` characters the
    table is split into several, each repeating the dataset and noise columns.

    ``declined`` holds (method, dataset, level) of cells whose method declined the dataset
    up front: shown as ``n/a`` rather than as missing."""

    def fmt(cell: Cell) -> str | Text:
        text = f"{cell.mean} ± {cell.std}"
        return Text(text, style="bold green") if cell.best else text

    tables = []
    for metric, rows in _rows(prepared, summary, digits, fmt, declined):
        tables += split_rich_table(
            f"{metric_name(metric)} {arrow(prepared.directions[metric])}",
            HEADER,
            prepared.methods,
            [(row[:2], row[2:], None) for row in rows],
            width,
        )
    return tables
