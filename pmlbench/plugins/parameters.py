"""A plugin's hyper-parameters read from its signature, as plain config values.

A method's constructor arguments, a dataset loader's or a noise model's keyword arguments,
or the fields of a ``Params`` dataclass attribute, each with its default (:data:`REQUIRED`
where there is none). The Hydra config nodes (pmlbench.hydra_app.config_nodes) and the
command line's parameter checks are built from them.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

from pmlbench.errors import PluginError

_CONFIG_TYPES = (int, float, str, bool, type(None))
# Arguments a noise model receives from the runner rather than from the config.
_NOISE_POSITIONAL = 2
REQUIRED = "???"  # OmegaConf's missing value: Hydra refuses to run until it is set


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
