"""Automatic Hydra config nodes for plugins.

Each plugin's hyper-parameters (a method's constructor arguments, a dataset loader's or a
noise model's keyword arguments, or the fields of a ``Params`` dataclass attribute) become a
node in Hydra's ConfigStore, so ``method=<name> method.<param>=<value>`` works for any
installed plugin without YAML. A YAML file of another name in ``conf/<group>/`` may build on
the automatic node through its defaults list (see docs/plugins.md).
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

from hydra.core.config_store import ConfigStore

from pmlbench.errors import PluginError
from pmlbench.plugins import registry

_CONFIG_TYPES = (int, float, str, bool, type(None))
# Arguments a noise model receives from the runner rather than from the config.
_NOISE_POSITIONAL = 2
REQUIRED = "???"


def _config_value(value: Any) -> Any:
    if isinstance(value, _CONFIG_TYPES):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, _CONFIG_TYPES) for v in value):
        return list(value)
    if isinstance(value, dict) and all(isinstance(v, _CONFIG_TYPES) for v in value.values()):
        return dict(value)
    raise TypeError(type(value).__name__)


def plugin_parameters(kind: str, obj: Any) -> dict[str, Any]:
    """Hyper-parameters of a plugin object with their defaults ("???" where required)."""
    params_class = getattr(obj, "Params", None)
    if dataclasses.is_dataclass(params_class):
        items = [
            (f.name, f.default if f.default is not dataclasses.MISSING else inspect.Parameter.empty)
            for f in dataclasses.fields(params_class)
        ]
    else:
        target = obj.__init__ if inspect.isclass(obj) else obj
        signature = inspect.signature(target)
        parameters = list(signature.parameters.values())
        if inspect.isclass(obj):
            parameters = parameters[1:]  # self
        if kind == "noise":
            parameters = parameters[_NOISE_POSITIONAL:]
        items = [
            (p.name, p.default)
            for p in parameters
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        ]
    result: dict[str, Any] = {}
    for name, default in items:
        if name == "name":
            raise PluginError(f"{kind} plugin parameter may not be called 'name' (reserved)")
        if default is inspect.Parameter.empty:
            result[name] = REQUIRED
            continue
        try:
            result[name] = _config_value(default)
        except TypeError as exc:
            raise PluginError(
                f"{kind} plugin {obj!r}: default of parameter {name!r} has type {exc}, which a "
                "config cannot hold; use a number, string, bool, None or a list of them"
            ) from None
    return result


BIPARTITION_DEFAULTS = {
    "rule": "method",
    "threshold": 0.5,
    "allow_empty": True,
    "objective": "hamming_loss",
    "training_scores": "cv",
    "cv": 5,
}
TUNE_DEFAULTS = {"cv": 5, "scoring": "average_precision", "oracle": False, "n_jobs": None}


def method_node(name: str, cls: Any) -> dict[str, Any]:
    """The global config node of a method: its parameters, tuning grid and bipartition rule."""
    params = plugin_parameters("method", cls)
    default_grid = dict(getattr(cls, "default_tuning_grid", {}) or {})
    unknown = set(default_grid) - set(params)
    if unknown:
        raise PluginError(
            f"method {name!r} declares a tuning grid for unknown parameters {sorted(unknown)}"
        )
    grid = {p: (list(default_grid[p]) if p in default_grid else None) for p in params}
    bipartition = {**BIPARTITION_DEFAULTS, **(getattr(cls, "default_bipartition", {}) or {})}
    return {
        "method": {"name": name, **params},
        "tune": {"grid": grid, **TUNE_DEFAULTS},
        "bipartition": bipartition,
    }


def register_config_nodes() -> list[str]:
    """Store a node for every dataset, noise and method plugin; return problems found."""
    store = ConfigStore.instance()
    problems: list[str] = []
    for kind in ("dataset", "noise", "method"):
        for name, info in registry.plugins(kind).items():
            try:
                obj = info.load()
                if kind == "method":
                    store.store(
                        group="method",
                        name=name,
                        node=method_node(name, obj),
                        package="_global_",
                        provider=info.distribution,
                    )
                else:
                    node = {"name": name, **plugin_parameters(kind, obj)}
                    store.store(group=kind, name=name, node=node, provider=info.distribution)
            except PluginError as exc:
                problems.append(str(exc))
                # A bare node keeps the name selectable; the run then reports the real problem.
                node = {"name": name}
                if kind == "method":
                    node = {
                        "method": node,
                        "tune": {"grid": {}, **TUNE_DEFAULTS},
                        "bipartition": dict(BIPARTITION_DEFAULTS),
                    }
                store.store(
                    group=kind,
                    name=name,
                    node=node,
                    package="_global_" if kind == "method" else None,
                    provider=info.distribution,
                )
    return problems
