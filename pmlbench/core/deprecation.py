"""Old import paths that keep working for one release with a DeprecationWarning."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any


def moved_names(
    old: str, new_home: ModuleType, names: tuple[str, ...], use: str = "pmlbench.plugin"
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Module ``__getattr__`` and ``__dir__`` for a module whose ``names`` moved.

    ``from <old> import <name>`` returns ``new_home.<name>`` and warns, pointing at
    ``from <use> import <name>``; any other name is an AttributeError as usual.
    """

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        warnings.warn(
            f"{old} is deprecated and will be removed in the next release; "
            f"use `from {use} import {name}`",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(new_home, name)

    def __dir__() -> list[str]:
        return sorted(names)

    return __getattr__, __dir__
