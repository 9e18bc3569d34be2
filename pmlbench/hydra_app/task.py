"""The Hydra task function: one job of a run or a multirun.

A job runs in Hydra's output directory with the result store (``results_store``), the
shared-work cache (``cache_dir``) and a BLAS thread limit (``threads_per_job``) set up from
the config. Inside a multirun a failing job is recorded and reported in one line, and the
sweep goes on; a single run exits non-zero with a one-line message. Units that are not
applicable get one line each (or one for all, when they share the reason) and are no
failure; ``unit_timeout`` is handed to the runner. With ``dry_run=true`` a job only says
what it would do (pmlbench.runner.dryrun) and writes its plan for the sweep's summary.

A multirun job that stops outside its units, on a setting it refuses or at preparation (a
method that needs a package that is not installed), writes its one-line error into its
``error.txt``, as a job that fails outside any unit writes its traceback there: the sweep's
progress counts it as ended and its summary names it (pmlbench.hydra_app.progress).
"""

from __future__ import annotations

import traceback
from collections import Counter
from pathlib import Path
from typing import Any, cast

from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from pmlbench.core.atomic import atomic_write_text
from pmlbench.core.console import console, print_error, print_message, results_table
from pmlbench.core.workcache import using_cache_dir
from pmlbench.errors import PmlbenchError
from pmlbench.hydra_app.config_tree import config_to_dict
from pmlbench.hydra_app.directories import naming_key, store_location_problem
from pmlbench.hydra_app.launchers import job_threads, runs_in_process
from pmlbench.hydra_app.resolvers import register_resolvers
from pmlbench.hydra_app.signals import quiet_resource_trackers, stop_on_signals
from pmlbench.runner import settings
from pmlbench.runner.format import ERROR_FILE, RESULTS_FILE, UNITS_FILE, read_units
from pmlbench.runner.outputs import tidy_records
from pmlbench.runner.run import UnitsFailed, run_config
from pmlbench.runner.status import Status
from pmlbench.runner.store import ResultStore
from pmlbench.runner.threads import limit_threads

# Launchers that run jobs in other processes import this module there before resolving the
# job's directory, which uses pmlbench's resolvers.
register_resolvers()


def _path(value: Any, cwd: Path) -> Path | None:
    """A configured directory, relative to the directory the command was started in."""
    if value in (None, "", False):
        return None
    path = Path(str(value)).expanduser()
    return path if path.is_absolute() else cwd / path


def _describe(overrides: list[str], out_dir: Path) -> str:
    """The job's own overrides and what became of its units."""
    text = " ".join(overrides) or out_dir.name
    units = _units(out_dir)
    if not units:
        stopped = (out_dir / ERROR_FILE).exists()
        return text + (f": stopped outside any unit ({ERROR_FILE})" if stopped else "")
    counts = Counter(u["status"] for u in units)
    return text + ": " + ", ".join(f"{counts[s]} {s.label}" for s in LINE_STATUSES if counts[s])


# the units.json statuses a job's line counts, in its order (labels: Status.label)
LINE_STATUSES = (
    Status.COMPUTED,
    Status.CACHED,
    Status.FAILED,
    Status.TIMED_OUT,
    Status.NOT_APPLICABLE,
)


def _not_applicable(out_dir: Path) -> None:
    """One line per not-applicable unit of the job, or one line when they share a reason."""
    entries = [u for u in _units(out_dir) if u.get("status") == Status.NOT_APPLICABLE]
    reasons = {str(u.get("reason")) for u in entries}
    if len(entries) > 1 and len(reasons) == 1:
        splits = ", ".join(str(u.get("split")) for u in entries)
        print_message(f"n/a: {len(entries)} units (splits {splits}): {reasons.pop()}")
        return
    for u in entries:
        print_message(f"n/a: split {u.get('split')}: {u.get('reason')}")


def _warnings(out_dir: Path, multirun: bool) -> None:
    """The warnings the job's units raised: each into the job's log file (Hydra's), and in a
    single run one line per kind on the terminal (a sweep prints them in its summary)."""
    import logging

    from pmlbench.runner.unit_warnings import log_lines, summary_lines

    units = [u for u in _units(out_dir) if isinstance(u.get("warnings"), list) and u["warnings"]]
    if not units:
        return
    files = [h for h in logging.getLogger().handlers if isinstance(h, logging.FileHandler)]
    for unit in units:
        for line in log_lines(unit.get("split"), unit["warnings"]):
            record = logging.LogRecord(__name__, logging.WARNING, __file__, 0, line, None, None)
            for handler in files:
                handler.handle(record)
    if multirun:
        return
    where = str(out_dir / UNITS_FILE) + "".join(f" and {h.baseFilename}" for h in files)
    for line in summary_lines([u["warnings"] for u in units], where):
        print_message(line)


def _units(out_dir: Path) -> list[dict[str, Any]]:
    try:
        return read_units(out_dir)
    except (OSError, ValueError):
        return []


def task(cfg: DictConfig) -> dict[str, float] | None:
    """Run the configured experiment in the Hydra job's output directory.

    In a launcher's process (a joblib worker, a SLURM job) the job stops on SIGTERM as on
    Ctrl-C, with its running unit and what that started (pmlbench.hydra_app.signals)."""
    quiet_resource_trackers()
    with stop_on_signals(job_process=_in_launcher_process()):
        return _job(cfg)


def _in_launcher_process() -> bool:
    """Whether this job runs in a process of its launcher's (not the command's own)."""
    hydra_cfg = HydraConfig.get()
    try:
        launcher = OmegaConf.to_container(hydra_cfg.launcher, resolve=True)
    except Exception:  # the job's own code reports a launcher config it cannot use
        return False
    multirun = hydra_cfg.mode == RunMode.MULTIRUN
    return not runs_in_process(cast(dict[str, Any], launcher), multirun)


def _job(cfg: DictConfig) -> dict[str, float] | None:
    hydra_cfg = HydraConfig.get()
    out_dir = Path(hydra_cfg.runtime.output_dir)
    cwd = Path(hydra_cfg.runtime.cwd)
    multirun = hydra_cfg.mode == RunMode.MULTIRUN
    config = config_to_dict(cfg)
    task_overrides = list(hydra_cfg.overrides.task)
    if multirun:  # a rerun into the same sweep directory: an earlier stop is not this one's
        (out_dir / ERROR_FILE).unlink(missing_ok=True)
    try:
        # quiet, recompute, dry_run, threads_per_job, ... (bool("no") would be True); the
        # settings that make the experiment are checked when its spec is built
        settings.check_execution_options(config)
        problem = store_location_problem(settings.value(config, "results_store"), cwd)
        if problem is not None:
            raise PmlbenchError(problem)
    except PmlbenchError as exc:
        _stopped_before_units(str(exc), out_dir, multirun)
        if settings.value(config, "quiet") is not True:  # a bad quiet=... is the error
            _sweep_line(Path(hydra_cfg.sweep.dir), out_dir, task_overrides)
        return None
    quiet = bool(settings.value(config, "quiet"))
    store_dir = _path(settings.value(config, "results_store"), cwd)
    store = ResultStore(store_dir) if store_dir is not None else None
    if settings.value(config, "dry_run"):
        overrides = [o for o in hydra_cfg.overrides.task if not o.startswith("dry_run=")]
        _dry_run(config, out_dir, store, multirun, overrides)
        return None
    summary = None
    stopped = False
    try:
        launcher = cast(dict[str, Any], OmegaConf.to_container(hydra_cfg.launcher, resolve=True))
        threads = job_threads(settings.value(config, "threads_per_job"), launcher, multirun)
        with (
            limit_threads(threads),
            using_cache_dir(_path(settings.value(config, "cache_dir"), cwd)),
        ):
            result = run_config(
                config,
                out_dir,
                quiet=quiet or not runs_in_process(launcher, multirun),
                store=store,
                recompute=bool(settings.value(config, "recompute")),
                catch_failures=True,
                unit_timeout=settings.value(config, "unit_timeout"),
                isolate=True,  # a plugin that exits or crashes fails its unit, not the sweep
            )
        _not_applicable(out_dir)
        _warnings(out_dir, multirun)
        if result.splits:
            summary = _report(config, result, out_dir, multirun, task_overrides)
    except UnitsFailed as exc:
        _not_applicable(out_dir)
        _warnings(out_dir, multirun)
        print_error(str(exc), stderr=False)
        if exc.result is not None and exc.result.splits:
            summary = _report(config, exc.result, out_dir, multirun, task_overrides)
        if not multirun:
            raise SystemExit(exc.exit_code) from None
    except PmlbenchError as exc:
        locations = {
            "hydra.sweep.dir" if multirun else "hydra.run.dir": (
                Path(hydra_cfg.sweep.dir) if multirun else out_dir
            ),
            "results_store": store_dir,
            "cache_dir": _path(settings.value(config, "cache_dir"), cwd),
        }
        _stopped_before_units(str(naming_key(exc, locations)), out_dir, multirun)
    except Exception as exc:  # outside any unit (e.g. writing results): one job, not the sweep
        if not multirun:
            raise
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        atomic_write_text(out_dir / ERROR_FILE, text)
        print_error(
            f"{type(exc).__name__}: {exc} (traceback in {out_dir / ERROR_FILE})", stderr=False
        )
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the command says so in one line
        stopped = True
        raise
    finally:
        if multirun and not quiet and not stopped:
            _sweep_line(Path(hydra_cfg.sweep.dir), out_dir, list(hydra_cfg.overrides.task))
    return summary


def _stopped_before_units(message: str, out_dir: Path, multirun: bool) -> None:
    """A job refused or could not prepare its units: one line; a single run exits with
    status 2, a multirun job leaves the line in its ``error.txt`` (see the module docstring)
    and the sweep goes on."""
    print_error(message, stderr=False)
    if not multirun:
        raise SystemExit(2) from None
    try:
        atomic_write_text(out_dir / ERROR_FILE, message + "\n")
    except (OSError, PmlbenchError):  # an unwritable job directory: the line above says
        pass  # why; only the summary misses the job


def _dry_run(
    config: dict[str, Any],
    out_dir: Path,
    store: ResultStore | None,
    multirun: bool,
    overrides: list[str],
) -> None:
    """Print what this job would do; in a multirun also leave its plan for the summary that
    pmlbench.hydra_app.progress.SweepProgress prints once every job is done."""
    from pmlbench.runner.dryrun import TimingIndex, plan_job, summary_line, write_job_plan

    try:
        plan = plan_job(
            config,
            out_dir,
            store=store,
            recompute=bool(settings.value(config, "recompute")),
            unit_timeout=settings.value(config, "unit_timeout"),
            label=" ".join(overrides) if multirun and overrides else None,
        )
    except PmlbenchError as exc:
        print_error(str(exc), stderr=False)
        if not multirun:
            raise SystemExit(2) from None
        return
    print_message(plan.line())
    # the plan marks the directory as a dry run's, which pmlbench report does not count as
    # an unfinished run (in a multirun it also feeds the sweep's summary)
    write_job_plan(out_dir, plan)
    if not multirun:
        timings = TimingIndex.from_stores([store.root] if store is not None else [])
        print_message(summary_line(plan.units, timings))


def run_title(config: dict[str, Any], result, overrides: list[str]) -> str:
    """A single run's title: method, dataset, the settings the command line changed from
    their defaults (pmlbench.hydra_app.overrides.changed_settings), noise and convention."""
    from pmlbench.hydra_app.overrides import changed_settings

    changed = changed_settings(overrides, config)
    return (
        f"{config['method']['name']} on {result.dataset_summary['name']} "
        f"({''.join(c + ', ' for c in changed)}noise {result.noise_name}, "
        f"{config['metric_convention']} convention)"
    )


def tuned_line(result) -> str | None:
    """``tuned on a held-out fold (holdout, 1 of 5 folds): lambda2=100 (5 of 5 splits)``:
    how the grid was searched (``tune.procedure``, as the splits record it) and the values
    the tuning chose, with the splits that chose each (None when nothing was tuned)."""
    chosen: dict[str, Counter[str]] = {}
    for split in result.splits:
        for name, value in sorted((split.tuned or {}).items()):
            text = str(int(value)) if isinstance(value, float) and value.is_integer() else value
            chosen.setdefault(name, Counter())[str(text)] += 1
    if not chosen:
        return None
    n = len(result.splits)
    parts = [
        ", ".join(f"{name}={value} ({count} of {n} splits)" for value, count in counts.items())
        for name, counts in chosen.items()
    ]
    return f"{_procedure_words(result.splits)}: " + "; ".join(parts)


def _procedure_words(splits) -> str:
    """How the splits' grids were searched, from their recorded tuning."""
    tuning = next((s.tuning for s in splits if getattr(s, "tuning", None)), None) or {}
    cv = tuning.get("cv")
    if tuning.get("procedure") == "holdout":
        return (
            f"tuned on a held-out fold (holdout, 1 of {cv} folds)"
            if cv
            else "tuned on a held-out fold"
        )
    return f"tuned by inner {cv}-fold cross-validation" if cv else "tuned by inner cross-validation"


def _report(
    config: dict[str, Any], result, out_dir: Path, multirun: bool, overrides: list[str]
) -> dict[str, float]:
    records = tidy_records(result)
    if not multirun:
        console.print(results_table(records, run_title(config, result, overrides)))
        tuned = tuned_line(result)
        if tuned is not None:
            print_message(tuned)
    print_message(f"results: {out_dir / RESULTS_FILE}")
    if not multirun:
        cached = sum(u["status"] == Status.CACHED for u in _units(out_dir))
        if cached:
            print_message(
                f"{cached} of {len(result.splits)} splits reused from the result store "
                f"(recompute=true runs them again)"
            )
    return records.groupby("metric")["value"].mean().to_dict()


def _sweep_line(sweep_dir: Path, out_dir: Path, overrides: list[str]) -> None:
    from pmlbench.hydra_app.progress import progress_line, sweep_status

    status = sweep_status(sweep_dir)
    if status is not None:
        console.print(progress_line(status, _describe(overrides, out_dir)), soft_wrap=True)
