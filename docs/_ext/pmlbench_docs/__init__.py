"""Sphinx extension of pmlbench's documentation site: pages and numbers from the code.

- :mod:`.registry_pages`: a reference section for every built-in method and one page per
  bundled dataset, generated from the plugin registry when the site is built (parameters,
  defaults and constraints, the tuning grid and its source, refusals, cross-kernel status,
  citation; sizes, label cardinality, source);
- :mod:`.archive_counts`: the counts the pages quote about docs/leaderboard-results.tar.xz,
  read from the archive as MyST substitutions (``{{ archive_units }}``);
- :mod:`.citing`: the "How to cite" page and the site's version, from CITATION.cff and the
  package;
- :mod:`.repo_paths`: links to repository files outside docs/ shown as their paths;
- :mod:`.link_check`: every internal link and anchor of the built HTML resolves; a broken
  one is a warning, so ``-W`` fails the build.

The facts themselves are gathered by modules that need no Sphinx (:mod:`.facts`,
:mod:`.probe`, :mod:`.archive`, :mod:`.citation`), which tests/test_docs_pages.py checks
against the plugins.
"""

from __future__ import annotations

from typing import Any


def setup(app: Any) -> dict[str, Any]:
    # imported here: the fact modules are imported by tests that run without Sphinx
    from . import archive_counts, citing, link_check, registry_pages, repo_paths

    for part in (registry_pages, repo_paths, archive_counts, citing, link_check):
        part.setup(app)
    # a new env_version makes Sphinx read every page again after the extension changes
    return {
        "version": "1",
        "env_version": 1,
        "parallel_read_safe": True,
        "parallel_write_safe": True,
    }
