"""A method's configuration at its defaults: its parameters, tuning grid and bipartition rule.

The one definition of what running a method without overrides means, used where Hydra's
config nodes are stored, where explicit overrides pin parameters, and where a report names
the configuration that is a method's default.
"""

from __future__ import annotations

from typing import Any

from pmlbench.errors import PluginError
from pmlbench.plugins.names import unknown
from pmlbench.plugins.parameters import plugin_parameters
from pmlbench.protocol.settings import defaults


def method_node(name: str, cls: Any) -> dict[str, Any]:
    """The global config node of a method: its parameters, tuning grid and bipartition rule."""
    params = plugin_parameters("method", cls)
    default_grid = dict(getattr(cls, "default_tuning_grid", {}) or {})
    found = unknown(default_grid, params)
    if found is not None:
        raise PluginError(
            f"method {name!r} declares a tuning grid for unknown parameters "
            f"{list(found.unknown)}; its parameters: {found.listing}{found.hint()} "
            "(fix its default_tuning_grid)"
        )
    grid = {p: (list(default_grid[p]) if p in default_grid else None) for p in params}
    own = getattr(cls, "default_bipartition", {}) or {}
    return {
        "method": {"name": name, **params},
        "tune": {"grid": grid, **defaults("tune")},
        "bipartition": {**defaults("bipartition"), **own},
    }
