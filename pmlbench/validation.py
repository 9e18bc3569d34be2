"""Deprecated location of the input checks: import them from :mod:`pmlbench.plugin`.

``from pmlbench.validation import check_features`` keeps working for one release with a
DeprecationWarning; the functions live in :mod:`pmlbench.core.checks`.
"""

from __future__ import annotations

import warnings
from typing import Any

from pmlbench.core import checks as _new

_NAMES = ("as_dense", "check_features", "check_label_matrix")


def __getattr__(name: str) -> Any:
    if name not in _NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"pmlbench.validation is deprecated and will be removed in the next release; "
        f"use `from pmlbench.plugin import {name}`",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(_new, name)


def __dir__() -> list[str]:
    return sorted(_NAMES)
