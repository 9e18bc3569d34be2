"""The sweeper of a dry run (``dry_run=true``) of a multirun: every job planned in this process.

A dry run launches nothing, so it needs no launcher and no process per job, and Hydra's
basic sweeper would compose each job's config twice (pmlbench.hydra_app.sweep_plan). When
the primary config sets ``dry_run=true`` and uses the basic sweeper,
pmlbench.hydra_app.progress.SweepProgress puts this sweeper in its place before Hydra
instantiates it (Hydra's multirun calls the callbacks' ``on_multirun_start`` with the same
config it then builds the sweeper from). This sweeper makes the basic sweeper's jobs
(:func:`~pmlbench.hydra_app.sweep_plan.sweep_jobs`), composes their configs once per
distinct choice of config groups and calls the task function on each in turn, with the job's
config as the current Hydra config and its output directory created, as Hydra's ``run_job``
does; the task's dry run then writes the job's plan there and prints its line
(pmlbench.hydra_app.task). No job log file, no ``.hydra/`` record and no per-job callbacks:
nothing runs.

Hydra instantiates sweepers only from the ``hydra_plugins`` package, hence this module; it
imports pmlbench only when it sweeps, since Hydra imports it in every command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hydra.plugins.sweeper import Sweeper

TARGET = "hydra_plugins.pmlbench_dry_run.pmlbench_dry_run.DryRunSweeper"


class DryRunSweeper(Sweeper):
    """Plans every job of the basic sweeper's sweep in this process (see the module)."""

    def __init__(self, max_batch_size: int | None = None, params: Any = None) -> None:
        super().__init__()
        self.config: Any = None
        self.hydra_context: Any = None
        self.task_function: Any = None

    def setup(self, *, hydra_context: Any, task_function: Any, config: Any) -> None:
        self.hydra_context, self.task_function, self.config = hydra_context, task_function, config

    def sweep(self, arguments: list[str]) -> Any:
        from hydra.core.hydra_config import HydraConfig
        from omegaconf import OmegaConf, open_dict, read_write

        from pmlbench.hydra_app.sweep_plan import sweep_configs, sweep_jobs, task_config

        jobs = sweep_jobs(self.config)
        assert jobs is not None  # SweepProgress swaps it in for the basic sweeper's jobs only
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(self.config, sweep_dir / "multirun.yaml")
        saved = HydraConfig.instance().cfg
        returns = []
        try:
            loader = self.hydra_context.config_loader
            for _, _, cfg, directory in sweep_configs(loader, self.config, jobs):
                # the job's config is the current Hydra config (sweep_configs): now with its
                # output directory, in both, as run_job leaves them
                output_dir = str(directory.absolute())
                for runtime in (cfg.hydra.runtime, HydraConfig.get().runtime):
                    node: Any = runtime
                    with read_write(node), open_dict(node):
                        node.output_dir = output_dir
                directory.mkdir(parents=True, exist_ok=True)
                returns.append(self.task_function(task_config(cfg)))
        finally:
            HydraConfig.instance().cfg = saved  # as run_job leaves it
        return [returns]
