"""Progress of a multirun across its jobs, whatever the launcher.

Jobs may run in this process (basic launcher), in worker processes (joblib) or on other
machines (submitit), so the progress lives in the sweep directory: the Hydra callback
:class:`SweepProgress` writes the number of jobs and the start time there when the sweep
starts, and each job, when it ends, counts the jobs that have written their units.json and
prints one line: a bar, done / total, elapsed time, ETA and what the job did.
"""

from __future__ import annotations

import json
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf
from rich.text import Text

from pmlbench.core.atomic import atomic_write_text

SWEEP_FILE = ".pmlbench_sweep.json"
JOB_MARKER = "units.json"


def count_jobs(config: DictConfig) -> int | None:
    """The number of jobs the basic sweeper makes of the sweep params and overrides."""
    hydra_cfg = config.hydra
    if "BasicSweeper" not in str(hydra_cfg.sweeper.get("_target_", "")):
        return None
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    params = hydra_cfg.sweeper.get("params") or {}
    arguments = [f"{key}={value}" for key, value in params.items()]
    arguments += list(hydra_cfg.overrides.task)
    overrides = OverridesParser.create().parse_overrides(arguments)
    return sum(len(batch) for batch in BasicSweeper.split_arguments(overrides, None))


class SweepProgress(Callback):
    """Hydra callback: record the sweep's size and start time in its directory."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        try:
            total = count_jobs(config)
        except Exception:  # progress is a convenience: an unexpected sweeper only loses the ETA
            total = None
        sweep_dir = Path(OmegaConf.select(config, "hydra.sweep.dir"))
        atomic_write_text(
            sweep_dir / SWEEP_FILE, json.dumps({"total_jobs": total, "start": time.time()})
        )


def _duration(seconds: float | None) -> str:
    return "-:--:--" if seconds is None else str(timedelta(seconds=int(max(seconds, 0))))


def sweep_status(sweep_dir: Path) -> dict[str, Any] | None:
    """Jobs done (units.json written), total jobs, elapsed seconds and ETA of a sweep."""
    try:
        info = json.loads((sweep_dir / SWEEP_FILE).read_text())
    except (OSError, ValueError):
        return None
    done = sum(1 for _ in sweep_dir.glob(f"*/{JOB_MARKER}"))
    total = info.get("total_jobs")
    elapsed = time.time() - float(info["start"])
    eta = elapsed / done * (total - done) if total and done else None
    return {"done": done, "total": total, "elapsed": elapsed, "eta": eta}


def progress_line(status: dict[str, Any], description: str, width: int = 20) -> Text:
    """One printable line: bar, done/total jobs, elapsed, ETA, then the job's description."""
    total, done = status["total"], status["done"]
    filled = round(width * done / total) if total else 0
    line = Text("sweep ", style="bold")
    line.append("━" * filled, style="green")
    line.append("─" * (width - filled), style="grey50")
    line.append(
        f" {done}/{total if total else '?'} jobs  {_duration(status['elapsed'])} "
        f"elapsed  eta {_duration(status['eta'])}  "
    )
    line.append(description, style="dim")
    return line
