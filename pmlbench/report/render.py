"""Small text renderers shared by the report's tables: Markdown pipes, LaTeX booktabs, and
the splitting of a terminal table too wide for its console."""

from __future__ import annotations

from collections.abc import Sequence

_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}

METRIC_NAMES = {
    "subset_accuracy": "subset accuracy",
    "hamming_loss": "Hamming loss",
    "one_error": "one-error",
    "ranking_loss": "ranking loss",
    "coverage": "coverage",
    "average_precision": "average precision",
    "macro_f1": "macro-F1",
    "micro_f1": "micro-F1",
}


def metric_name(metric: str) -> str:
    """Readable metric name: "average_precision" -> "average precision"."""
    return METRIC_NAMES.get(metric, metric.replace("_", " "))


def arrow(higher_is_better: bool) -> str:
    return "↑" if higher_is_better else "↓"


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIALS.get(ch, ch) for ch in str(text))


def markdown_escape(text: str) -> str:
    return str(text).replace("|", r"\|")


def markdown_table(
    header: Sequence[str], rows: Sequence[Sequence[str]], align: Sequence[str] | None = None
) -> str:
    """A pipe table; ``align`` holds "l" or "r" per column."""
    align = align or ["l"] * len(header)
    rule = [":---" if a == "l" else "---:" if a == "r" else ":---:" for a in align]
    lines = [
        "| " + " | ".join(markdown_escape(h) for h in header) + " |",
        "| " + " | ".join(rule) + " |",
    ]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def latex_tabular(
    header: Sequence[str],
    blocks: Sequence[tuple[str | None, list[list[str]]]],
    align: str,
    caption: str = "",
    label: str = "",
) -> str:
    """A booktabs table: each block is (title spanning the columns or None, rows).

    Cells are inserted verbatim (escape them first); ``header`` entries are escaped here.
    """
    width = len(header)
    lines = [r"\begin{table}[t]", r"\centering"]
    if caption:
        lines.append(rf"\caption{{{caption}}}")
    if label:
        lines.append(rf"\label{{{label}}}")
    lines += [
        rf"\begin{{tabular}}{{{align}}}",
        r"\toprule",
        " & ".join(latex_escape(h) for h in header) + r" \\",
    ]
    for title, rows in blocks:
        lines.append(r"\midrule")
        if title is not None:
            lines.append(rf"\multicolumn{{{width}}}{{l}}{{{title}}} \\")
            lines.append(rf"\cmidrule(lr){{1-{width}}}")
        lines += [" & ".join(row) + r" \\" for row in rows]
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def column_groups(fixed: Sequence[int], columns: Sequence[int], width: int | None) -> list[range]:
    """Split a terminal table's columns into consecutive groups that each fit ``width``.

    Args:
        fixed: the text widths of the columns repeated in every group (e.g. dataset, noise).
        columns: the text widths of the other columns, in order.
        width: the console's width in characters; None: one group.

    Returns:
        Ranges of indices into ``columns``, each non-empty; a column wider than ``width``
        on its own still gets a group. A column takes its text plus three characters (a
        space either side and a rule), the table one more.
    """
    if width is None or not columns:
        return [range(len(columns))]
    used = 1 + sum(w + 3 for w in fixed)
    groups, start, total = [], 0, used
    for i, w in enumerate(columns):
        if i > start and total + w + 3 > width:
            groups.append(range(start, i))
            start, total = i, used
        total += w + 3
    groups.append(range(start, len(columns)))
    return groups
