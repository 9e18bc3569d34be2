"""Progress of a multirun across its jobs, whatever the launcher.

Jobs may run in this process (basic launcher), in worker processes (joblib) or on other
machines (submitit), so the progress lives in the sweep directory: the Hydra callback
:class:`SweepProgress` writes the number of jobs and the start time there when the sweep
starts, and each job, when it ends, counts the jobs that have written their units.json and
prints one line: a bar, done / total, elapsed time, ETA and what the job did. Once every job
has ended the callback prints the sweep's summary (:func:`sweep_summary`: units computed,
reused, declined and failed, where the results are, the report command to run next). In a
dry run (``dry_run=true``) the jobs write their plans instead, and the summary is the dry
run's (pmlbench.runner.dryrun).
"""

from __future__ import annotations

import json
import math
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf
from rich.text import Text

from pmlbench.core.atomic import atomic_write_text
from pmlbench.hydra_app.launchers import is_subclass, registered_target, target_class
from pmlbench.runner.format import SWEEP_PROGRESS_FILE as SWEEP_FILE
from pmlbench.runner.format import UNITS_FILE as JOB_MARKER
from pmlbench.runner.status import UNFINISHED, Status


def count_jobs(config: DictConfig) -> int | None:
    """The number of jobs Hydra's basic sweeper makes of the sweep params and overrides.

    The basic sweeper runs the cartesian product of the values of each key (the last
    override of a key wins, ``hydra.sweeper.params`` come first); this counts that product
    with Hydra's public override parser. None for another sweeper, whose jobs are unknown.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser

    hydra_cfg = config.hydra
    sweeper = target_class(hydra_cfg.sweeper)
    if not is_subclass(sweeper, registered_target("hydra/sweeper", "basic")):
        return None
    params = hydra_cfg.sweeper.get("params") or {}
    arguments = [f"{key}={value}" for key, value in params.items()]
    arguments += list(hydra_cfg.overrides.task)
    values: dict[str, int] = {}
    for override in OverridesParser.create().parse_overrides(arguments):
        count = 1
        if override.is_sweep_override():
            if not override.is_discrete_sweep():
                return None  # an interval sweep: the basic sweeper refuses it
            count = sum(1 for _ in override.sweep_string_iterator())
        values[override.get_key_element()] = count
    return math.prod(values.values())


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

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """The sweep's summary (:func:`sweep_summary`), or a dry run's from the plans its
        jobs wrote."""
        from pmlbench.core.console import print_message

        sweep_dir = Path(OmegaConf.select(config, "hydra.sweep.dir"))
        if not OmegaConf.select(config, "dry_run", default=False):
            store = OmegaConf.select(config, "results_store", default=None)
            for line in sweep_summary(sweep_dir, None if store in (None, "") else str(store)):
                print_message(line)
            return
        from pmlbench.runner.dryrun import sweep_summary as dry_run_summary

        summary = dry_run_summary(sweep_dir)
        print_message(summary if summary is not None else "dry run: no job wrote a plan")


# unit statuses (units.json) in the longer words a sweep's summary uses (Status.label is the
# short form a job's line and the dry run use)
SUMMARY_LABELS = {
    Status.COMPUTED: "computed",
    Status.CACHED: "reused from the result store",
    Status.NOT_APPLICABLE: "declined (n/a)",
    Status.FAILED: "failed",
}


def sweep_summary(sweep_dir: Path, store: str | None) -> list[str]:
    """What a finished sweep did, where its results are and what to run next::

        sweep done: 12 jobs, 60 units: 20 computed, 38 reused from the result store,
            2 declined (n/a), 0 failed
        results: outputs/multirun/2026-01-01/10-00-00_ab12 (store: outputs/store)
        next: pmlbench report outputs/multirun/2026-01-01/10-00-00_ab12

    Counted from the units.json of the sweep's jobs (their status names are those of the
    file format: ``cached`` is a unit reused from the result store); timed-out units and jobs
    that failed outside any unit (``error.txt``) are named when there are any. The warnings
    the units raised come first, one line per kind (pmlbench.runner.unit_warnings).
    """
    from collections import Counter

    from pmlbench.runner.format import ERROR_FILE, read_units
    from pmlbench.runner.unit_warnings import summary_lines

    jobs = sorted({p.parent for p in sweep_dir.glob(f"*/{JOB_MARKER}")})
    jobs += sorted({p.parent for p in sweep_dir.glob(f"*/{ERROR_FILE}")} - set(jobs))
    counts: Counter[str] = Counter()
    caught: list[list[dict[str, Any]]] = []
    for job in jobs:
        try:
            units = [u for u in read_units(job) if isinstance(u, dict)]
        except (OSError, ValueError):
            continue
        counts.update(str(u.get("status")) for u in units)
        caught += [u["warnings"] for u in units if isinstance(u.get("warnings"), list)]
    n_units = sum(counts.values())
    parts = [f"{counts[status]} {label}" for status, label in SUMMARY_LABELS.items()]
    if counts[Status.TIMED_OUT]:
        parts.append(f"{counts[Status.TIMED_OUT]} {Status.TIMED_OUT.label}")
    broken = sum(1 for job in jobs if (job / ERROR_FILE).exists())
    if broken:
        parts.append(f"{broken} job{'s' if broken > 1 else ''} failed outside any unit")
    unfinished = sum(counts[status] for status in UNFINISHED) + broken
    lines = [
        f"sweep done: {len(jobs)} job{'s' if len(jobs) != 1 else ''}, {n_units} units: "
        + ", ".join(parts),
        f"results: {sweep_dir}" + (f" (store: {store})" if store else ""),
        f"next: pmlbench report {sweep_dir}",
    ]
    if unfinished:
        lines[-1] += " (it lists what did not finish; rerunning the sweep retries failures)"
    where = f"the jobs' {JOB_MARKER} and log files"
    return summary_lines(caught, where) + lines


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
