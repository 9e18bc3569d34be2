"""Whether names given for a plugin's parameters are its parameters, and the closest one.

The one answer to "is ``kk`` a parameter of this plugin, and which did the user mean?" for
every place that checks a parameter name before any work:

- the command line's ``method.<key>=`` and ``tune.grid.<key>=`` overrides
  (pmlbench.hydra_app.overrides);
- a method's ``default_tuning_grid`` (pmlbench.hydra_app.config_nodes);
- the parameter values given to the plugin checks (pmlbench.testing).

Each caller words its own one-line message (its own key and fix) around :func:`unknown`'s
answer: the unknown names, the plugin's parameters (:attr:`UnknownNames.listing`) and the
closest parameter to suggest (:meth:`UnknownNames.hint`). A plugin's parameters are those
of pmlbench.plugins.parameters (its signature or ``Params`` dataclass).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pmlbench.plugins.parameters import plugin_parameters

# how alike a name must be to a parameter to be suggested (difflib's ratio)
CUTOFF = 0.6


@dataclass(frozen=True)
class UnknownNames:
    """Names given that are not among a plugin's parameters."""

    unknown: tuple[str, ...]  # sorted
    known: tuple[str, ...]  # in the plugin's order

    @property
    def listing(self) -> str:
        """The plugin's parameters for a message: ``k, s`` (``(none)`` without any)."""
        return ", ".join(self.known) or "(none)"

    def closest(self, name: str) -> str | None:
        """The parameter most like ``name``, if one is alike enough."""
        close = difflib.get_close_matches(name, self.known, n=1, cutoff=CUTOFF)
        return close[0] if close else None

    def hint(self, template: str = "{name!r}") -> str:
        """``; did you mean 'k'?`` for the first unknown name with a close parameter ("" when
        none has one). ``template`` spells the suggestion, e.g. ``method.{name}=3``."""
        for name in self.unknown:
            close = self.closest(name)
            if close is not None:
                return f"; did you mean {template.format(name=close)}?"
        return ""


def unknown(given: Iterable[str], known: Iterable[str]) -> UnknownNames | None:
    """The names of ``given`` that are not in ``known`` (None when every one is)."""
    known = tuple(known)
    missing = tuple(sorted(set(given) - set(known)))
    return UnknownNames(missing, known) if missing else None


def unknown_parameters(kind: str, plugin: Any, given: Iterable[str]) -> UnknownNames | None:
    """The names of ``given`` that are not parameters of the ``kind`` plugin object
    ``plugin`` (None when every one is)."""
    return unknown(given, plugin_parameters(kind, plugin))
