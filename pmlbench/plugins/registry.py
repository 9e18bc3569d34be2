"""Plugin discovery through Python entry points.

Four entry-point groups hold the plugins: ``pmlbench.datasets``, ``pmlbench.noise``,
``pmlbench.methods`` and ``pmlbench.metrics``. The built-in components are registered in
pmlbench's own pyproject.toml through the very same groups, so nothing is special-cased.
"""

from __future__ import annotations

import difflib
import inspect
import re
import sys
from dataclasses import dataclass
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from pmlbench.core.safe_text import has_hidden, visible
from pmlbench.errors import PluginError

KINDS = {
    "dataset": "pmlbench.datasets",
    "noise": "pmlbench.noise",
    "method": "pmlbench.methods",
    "metric": "pmlbench.metrics",
}
UNREGISTERED = "<unregistered>"


@dataclass(frozen=True)
class PluginInfo:
    """One registered plugin: where it comes from and how to load it."""

    kind: str
    name: str
    entry_point: EntryPoint
    distribution: str

    def load(self) -> Any:
        """Import the plugin object; an import failure becomes a PluginError naming the plugin."""
        try:
            return self.entry_point.load()
        except (Exception, SystemExit) as exc:  # any import-time failure of third-party code
            # (sys.exit at import time too: it would end pmlbench silently with its status)
            raise PluginError(
                f"{self.kind} plugin {self.name!r} from distribution {self.distribution!r} "
                f"failed to import ({type(exc).__name__}: {exc}); fix or uninstall that package"
            ) from exc

    @property
    def label(self) -> str:
        return f"{self.kind} plugin {self.name!r} (distribution {self.distribution!r})"


def _distribution_name(ep: EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return dist.metadata["Name"] if dist is not None else "<unknown>"


@cache
def plugins(kind: str) -> dict[str, PluginInfo]:
    """All plugins of one kind, by name. Two distributions registering one name is an error."""
    if kind not in KINDS:
        raise PluginError(f"unknown plugin kind {kind!r}; use one of {sorted(KINDS)}")
    found: dict[str, PluginInfo] = {}
    for ep in entry_points(group=KINDS[kind]):
        info = PluginInfo(kind, ep.name, ep, _distribution_name(ep))
        previous = found.get(ep.name)
        if previous is not None:
            if (
                previous.entry_point.value == ep.value
                and previous.distribution == info.distribution
            ):
                continue  # the same distribution seen twice on sys.path
            raise PluginError(
                f"two {kind} plugins are named {ep.name!r}: one from distribution "
                f"{previous.distribution!r} ({previous.entry_point.value}) and one from "
                f"{info.distribution!r} ({ep.value}); uninstall one of them"
            )
        found[ep.name] = info
    return dict(sorted(found.items()))


def get(kind: str, name: str) -> PluginInfo:
    """The plugin ``name`` of ``kind``, or a one-line error listing the names available."""
    available = plugins(kind)
    if name in available:
        if has_hidden(name) or has_hidden(available[name].distribution):
            raise PluginError(
                f"{kind} plugin '{visible(name)}' (distribution "
                f"'{visible(available[name].distribution)}') has control "
                "or bidirectional characters in its name, which would reach terminals and "
                "result files; uninstall that package"
            )
        return available[name]
    close = difflib.get_close_matches(str(name), available, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise PluginError(
        f"unknown {kind} {name!r}; available: {', '.join(available) or '(none)'}{hint}"
    )


def kinds_of(name: str) -> list[str]:
    """The kinds under which a plugin called ``name`` is registered (an error if none)."""
    kinds = [kind for kind in KINDS if name in plugins(kind)]
    if not kinds:
        everything = sorted({n for kind in KINDS for n in plugins(kind)})
        close = difflib.get_close_matches(name, everything, n=3)
        hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
        raise PluginError(f"no plugin named {name!r} is installed (see `pmlbench list`){hint}")
    return kinds


def _loaded_object(ep: Any) -> Any:
    """The object an entry point names if its module is already imported, else None.

    Nothing is imported: a plugin object in hand has its module in ``sys.modules``.
    """
    module_name, _, attrs = str(ep.value).partition(":")
    obj = sys.modules.get(module_name.strip())
    for attr in filter(None, attrs.strip().split(".")):
        obj = getattr(obj, attr, None)
    return obj


def info_for(kind: str, obj: Any) -> PluginInfo:
    """The registration of a plugin object (a class, an instance of one, or a callable).

    An object no entry point of ``kind`` names gets a PluginInfo named after the object (its
    ``name`` attribute, or its class or function name) from the distribution
    ``<unregistered>``, so checks on it still print one-line messages naming it.
    """
    for info in plugins(kind).values():
        target = _loaded_object(info.entry_point)
        if target is not None and (
            target is obj or (inspect.isclass(target) and type(obj) is target)
        ):
            return info
    target = obj if inspect.isclass(obj) or inspect.isroutine(obj) else type(obj)
    own = getattr(obj, "name", None)  # a Metric's name
    name = own if isinstance(own, str) and own else str(getattr(target, "__name__", target))
    value = f"{getattr(target, '__module__', '?')}:{getattr(target, '__qualname__', name)}"
    return PluginInfo(kind, name, EntryPoint(name, value, KINDS[kind]), UNREGISTERED)


def load(kind: str, name: str) -> Any:
    """Load the object behind plugin ``name`` of ``kind``."""
    return get(kind, name).load()


def describe(obj: Any) -> str:
    """The first paragraph of a plugin's docstring (or its ``description`` attribute) on one
    line, whole (a docstring wraps its summary over several lines), as plain text: reST
    inline literals and roles (````main.m````, ``:mod:`x```) lose their markup."""
    text = getattr(obj, "description", None)
    if not isinstance(text, str) or not text:
        text = inspect.getdoc(obj) or ""
    paragraph = text.strip().split("\n\n")[0]
    line = " ".join(paragraph.split())
    line = re.sub(r":[\w:.-]+:`~?([^`]+)`", r"\1", line)
    return re.sub(r"``([^`]+)``", r"\1", line)
