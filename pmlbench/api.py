"""The Python API: compose a config from overrides and run it, without the command line.

>>> from pmlbench.api import run
>>> result = run(["method=mlknn", "dataset=genbase", "protocol.n_splits=2"], "outputs/demo")
>>> from pmlbench.runner.format import tidy_records
>>> tidy_records(result).groupby("metric")["value"].mean()
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pmlbench.protocol.experiment import ExperimentResult


def compose_config(overrides: list[str] | None = None) -> dict[str, Any]:
    """The resolved config dict that ``python -m pmlbench <overrides>`` would run."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from pmlbench.hydra_app.config_nodes import register_config_nodes
    from pmlbench.hydra_app.config_tree import config_dir, config_to_dict
    from pmlbench.hydra_app.overrides import check_overrides

    overrides = list(overrides or [])
    check_overrides(overrides)
    register_config_nodes()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides)
    return config_to_dict(cfg)


def run(overrides: list[str] | None, out_dir: str | Path, quiet: bool = True) -> ExperimentResult:
    """Run one experiment and write its results into ``out_dir``."""
    from pmlbench.runner.run import run_config

    return run_config(compose_config(overrides), Path(out_dir), quiet=quiet)
