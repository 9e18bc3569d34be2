"""The disambiguation table: training-side measures of methods that expose their confidence
per training candidate (``disambiguation_scores_``, :mod:`pmlbench.metrics.disambiguation`).

The measures are columns of results.csv (one value per split, repeated on the split's metric
rows), not metrics: they are shown in their own table (disambiguation.{md,csv}) and never
enter Table 2, the ranks or any test of the test metrics.
"""

from __future__ import annotations

import html
from typing import NamedTuple

import numpy as np
import pandas as pd

from pmlbench.metrics.disambiguation import MEASURES
from pmlbench.report.prepare import Prepared
from pmlbench.report.render import markdown_escape, markdown_table

MISSING = "–"
NOT_APPLICABLE = "n/a"
COLUMNS = ["measure", "dataset", "level", "method", "n", "mean", "std"]
NAMES = {
    "disambiguation_auc": "disambiguation AUC",
    "disambiguation_precision": "disambiguation precision",
}
EXPLANATION = (
    "Training-side measures, computed on the training part of each split from the method's "
    "confidence per candidate label (disambiguation_scores_) against the clean labels: "
    "disambiguation AUC = AUC of that confidence separating true labels from false "
    "candidates over all training candidates (0.5: random); disambiguation precision = "
    "share of true labels among each instance's t most confident candidates, t its number "
    "of true labels. Higher is better; mean ± std over splits. They are not test metrics "
    "and enter no rank or test. n/a: the method declined the dataset up front; –: no value "
    "(no result, or a result without the measure)."
)


def disambiguation_frame(prepared: Prepared) -> pd.DataFrame:
    """Mean and std (ddof = 1) over splits per measure, PML dataset and method; methods
    without the hook have no rows."""
    records = prepared.records
    measures = [m for m in MEASURES if m in records.columns]
    if not measures:
        return pd.DataFrame(columns=COLUMNS)
    key = ["dataset", "level", "method", "seed", "split"]
    splits = records.drop_duplicates(key)[[*key, *measures]]
    rows = []
    for measure in measures:
        values = pd.to_numeric(splits[measure], errors="coerce")
        present = splits.assign(value=values).dropna(subset=["value"])
        for (dataset, level, method), group in present.groupby(
            ["dataset", "level", "method"], sort=False
        ):
            v = group["value"].to_numpy(dtype=np.float64)
            rows.append(
                {
                    "measure": measure,
                    "dataset": dataset,
                    "level": level,
                    "method": method,
                    "n": len(v),
                    "mean": float(v.mean()),
                    "std": float(v.std(ddof=1)) if len(v) > 1 else float("nan"),
                }
            )
    frame = pd.DataFrame(rows, columns=COLUMNS)
    order = {b: i for i, b in enumerate(prepared.blocks)}
    methods = {m: i for i, m in enumerate(prepared.methods)}
    return (
        frame.assign(
            _b=[
                order.get((d, lv), len(order))
                for d, lv in zip(frame.dataset, frame.level, strict=True)
            ],
            _m=[methods.get(m, len(methods)) for m in frame.method],
        )
        .sort_values(["measure", "_b", "_m"], kind="stable")
        .drop(columns=["_b", "_m"])
        .reset_index(drop=True)
    )


class Grid(NamedTuple):
    """One measure's table: PML datasets by method, the cell texts ``mean ± std``."""

    methods: list[str]
    blocks: list[tuple[str, str]]  # (dataset, level)
    cells: dict[tuple[str, str, str], str]  # (dataset, level, method) -> text
    # (method, dataset, level) of the cells whose method declined the dataset up front
    declined: frozenset[tuple[str, str, str]] = frozenset()

    def text(self, dataset: str, level: str, method: str) -> str:
        """A cell's text: ``n/a`` where the method declined the dataset, ``–`` where there
        is no value for another reason."""
        if (dataset, level, method) in self.cells:
            return self.cells[(dataset, level, method)]
        return NOT_APPLICABLE if (method, dataset, level) in self.declined else MISSING


def grid(
    frame: pd.DataFrame,
    measure: str,
    digits: int,
    declined: frozenset[tuple[str, str, str]] = frozenset(),
) -> Grid:
    """The table of ``measure``, as disambiguation.md, report.html and the leaderboard show
    it (no methods: nothing to show); ``declined`` holds (method, dataset, level) of the
    cells whose method declined the dataset up front (Report.declined), shown as n/a."""
    rows = frame[frame["measure"] == measure]
    methods = list(dict.fromkeys(rows["method"]))
    blocks = list(dict.fromkeys(zip(rows["dataset"], rows["level"], strict=True)))
    cells = {
        (r.dataset, r.level, r.method): f"{r.mean:.{digits}f}"
        + ("" if np.isnan(r.std) else f" ± {r.std:.{digits}f}")
        for r in rows.itertuples(index=False)
    }
    return Grid(methods, blocks, cells, frozenset(declined))


def measure_markdown(
    frame: pd.DataFrame,
    measure: str,
    digits: int = 3,
    declined: frozenset[tuple[str, str, str]] = frozenset(),
) -> str:
    """One measure's PML dataset x method table ("n/a": declined, "–": no value)."""
    table = grid(frame, measure, digits, declined)
    methods = table.methods
    if not methods:
        return ""
    rows = [
        [markdown_escape(d), markdown_escape(lv), *[table.text(d, lv, m) for m in methods]]
        for d, lv in table.blocks
    ]
    return markdown_table(["dataset", "noise", *methods], rows, ["l", "l"] + ["r"] * len(methods))


def to_markdown(
    frame: pd.DataFrame, digits: int = 3, declined: frozenset[tuple[str, str, str]] = frozenset()
) -> str:
    """disambiguation.md."""
    parts = ["# Disambiguation quality (training part)\n\n", EXPLANATION + "\n"]
    for measure in MEASURES:
        text = measure_markdown(frame, measure, digits, declined)
        if text:
            parts.append(f"\n## {NAMES[measure]}\n\n{text}")
    return "".join(parts)


def to_html(
    frame: pd.DataFrame, digits: int = 3, declined: frozenset[tuple[str, str, str]] = frozenset()
) -> str:
    """The tables as static HTML (report.html's "Disambiguation" section body)."""
    if frame.empty:
        return (
            "<p>No method in these results exposes its confidence per training candidate "
            "(disambiguation_scores_), so there is nothing to show.</p>"
        )
    parts = [f"<p>{html.escape(EXPLANATION)}</p>"]
    for measure in MEASURES:
        table = grid(frame, measure, digits, declined)
        methods = table.methods
        if not methods:
            continue
        head = "".join(f'<th class="num">{html.escape(m)}</th>' for m in methods)
        body = "".join(
            f"<tr><td>{html.escape(d)}</td><td>{html.escape(lv)}</td>"
            + "".join(f'<td class="num">{html.escape(table.text(d, lv, m))}</td>' for m in methods)
            + "</tr>"
            for d, lv in table.blocks
        )
        # the page's table style (report.css: .block, .scroll, table.data)
        parts.append(
            f'<div class="block"><div class="block-head"><h3>{html.escape(NAMES[measure])}</h3>'
            '</div><div class="scroll"><table class="data disambiguation"><thead>'
            f"<tr><th>dataset</th><th>noise</th>{head}</tr></thead><tbody>{body}</tbody>"
            "</table></div></div>"
        )
    return "".join(parts)
