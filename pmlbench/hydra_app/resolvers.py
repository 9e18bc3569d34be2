"""pmlbench's OmegaConf resolvers, used by conf/config.yaml.

``${pmlbench.unique:}``: a short random token (6 hex digits), the same for every use in one
config and in the configs Hydra derives from it for a sweep's jobs (cached like Hydra's
``${now:...}``). The default run and sweep directories end with it, so two identical
commands started in the same second write into different directories instead of
overwriting each other's jobs.

:func:`register_resolvers` runs when pmlbench.hydra_app.task is imported: a launcher that
runs jobs in other processes (joblib, submitit) imports the task function there before it
resolves the job's directory, and the resolver must be known by then.

``${pmlbench.noise:${noise}}``: the noise level in a directory name (:func:`noise_tag`), so
a sweep's job subdirectories tell noise rates apart (``uniform_rate0.5``).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from typing import Any

from omegaconf import OmegaConf

UNIQUE = "pmlbench.unique"
NOISE = "pmlbench.noise"


def _unique() -> str:
    return secrets.token_hex(3)


def _text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return re.sub(r"[^\w.+-]", "-", str(value))


def noise_tag(node: Mapping[str, Any]) -> str:
    """A noise config node as a file-name part: its name, its first parameter and every
    other parameter off the plugin's default, e.g. ``uniform_rate1``,
    ``uniform_rate1_roundingfloor``, ``none``. The report's level labels follow the same
    rule (pmlbench.report.prepare.noise_levels)."""
    from pmlbench.errors import PluginError
    from pmlbench.plugins import registry
    from pmlbench.plugins.parameters import plugin_parameters

    name = str(node.get("name", "noise"))
    params = {k: v for k, v in node.items() if k != "name" and not isinstance(v, Mapping)}
    try:
        info = registry.plugins("noise").get(name)
        defaults = dict(plugin_parameters("noise", info.load())) if info is not None else {}
    except (PluginError, ImportError, AttributeError, TypeError, ValueError):
        defaults = {}
    order = [k for k in defaults if k in params] + [k for k in params if k not in defaults]
    shown = [
        k
        for i, k in enumerate(order)
        if i == 0 or k not in defaults or _text(params[k]) != _text(defaults[k])
    ]
    return "_".join([_text(name), *(f"{k}{_text(params[k])}" for k in shown)])


def register_resolvers() -> None:
    """Register pmlbench's resolvers with OmegaConf (idempotent)."""
    if not OmegaConf.has_resolver(UNIQUE):
        OmegaConf.register_new_resolver(UNIQUE, _unique, use_cache=True)
    if not OmegaConf.has_resolver(NOISE):
        OmegaConf.register_new_resolver(NOISE, noise_tag)
