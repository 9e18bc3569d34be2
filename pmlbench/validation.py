"""Deprecated location of the input checks: import them from :mod:`pmlbench.plugin`.

``from pmlbench.validation import check_features`` keeps working for one release with a
DeprecationWarning; the functions live in :mod:`pmlbench.core.checks`.
"""

from __future__ import annotations

from pmlbench.core import checks as _new
from pmlbench.core.deprecation import moved_names

__getattr__, __dir__ = moved_names(
    __name__, _new, ("as_dense", "check_features", "check_label_matrix")
)
