"""Small text renderers shared by the report's tables: Markdown pipes, LaTeX booktabs, and
the splitting of a terminal table too wide for its console."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from rich.table import Table
from rich.text import Text

from pmlbench.core.safe_text import visible

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
    """Text for LaTeX: hidden characters as escapes (pmlbench.core.safe_text.visible), then
    every LaTeX special character (``\\``, ``{``, ``%``, ``$`` ...) as text."""
    return "".join(_LATEX_SPECIALS.get(ch, ch) for ch in visible(str(text)))


def markdown_escape(text: str) -> str:
    """Text (a name from a file, a store record or a plugin) for Markdown, in a table cell
    or a sentence: hidden characters as escapes (pmlbench.core.safe_text.visible), ``&``,
    ``<`` and ``>`` as HTML entities (no raw HTML, no ``<http://...>`` link), ``|`` escaped
    (no broken table row) and ``](`` broken (no ``[text](url)`` link or image). Labels
    such as ``mlknn[k=5]`` read as written."""
    text = _BACKSLASH_BEFORE_PUNCTUATION.sub(r"\\\\", visible(str(text)))
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("|", r"\|").replace("](", r"]\(")


markdown_cell = markdown_escape  # a name as a Markdown table cell

# a backslash is Markdown's escape only before ASCII punctuation (elsewhere, as in a
# visible escape such as \x1b, it is a backslash)
_BACKSLASH_BEFORE_PUNCTUATION = re.compile(r"\\(?=[!-/:-@\[-`{-~])")
_ESCAPED_PUNCTUATION = re.compile(r"\\([!-/:-@\[-`{-~])")


def markdown_unescape(text: str) -> str:
    """The text :func:`markdown_escape` was given (its hidden characters stay escapes), for
    a renderer that escapes it for HTML itself."""
    return html.unescape(_ESCAPED_PUNCTUATION.sub(r"\1", text))


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


def split_rich_table(
    title: str,
    fixed: Sequence[str],
    columns: Sequence[str],
    rows: Sequence[tuple[Sequence[str | Text], Sequence[str | Text], str | None]],
    width: int | None,
) -> list[Table]:
    """A terminal table as one or more tables that each fit ``width`` characters.

    Args:
        title: the table's title; a part of a split table adds "(i of n: first ... last)".
        fixed: headers of the left-aligned columns every part repeats (row labels).
        columns: headers of the right-aligned columns shared out among the parts.
        rows: per row its ``fixed`` cells, its ``columns`` cells and a row style (or None).
            A ``str`` is printed as written (labels such as ``mlknn[k=5]`` are not console
            markup); a styled cell is a :class:`rich.text.Text`.
        width: the console's width; None: one table.
    """

    def text(value: str | Text) -> Text:
        return value if isinstance(value, Text) else Text(value)

    def widest(header: str, cells: list[str | Text]) -> int:
        return max([len(header), *(text(c).cell_len for c in cells)])

    fixed_widths = [widest(h, [r[0][i] for r in rows]) for i, h in enumerate(fixed)]
    widths = [widest(h, [r[1][j] for r in rows]) for j, h in enumerate(columns)]
    groups = column_groups(fixed_widths, widths, width)
    tables = []
    for number, group in enumerate(groups, start=1):
        shown = " ... ".join(dict.fromkeys([columns[group[0]], columns[group[-1]]]))
        part = f" ({number} of {len(groups)}: {shown})"
        table = Table(title=text(title + (part if len(groups) > 1 else "")), title_justify="left")
        for header in fixed:
            table.add_column(text(header), no_wrap=True)
        for j in group:
            table.add_column(text(columns[j]), justify="right", no_wrap=True)
        for labels, cells, style in rows:
            table.add_row(*map(text, labels), *(text(cells[j]) for j in group), style=style)
        tables.append(table)
    return tables
