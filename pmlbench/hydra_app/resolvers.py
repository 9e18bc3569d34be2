"""pmlbench's OmegaConf resolvers, used by conf/config.yaml.

``${pmlbench.unique:}``: a short random token (6 hex digits), the same for every use in one
config and in the configs Hydra derives from it for a sweep's jobs (cached like Hydra's
``${now:...}``). The default run and sweep directories end with it, so two identical
commands started in the same second write into different directories instead of
overwriting each other's jobs.

:func:`register_resolvers` runs when pmlbench.hydra_app.task is imported: a launcher that
runs jobs in other processes (joblib, submitit) imports the task function there before it
resolves the job's directory, and the resolver must be known by then.
"""

from __future__ import annotations

import secrets

from omegaconf import OmegaConf

UNIQUE = "pmlbench.unique"


def _unique() -> str:
    return secrets.token_hex(3)


def register_resolvers() -> None:
    """Register pmlbench's resolvers with OmegaConf (idempotent)."""
    if not OmegaConf.has_resolver(UNIQUE):
        OmegaConf.register_new_resolver(UNIQUE, _unique, use_cache=True)
