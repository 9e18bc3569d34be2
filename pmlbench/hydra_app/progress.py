"""Progress of a multirun across its jobs, whatever the launcher.

Jobs may run in this process (basic launcher), in worker processes (joblib) or on other
machines (submitit), so the progress lives in the sweep directory: the Hydra callback
:class:`SweepProgress` writes the number of jobs, the start time and each job's estimated
CPU seconds there when the sweep starts, and each job, when it ends, counts the jobs that
have ended (written their units.json, or an error.txt when they stopped outside any unit:
pmlbench.hydra_app.task) and prints one line: a bar, done / total, elapsed time, ETA and
what the job did. Once every job has ended the callback prints the sweep's summary
(:func:`sweep_summary`: units computed, reused, declined and failed, where the results are,
the report command to run next).

The ETA (:func:`sweep_status`) comes from the dry run's estimates (pmlbench.runner.dryrun:
stored timings, else the cost model) of the units each job would compute, worked out before
the first job starts (pmlbench.hydra_app.sweep_plan; skipped with ``quiet=true``, which
prints no progress). Until a job has finished it assumes the estimates hold, with as many
jobs at a time as the launcher runs; then it scales the estimated CPU seconds still to come
by the wall time the sweep has taken per estimated CPU second so far (finished jobs, and
running jobs for the time they have run, up to their estimate). Without estimates it falls
back to the time per finished job.

In a dry run (``dry_run=true``) the callback puts pmlbench's dry-run sweeper in place of
Hydra's basic one (hydra_plugins/pmlbench_dry_run): every job is planned in this process,
its plan written into its directory, and the summary is the dry run's
(pmlbench.runner.dryrun).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Collection, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf
from rich.text import Text

from pmlbench.core.atomic import atomic_write_text
from pmlbench.hydra_app.launchers import (
    JOBLIB_LAUNCHER,
    SUBMITIT_LAUNCHER,
    is_subclass,
    target_class,
)
from pmlbench.runner.costmodel import shipped_model
from pmlbench.runner.format import SWEEP_PROGRESS_FILE as SWEEP_FILE
from pmlbench.runner.format import UNITS_FILE as JOB_MARKER
from pmlbench.runner.status import UNFINISHED, Status


def count_jobs(config: DictConfig) -> int | None:
    """The number of jobs Hydra's basic sweeper makes of the sweep params and overrides
    (pmlbench.hydra_app.sweep_plan.sweep_jobs); None for another sweeper, whose jobs are
    unknown, or an interval sweep, which the basic sweeper refuses."""
    from pmlbench.hydra_app.sweep_plan import sweep_jobs, uses_basic_sweeper

    if not uses_basic_sweeper(config):
        return None
    jobs = sweep_jobs(config)
    return None if jobs is None else len(jobs)


def parallel_jobs_of(launcher: Mapping[str, Any] | None) -> int:
    """How many jobs the launcher runs at a time: joblib's ``n_jobs`` on this machine's cores,
    submitit's ``array_parallelism``, 1 for the basic launcher and any other."""
    from pmlbench.core.parallel import available_cores, parallel_jobs

    launcher = launcher or {}
    cls = target_class(launcher)
    if is_subclass(cls, JOBLIB_LAUNCHER):
        return parallel_jobs(launcher.get("n_jobs", -1), available_cores())
    if is_subclass(cls, SUBMITIT_LAUNCHER):
        try:
            return max(int(launcher.get("array_parallelism") or 1), 1)
        except (TypeError, ValueError):
            return 1
    return 1


def job_estimates(config: DictConfig) -> dict[str, float | None] | None:
    """Estimated CPU seconds of the units each job of the sweep would compute (None for a job
    whose estimate is unknown), by the job's directory relative to the sweep directory;
    None when the sweeper's jobs are unknown. Nothing runs and nothing is written: each job
    is planned as a dry run plans it (pmlbench.runner.dryrun)."""
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig

    from pmlbench.errors import PmlbenchError
    from pmlbench.hydra_app.config_tree import config_to_dict
    from pmlbench.hydra_app.sweep_plan import (
        sweep_configs,
        sweep_jobs,
        task_config,
        uses_basic_sweeper,
    )
    from pmlbench.runner import settings
    from pmlbench.runner.dryrun import Estimator, TimingIndex, job_estimate, plan_job
    from pmlbench.runner.store import ResultStore

    jobs = sweep_jobs(config) if uses_basic_sweeper(config) else None
    if jobs is None:
        return None
    sweep_dir = Path(str(config.hydra.sweep.dir))
    estimators: dict[Path | None, Estimator] = {}
    estimates: dict[str, float | None] = {}
    saved = HydraConfig.instance().cfg
    try:
        loader = GlobalHydra.instance().config_loader()
        for _, _, cfg, directory in sweep_configs(loader, config, jobs):
            name = os.path.relpath(directory, sweep_dir)
            job = config_to_dict(task_config(cfg))
            store_dir = settings.value(job, "results_store")
            root = (
                None
                if store_dir in (None, "")
                else Path(str(cfg.hydra.runtime.cwd)) / str(store_dir)
            )
            if root not in estimators:
                timings = TimingIndex.from_stores([root] if root is not None else [])
                estimators[root] = Estimator(timings, shipped_model())
            try:
                plan = plan_job(
                    job,
                    directory,
                    store=None if root is None else ResultStore(root),
                    recompute=bool(settings.value(job, "recompute")),
                    unit_timeout=settings.value(job, "unit_timeout"),
                )
            except PmlbenchError:  # the job reports it when it runs
                estimates[name] = None
                continue
            estimates[name] = job_estimate(plan.units, estimators[root])
    finally:
        HydraConfig.instance().cfg = saved
    return estimates


DRY_RUN_SWEEPER = "hydra_plugins.pmlbench_dry_run.pmlbench_dry_run.DryRunSweeper"
NOTICE_JOBS = 100  # a sweep of more jobs says that it is estimating them (a few seconds)


def use_dry_run_sweeper(config: DictConfig) -> None:
    """Put pmlbench's dry-run sweeper (:data:`DRY_RUN_SWEEPER`) in place of Hydra's basic one,
    its ``params`` and ``max_batch_size`` kept. Hydra's multirun builds the sweeper from this
    very config after the callbacks' ``on_multirun_start``."""
    from omegaconf import open_dict, read_write

    with read_write(config.hydra.sweeper), open_dict(config.hydra.sweeper):
        config.hydra.sweeper._target_ = DRY_RUN_SWEEPER


class SweepProgress(Callback):
    """Hydra callback: record the sweep's size and start time in its directory."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Record the sweep's size, its jobs' estimates and its start; in a dry run, put the
        dry-run sweeper in place of the basic one."""
        dry_run = bool(OmegaConf.select(config, "dry_run", default=False))
        try:
            total = count_jobs(config)
        except Exception:  # progress is a convenience: an unexpected sweeper only loses the ETA
            total = None
        if dry_run and total is not None:
            use_dry_run_sweeper(config)
        estimates = None
        if not dry_run and total and not OmegaConf.select(config, "quiet", default=False):
            if total > NOTICE_JOBS:  # about 0.1 s of CPU per job: say why nothing runs yet
                from pmlbench.core.console import print_message

                print_message(
                    f"sweep: estimating the CPU time of its {total} jobs for the ETA "
                    "(quiet=true skips it)"
                )
            try:
                estimates = job_estimates(config)
            except Exception:  # an ETA by the job count instead
                estimates = None
        launcher = OmegaConf.to_container(config.hydra.launcher, resolve=True)
        info = {
            "total_jobs": total,
            "start": time.time(),
            "parallel": parallel_jobs_of(cast(dict[str, Any], launcher)),
            "estimates": estimates,
        }
        sweep_dir = Path(OmegaConf.select(config, "hydra.sweep.dir"))
        atomic_write_text(sweep_dir / SWEEP_FILE, json.dumps(info))

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
    file format: ``cached`` is a unit reused from the result store); timed-out units are
    counted when there are any, and jobs that stopped outside any unit (``error.txt``: a
    setting refused, a preparation that failed, a failure after the units) are counted and
    named by their directories (:func:`stopped_jobs_part`). The warnings the units raised
    come first, one line per kind (pmlbench.runner.unit_warnings).
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
    broken = sorted((job.name for job in jobs if (job / ERROR_FILE).exists()), key=_job_order)
    if broken:
        parts.append(stopped_jobs_part(broken))
    unfinished = sum(counts[status] for status in UNFINISHED) + len(broken)
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


def _job_order(name: str) -> tuple[int, str]:
    """Job directories in Hydra's job order (``2_...`` before ``10_...``)."""
    number = name.split("_", 1)[0]
    return (int(number) if number.isdigit() else -1, name)


NAMED_JOBS = 5  # the stopped jobs a summary names before "and N more"


def stopped_jobs_part(names: list[str]) -> str:
    """``1 job stopped outside any unit (0_plain_genbase_uniform_rate1: its error.txt)``:
    the summary's part on jobs that stopped outside any unit, naming their directories."""
    from pmlbench.runner.format import ERROR_FILE

    shown = ", ".join(names[:NAMED_JOBS])
    if len(names) > NAMED_JOBS:
        shown += f" and {len(names) - NAMED_JOBS} more"
    plural = "s" if len(names) > 1 else ""
    return f"{len(names)} job{plural} stopped outside any unit ({shown}: {ERROR_FILE} says why)"


def ended_jobs(sweep_dir: Path) -> tuple[set[str], set[str]]:
    """The jobs of a sweep that have ended, by directory relative to ``sweep_dir``: those
    that wrote their units.json, and those that stopped outside any unit without one (an
    error.txt alone)."""
    from pmlbench.runner.format import ERROR_FILE

    with_units = {os.path.relpath(p.parent, sweep_dir) for p in sweep_dir.glob(f"*/{JOB_MARKER}")}
    errors = {os.path.relpath(p.parent, sweep_dir) for p in sweep_dir.glob(f"*/{ERROR_FILE}")}
    return with_units, errors - with_units


def _duration(seconds: float | None) -> str:
    return "-:--:--" if seconds is None else str(timedelta(seconds=int(max(seconds, 0))))


def sweep_status(sweep_dir: Path, now: float | None = None) -> dict[str, Any] | None:
    """Jobs done (units.json written), total jobs, elapsed seconds and ETA of a sweep (see the
    module docstring); ``now`` is the time to count to (default: the clock's)."""
    try:
        info = json.loads((sweep_dir / SWEEP_FILE).read_text())
        start = float(info["start"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    finished, stopped = ended_jobs(sweep_dir)
    done = len(finished) + len(stopped)
    total = info.get("total_jobs")
    now = time.time() if now is None else now
    elapsed = now - start
    eta = model_eta(sweep_dir, info, finished, elapsed, now, stopped)
    if eta is None and total and done:
        eta = elapsed / done * (total - done)
    return {"done": done, "total": total, "elapsed": elapsed, "eta": eta}


def model_eta(
    sweep_dir: Path,
    info: dict[str, Any],
    finished: set[str],
    elapsed: float,
    now: float,
    stopped: Collection[str] = (),
) -> float | None:
    """Seconds left by the jobs' estimates, calibrated by the sweep so far (None without
    estimates). A job without an estimate counts as the mean of the others; a job that
    stopped outside any unit (``stopped``) computed nothing and is left out of both."""
    estimates = info.get("estimates")
    if not isinstance(estimates, dict) or not estimates:
        return None
    known = [float(v) for v in estimates.values() if isinstance(v, (int, float))]
    if not known:
        return None
    mean = sum(known) / len(known)
    cost = {
        k: float(v) if isinstance(v, (int, float)) else mean
        for k, v in estimates.items()
        if k not in stopped
    }
    done = sum(cost[k] for k in finished if k in cost)
    left = credit = 0.0
    for name, seconds in cost.items():
        if name in finished:
            continue
        left += seconds
        started = _started(sweep_dir / name)
        if started is not None:
            credit += min(seconds, max(now - started, 0.0))  # running for that long
    if done > 0 and done + credit > 0:
        rate = elapsed / (done + credit)  # wall seconds per estimated CPU second so far
    else:
        rate = 1.0 / max(int(info.get("parallel") or 1), 1)  # the estimates, jobs in parallel
    return rate * max(left - credit, 0.0)


def _started(job_dir: Path) -> float | None:
    """When a job started: Hydra writes its ``.hydra/`` record first (None: not started)."""
    try:
        return (job_dir / ".hydra").stat().st_mtime
    except OSError:
        return None


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
