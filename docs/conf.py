"""Sphinx configuration of pmlbench's documentation site.

Build it from the repository root (warnings are errors; the gallery's examples run):

    python -m sphinx -W -b html docs docs/_build/html

The Markdown pages are read by myst-parser; docs/_ext/pmlbench_docs writes the method and
dataset reference from the plugin registry, reads the archive's counts and checks every
internal link and anchor of the built site; sphinx-gallery runs examples/.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
# the checkout's package, whatever else is installed, and the site's own extension
sys.path[:0] = [str(ROOT), str(DOCS / "_ext")]
# the gallery's examples and the reference's probes run on one BLAS thread: their numbers
# do not depend on it, and a build shares its machine
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pmlbench  # noqa: E402

project = "pmlbench"
author = "The pmlbench developers"
copyright = "the pmlbench developers"
version = release = pmlbench.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",  # the Google-style sections (Args:, Raises:) of pmlbench's docstrings
    "numpydoc",
    "sphinx.ext.viewcode",
    "sphinx_gallery.gen_gallery",
    "pmlbench_docs",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = [
    "_build",
    # the notes docs/leaderboard.md shows at its top, kept beside it for the report to read
    "leaderboard-pending.md",
    # sphinx-gallery's per-example outputs that are not pages
    "auto_examples/*.ipynb",
    "auto_examples/*.py",
    "auto_examples/*.zip",
    "auto_examples/*.md5",
]

# -- Markdown ------------------------------------------------------------------------------
myst_enable_extensions = ["substitution", "colon_fence", "deflist"]
myst_heading_anchors = 4  # GitHub's anchors (#budget-one-rule-for-every-method) work here too
# counts about the archive are added when the build starts (pmlbench_docs.archive_counts)
myst_substitutions: dict[str, str] = {}

# -- API reference ---------------------------------------------------------------------------
autodoc_default_options = {"members": True, "member-order": "bysource"}
autodoc_typehints = "signature"
napoleon_google_docstring = True
napoleon_numpy_docstring = False  # numpydoc reads the NumPy-style sections
numpydoc_show_class_members = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()

# -- Gallery -----------------------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",  # every example runs
    "abort_on_example_error": True,
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "min_reported_time": 0,
    "show_memory": False,
    "image_scrapers": ("matplotlib",),
}

# -- HTML --------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"pmlbench {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "navbar_align": "left",
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
    "secondary_sidebar_items": ["page-toc"],
}
html_sidebars = {"index": [], "changelog": [], "citing": []}
html_show_sourcelink = False
html_copy_source = True  # the search page shows each hit's context from these
