"""Plugin discovery through Python entry points.

Four entry-point groups hold the plugins: ``pmlbench.datasets``, ``pmlbench.noise``,
``pmlbench.methods`` and ``pmlbench.metrics``. The built-in components are registered in
pmlbench's own pyproject.toml through the very same groups, so nothing is special-cased.
"""

from __future__ import annotations

import difflib
import inspect
from dataclasses import dataclass
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from pmlbench.errors import PluginError

KINDS = {
    "dataset": "pmlbench.datasets",
    "noise": "pmlbench.noise",
    "method": "pmlbench.methods",
    "metric": "pmlbench.metrics",
}


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
        except Exception as exc:  # any import-time failure of third-party code
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
        return available[name]
    close = difflib.get_close_matches(str(name), available, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise PluginError(
        f"unknown {kind} {name!r}; available: {', '.join(available) or '(none)'}{hint}"
    )


def load(kind: str, name: str) -> Any:
    """Load the object behind plugin ``name`` of ``kind``."""
    return get(kind, name).load()


def describe(obj: Any) -> str:
    """The first line of a plugin's docstring (or its ``description`` attribute)."""
    text = getattr(obj, "description", None)
    if not isinstance(text, str) or not text:
        text = inspect.getdoc(obj) or ""
    return text.strip().splitlines()[0] if text.strip() else ""
