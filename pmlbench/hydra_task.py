"""The Hydra task function: one job of a run or a multirun."""

from __future__ import annotations

from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from pmlbench.app import config_to_dict, run_config
from pmlbench.console import console, results_table
from pmlbench.errors import PmlbenchError


def task(cfg: DictConfig) -> dict[str, float]:
    """Run the configured experiment in the Hydra job's output directory."""
    out_dir = Path(HydraConfig.get().runtime.output_dir)
    config = config_to_dict(cfg)
    try:
        result = run_config(config, out_dir, quiet=bool(cfg.get("quiet", False)))
    except PmlbenchError as exc:
        console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        raise SystemExit(2) from None
    records = result.records()
    title = (f"{config['method']['name']} on {result.dataset_summary['name']} "
             f"(noise {result.noise_name}, {config['metric_convention']} convention)")
    console.print(results_table(records, title))
    console.print(f"results: {out_dir / 'results.csv'}", highlight=False)
    return records.groupby("metric")["value"].mean().to_dict()
