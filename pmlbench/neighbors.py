"""Deprecated location of the kNN search: import it from :mod:`pmlbench.plugin`.

``from pmlbench.neighbors import kneighbors`` keeps working for one release with a
DeprecationWarning; the functions live in :mod:`pmlbench.numerics.neighbors`.
"""

from __future__ import annotations

import warnings
from typing import Any

from pmlbench.numerics import neighbors as _new

_NAMES = ("kneighbors", "neighbor_counts")


def __getattr__(name: str) -> Any:
    if name not in _NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"pmlbench.neighbors is deprecated and will be removed in the next release; "
        f"use `from pmlbench.plugin import {name}`",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(_new, name)


def __dir__() -> list[str]:
    return sorted(_NAMES)
