"""The method and dataset reference, written from the plugin registry when the site builds.

- Every built-in method gets a reference section (:func:`.render.method_section`). A method
  with a hand-written page (docs/methods/<module>.md) gets it on that page, inserted before
  the page's first ``##`` heading when the page is read, so the page file itself never
  changes; a method without one gets docs/generated/methods/<name>.md.
- Every bundled dataset gets docs/generated/datasets/<name>.md.
- docs/methods.md and docs/datasets.md get an index of those pages, with their toctree.

Generated files are written only when their text changes, and the pages that receive
inserted text are read again on every build, so the site follows the code.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from . import facts, probe, render
from .citation import method_citations

GENERATED = "generated"
# hand-written pages that receive generated text (docname -> text), filled by generate()
INSERTS = "pmlbench_inserts"


def _write(path: Path, content: str) -> None:
    """Write ``content`` unless the file already holds it (Sphinx rereads changed files)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8") != content:
        path.write_text(content, encoding="utf-8")


def _headings(path: Path) -> list[str]:
    if not path.exists():
        return []
    return re.findall(r"^#{2,6} (.+?)\s*$", path.read_text(encoding="utf-8"), flags=re.M)


def build_reference(srcdir: Path) -> dict[str, str]:
    """Write the generated pages under ``srcdir``; return the text to insert per docname."""
    from pmlbench.plugins import registry
    from pmlbench.protocol.settings import EXPERIMENT

    test_size = float(EXPERIMENT["protocol.test_size"].default)
    seed = int(EXPERIMENT["seed"].default)
    methods = facts.methods()
    datasets = facts.datasets(test_size)
    citations = method_citations(srcdir.parent / "CITATION.cff")

    parts = []
    for dataset in datasets:
        if dataset.stats:
            data = registry.load("dataset", dataset.name)()
            parts.append(probe.training_part(dataset.name, data, test_size, seed))
    shapes = {part.name: part.shape for part in parts}
    runnable = {m.name: registry.load("method", m.name) for m in methods if not m.required}
    outcomes = probe.probe(runnable, parts)

    inserts: dict[str, list[str]] = {}
    links = {m.name: render.method_link(m) for m in methods}
    for method in methods:
        page = links[method.name]
        own = {d: o for (m, d), o in outcomes.items() if m == method.name}
        section = render.method_section(
            method,
            own,
            shapes,
            citations.get(method.name, ""),
            page,
            heading="##",
            page_headings=_headings(srcdir / page),
        )
        if method.page:
            inserts.setdefault(method.page[: -len(".md")], []).append(section)
        else:
            _write(srcdir / page, render.method_page(method, section))

    # a hand-written page holds a method's reference under its "Reference: `name`" heading
    sections = {m.name: links[m.name] + (f"#reference-{m.name}" if m.page else "") for m in methods}
    for dataset in datasets:
        page = render.dataset_link(dataset.name)
        refusals = {m: o for (m, d), o in outcomes.items() if d == dataset.name}
        _write(srcdir / page, render.dataset_page(dataset, refusals, sections, page, test_size))

    inserts.setdefault("methods", []).append(render.methods_index(methods, outcomes, links))
    inserts.setdefault("datasets", []).append(render.datasets_index(datasets, outcomes))
    return {docname: "\n\n".join(texts) for docname, texts in inserts.items()}


def insert_before_first_section(source: str, addition: str) -> str:
    """``addition`` before the first ``## `` heading outside code (else at the end)."""
    fenced = False
    offset = 0
    for line in source.splitlines(keepends=True):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and line.startswith("## "):
            return f"{source[:offset]}{addition}\n\n{source[offset:]}"
        offset += len(line)
    return f"{source.rstrip()}\n\n{addition}\n"


def generate(app: Any) -> None:
    srcdir = Path(app.srcdir)
    setattr(app, INSERTS, build_reference(srcdir))


def insert(app: Any, docname: str, source: list[str]) -> None:
    addition = getattr(app, INSERTS, {}).get(docname)
    if not addition:
        return
    if docname in ("methods", "datasets"):
        source[0] = f"{source[0].rstrip()}\n\n{addition}\n"
    else:
        source[0] = insert_before_first_section(source[0], addition)


def outdated(
    app: Any, env: Any, added: set[str], changed: set[str], removed: set[str]
) -> list[str]:
    """The pages with inserted text, and the API reference (autodoc reads the docstrings), are
    read again on every build: the code may have changed while the page files did not."""
    inserted = [d for d in getattr(app, INSERTS, {}) if d in env.found_docs]
    return inserted + [d for d in env.found_docs if d.startswith("api/")]


def setup(app: Any) -> None:
    app.connect("builder-inited", generate)
    app.connect("source-read", insert)
    app.connect("env-get-outdated", outdated)
