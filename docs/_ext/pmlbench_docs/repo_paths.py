"""Links from a page to files of the repository outside docs/, shown as paths.

The Markdown pages link to source files and folders (``[units.py](../pmlbench/runner/units.py)``),
which work where the Markdown is read in a checkout or on a forge. The site holds only
docs/, so such a link is shown as the path it names, in code, for the reader's checkout;
the page files are not changed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

LINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\(([^)\s]+)\)")
# |y| (a size) outside a literal: reST would read a substitution reference
BARS = re.compile(r"(?<![\\|])\|([^|\s`][^|`]*?)\|(?!_)")


def repository_paths(text: str, page: Path, srcdir: Path, root: Path) -> str:
    """``text`` (the Markdown of ``page``) with links that leave ``srcdir`` shown as paths."""

    def replace(match: re.Match[str]) -> str:
        label, target = match.group(1), match.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith(("#", "/")):
            return match.group(0)
        path = target.split("#", 1)[0]
        resolved = (page.parent / path).resolve()
        inside = resolved.is_relative_to(srcdir.resolve()) and not resolved.is_dir()
        if inside or not resolved.is_relative_to(root.resolve()):
            return match.group(0)
        shown = resolved.relative_to(root.resolve()).as_posix() + ("/" if resolved.is_dir() else "")
        if label.strip("`").rstrip("/") in (shown.rstrip("/"), path.rstrip("/")):
            return f"`{shown}`"
        return f"{label} (`{shown}`)"

    out, fenced = [], False
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        out.append(line if fenced else LINK.sub(replace, line))
    return "".join(out)


def rewrite(app: Any, docname: str, source: list[str]) -> None:
    srcdir = Path(app.srcdir)
    page = Path(app.env.doc2path(docname))
    source[0] = repository_paths(source[0], page, srcdir, srcdir.parent)


def escape_bars(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    """``|y|`` (a set's size) in a docstring is reST's substitution syntax: escape it."""
    for index, line in enumerate(lines):
        parts = re.split(r"(``.*?``)", line)  # inline literals keep their bars
        lines[index] = "".join(
            part if part.startswith("``") else BARS.sub(r"\\|\1\\|", part) for part in parts
        )


def setup(app: Any) -> None:
    app.connect("source-read", rewrite)
    app.connect("autodoc-process-docstring", escape_bars)
