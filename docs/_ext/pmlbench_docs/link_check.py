"""Every internal link and anchor of the built site resolves.

After an HTML build, every ``<a href>`` and ``<img src>`` of every page that points inside
the site (no scheme, no host) must name a file the build wrote and, where it has a
``#fragment``, an element with that id (or an ``<a name>``) in the page it names. A broken
one is a warning naming the page and the target, so ``python -m sphinx -W`` fails. Links to
other hosts are left alone: the build runs without network.
"""

from __future__ import annotations

import posixpath
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.targets: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        for key in ("id", "name") if tag == "a" else ("id",):
            if found.get(key):
                self.ids.add(str(found[key]))
        link = found.get("href") if tag == "a" else found.get("src") if tag == "img" else None
        if link:
            self.targets.append(link)


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8", errors="replace"))
    return page


def broken_links(outdir: Path) -> list[tuple[str, str, str]]:
    """(page, link, problem) for every internal link of the HTML under ``outdir`` that does
    not resolve."""
    pages = {p.relative_to(outdir).as_posix(): _parse(p) for p in sorted(outdir.rglob("*.html"))}
    problems = []
    for name, page in pages.items():
        for link in page.targets:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith("//"):
                continue
            if parts.path:
                target = posixpath.normpath(
                    posixpath.join(posixpath.dirname(name), unquote(parts.path))
                )
            else:
                target = name
            if target.startswith("../") or not (outdir / target).exists():
                problems.append((name, link, f"{target} does not exist"))
                continue
            if (outdir / target).is_dir():
                target = posixpath.join(target, "index.html")
                if target not in pages:
                    problems.append((name, link, f"{target} does not exist"))
                    continue
            fragment = unquote(parts.fragment)
            if fragment and target in pages and fragment not in pages[target].ids:
                problems.append((name, link, f"{target} has no anchor #{fragment}"))
    return problems


def check(app: Any, exception: Exception | None) -> None:
    from sphinx.util import logging

    logger = logging.getLogger(__name__)
    if exception is not None or app.builder.format != "html":
        return
    for page, link, problem in broken_links(Path(app.outdir)):
        logger.warning(
            "broken internal link %r in %s: %s",
            link,
            page,
            problem,
            type="pmlbench",
            subtype="link",
        )


def setup(app: Any) -> None:
    app.connect("build-finished", check)
