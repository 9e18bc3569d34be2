"""Deprecated location of the kNN search: import it from :mod:`pmlbench.plugin`.

``from pmlbench.neighbors import kneighbors`` keeps working for one release with a
DeprecationWarning; the functions live in :mod:`pmlbench.numerics.neighbors`.
"""

from __future__ import annotations

from pmlbench.core.deprecation import moved_names
from pmlbench.numerics import neighbors as _new

__getattr__, __dir__ = moved_names(__name__, _new, ("kneighbors", "neighbor_counts"))
