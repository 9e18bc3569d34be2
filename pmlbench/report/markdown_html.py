"""The small Markdown of the summary (summary.md) as HTML, for report.html.

Only what the summary writes is understood: ``##`` headings, ``- `` bullets, a line that is
bold only (it heads a group of bullets), ``**bold**``, ```code``` and paragraphs. Everything
else is text, escaped.
"""

from __future__ import annotations

import html
import re

from pmlbench.core.safe_text import visible
from pmlbench.report.render import markdown_unescape


def _inline(text: str) -> str:
    """Escape a line of the summary (its Markdown escapes undone, hidden characters shown
    as escapes, then HTML) and keep its **bold** and `code`."""
    text = html.escape(visible(markdown_unescape(text)), quote=True)
    text = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", text)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", text)


def markdown_html(markdown: str) -> str:
    """The small Markdown the summary uses as HTML: ``##`` headings, bullets, ``**bold**``
    and paragraphs; the top-level heading is dropped (the section has its own).

    A line that is bold only (e.g. "**pml3er vs mlknn**") heads a group of bullets; groups
    sit side by side in a grid, each folded under its heading and its "In total" line
    when it has one (the other bullets are a click away).
    """
    tokens: list[tuple[str, str]] = []
    for line in markdown.splitlines():
        stripped = line.strip()
        if not stripped or re.match(r"^# ", stripped):
            continue
        heading = re.match(r"^#{2,6} (.*)$", stripped)
        group = re.fullmatch(r"\*\*(.+)\*\*", stripped)
        if stripped.startswith("- "):
            tokens.append(("li", stripped[2:]))
        elif heading:
            tokens.append(("h", heading.group(1)))
        elif group:
            tokens.append(("group", group.group(1)))
        else:
            tokens.append(("p", stripped))
    out: list[str] = []
    list_class = ""
    i = 0
    while i < len(tokens):
        kind, text = tokens[i]
        if kind == "h":
            list_class = ' class="warnings"' if "warning" in text.lower() else ""
            out.append(f"<h3>{_inline(text)}</h3>")
            i += 1
        elif kind == "p":
            out.append(f"<p>{_inline(text)}</p>")
            i += 1
        elif kind == "li":
            items = []
            while i < len(tokens) and tokens[i][0] == "li":
                items.append(f"<li>{_inline(tokens[i][1])}</li>")
                i += 1
            out.append(f"<ul{list_class}>{''.join(items)}</ul>")
        else:
            out.append('<div class="sum-grid">')
            while i < len(tokens) and tokens[i][0] == "group":
                title = tokens[i][1]
                i += 1
                items = []
                while i < len(tokens) and tokens[i][0] == "li":
                    items.append(tokens[i][1])
                    i += 1
                out.append(_summary_group(title, items))
            out.append("</div>")
    return "\n".join(out)


def _summary_group(title: str, items: list[str]) -> str:
    total = items[-1] if items and items[-1].startswith("In total") else None
    shown = f"<strong>{_inline(title)}</strong>" + (f": {_inline(total)}" if total else "")
    bullets = "".join(f"<li>{_inline(item)}</li>" for item in items if item is not total)
    return (
        f'<details class="sum-group"{"" if total else " open"}><summary>{shown}</summary>'
        f"<ul>{bullets}</ul></details>"
    )
