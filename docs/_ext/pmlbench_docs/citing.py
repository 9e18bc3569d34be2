"""The site's version and its "How to cite" page, from the package and CITATION.cff.

The version the site shows is ``pmlbench.__version__``, which ``pmlbench --version`` prints;
run records name the installed distribution's version (``versions.pmlbench`` in run.json).
A build where CITATION.cff, the package or the installed distribution disagree warns, so
``-W`` fails it.
"""

from __future__ import annotations

from importlib import metadata
from typing import Any

from sphinx.util import logging

from . import citation, facts, render

logger = logging.getLogger(__name__)
PAGE = "citing"


def version_problems() -> list[str]:
    """Where the versions of the package, CITATION.cff and the installed distribution differ."""
    import pmlbench

    problems = []
    cff = str(citation.load()["version"])
    if cff != pmlbench.__version__:
        problems.append(
            f"CITATION.cff says version {cff}, pmlbench.__version__ is {pmlbench.__version__}"
        )
    try:
        installed = metadata.version("pmlbench")
    except metadata.PackageNotFoundError:
        installed = None
    if installed is not None and installed != pmlbench.__version__:
        problems.append(
            f"the installed distribution is pmlbench {installed} (run records name it), the "
            f"package is {pmlbench.__version__}: reinstall with pip install -e ."
        )
    return problems


def page_text() -> str:
    """The generated part of docs/citing.md."""
    import pmlbench

    cff = citation.load()
    seed = citation.seed_reference()
    rows = []
    for method in facts.methods():
        papers = [
            citation.reference_text(r)
            for r in cff["references"]
            if method.name in citation.methods_of(r)
        ]
        link = render.method_link(method)
        rows.append(
            [
                f"[`{method.name}`]({link})",
                " ".join(papers) or "– (no paper: " + render.text(method.summary) + ")",
            ]
        )
    entries = "\n\n".join(citation.bibtex(r) for r in cff["references"])
    return "\n".join(
        [
            "## pmlbench",
            "",
            f"{cff['title']}, version {pmlbench.__version__} (the version `pmlbench --version` "
            "prints and every run records in run.json), "
            f"{', '.join(citation.author_text(a) for a in cff['authors'])}, "
            f"{cff['license']} licence. "
            "CITATION.cff in the repository holds this metadata for citation tools.",
            "",
            "```bibtex",
            citation.software_bibtex(),
            "```",
            "",
            "## The seed paper",
            "",
            f"{citation.reference_text(seed)} {render.text(str(seed.get('notes', '')))}",
            "",
            "## The methods' papers",
            "",
            "Cite the paper of every method whose numbers you report (from CITATION.cff's "
            "references, by the method plugin that implements each):",
            "",
            render.table(["method", "paper"], rows),
            "",
            "All references as BibTeX:",
            "",
            "```bibtex",
            entries,
            "```",
            "",
        ]
    )


def check_versions(app: Any, config: Any) -> None:
    for problem in version_problems():
        logger.warning("version mismatch: %s", problem, type="pmlbench", subtype="version")


def insert(app: Any, docname: str, source: list[str]) -> None:
    if docname == PAGE:
        source[0] = f"{source[0].rstrip()}\n\n{page_text()}\n"


def outdated(
    app: Any, env: Any, added: set[str], changed: set[str], removed: set[str]
) -> list[str]:
    return [PAGE] if PAGE in env.found_docs else []


def setup(app: Any) -> None:
    app.connect("config-inited", check_versions)
    app.connect("source-read", insert)
    app.connect("env-get-outdated", outdated)
