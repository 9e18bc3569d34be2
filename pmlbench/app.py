"""The Hydra application behind ``python -m pmlbench``: compose config, run, write, print."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from pmlbench.errors import PmlbenchError
from pmlbench.experiment import ExperimentResult, ExperimentSpec, run_experiment


def config_dir() -> Path:
    """The Hydra config tree: inside the package when installed from a wheel, else ./conf."""
    packaged = Path(__file__).parent / "conf"
    if packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parent.parent / "conf"
    if checkout.is_dir():
        return checkout
    raise PmlbenchError("pmlbench's config tree is missing; reinstall pmlbench")


def config_to_dict(cfg: DictConfig) -> dict[str, Any]:
    container = OmegaConf.to_container(cfg, resolve=True)
    container.pop("hydra", None)
    return container


def spec_from_config(config: dict[str, Any]) -> ExperimentSpec:
    """The plain-data experiment spec from a resolved config dict."""
    protocol = config.get("protocol", {})
    return ExperimentSpec(
        dataset=config["dataset"], noise=config["noise"], method=config["method"],
        tune=config.get("tune", {}), bipartition=config.get("bipartition", {"rule": "method"}),
        metrics=list(config["metrics"]), metric_convention=config["metric_convention"],
        macro_f1_zero_division=config.get("macro_f1_zero_division", 0),
        seed=int(config["seed"]), n_splits=protocol.get("n_splits", 5),
        test_size=protocol.get("test_size", 0.5),
        save_predictions=bool(config.get("save_predictions", False)),
    )


def run_config(config: dict[str, Any], out_dir: Path, quiet: bool = False) -> ExperimentResult:
    """Run the experiment a resolved config describes and write its results into ``out_dir``."""
    from pmlbench.console import split_progress
    from pmlbench.fitting import fit_with_tuning
    from pmlbench.results import write_results

    spec = spec_from_config(config)
    label = f"{spec.method['name']} on {spec.dataset['name']}"
    with split_progress(quiet) as progress:
        task = progress.add_task(label, total=spec.n_splits)
        result = run_experiment(spec, on_split_done=lambda _: progress.advance(task),
                                fit=fit_with_tuning)
    write_results(result, config, out_dir)
    return result
