"""pmlbench's Hydra config tree and the plain config dict a job runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from pmlbench.errors import PmlbenchError

_PACKAGE = Path(__file__).resolve().parents[1]


def config_dir() -> Path:
    """The Hydra config tree: inside the package when installed from a wheel, else ./conf."""
    for candidate in (_PACKAGE / "conf", _PACKAGE.parent / "conf"):
        if candidate.is_dir():
            return candidate
    raise PmlbenchError("pmlbench's config tree is missing; reinstall pmlbench")


def config_to_dict(cfg: DictConfig) -> dict[str, Any]:
    """The resolved config as plain data, without Hydra's own node."""
    container = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(container, dict)  # a DictConfig always converts to a dict
    container.pop("hydra", None)
    return {str(key): value for key, value in container.items()}
