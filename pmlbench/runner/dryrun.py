"""Know before you run: what a run or sweep would compute, and roughly how long it would take.

``python -m pmlbench -m <sweep> dry_run=true`` makes each job call :func:`plan_job` instead of
running: it computes the job's unit keys (which needs the plugins' classes, never their data)
and looks each key up in the result store exactly as a run would, through the runner's own
reuse and skip decisions (pmlbench.runner.run.UnitRunner), so the counts are those of the
real run. Nothing is computed, no dataset is loaded, and nothing is written to the store or
the shared-work cache. Each job writes its plan to ``dry_run.json`` in its own directory:
in a multirun :func:`sweep_summary` counts the whole sweep from these once every job is done,
and ``pmlbench report`` knows a directory holding one as a dry run's, never as an unfinished
run (Hydra creates the job's directory and its ``.hydra/`` record before the job starts).

Each unit has one store state:

- ``done``: its ``<key>.json`` is there (and would be reused),
- ``failed``: a ``<key>.failed.json`` (the run tries it again),
- ``not_applicable``: a ``<key>.na.json`` (skipped),
- ``timed_out``: a ``<key>.timeout.json`` (skipped, unless the limit was raised or removed),
- ``missing``: none of these.

``recompute=true`` computes every unit whatever its state.

The CPU time of the units to compute is estimated from the ``cpu_seconds`` the store holds
for finished units (:class:`TimingIndex`): the mean over units of the same method on the same
dataset (other parameters, noise levels and splits); failing that, the method's mean CPU
seconds per data entry (instances x (features + labels)) on other datasets times the
dataset's size, when some stored unit tells that size; otherwise unknown.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pmlbench.core.atomic import atomic_write_text
from pmlbench.protocol.experiment import prepare
from pmlbench.runner.format import DRY_RUN_FILE, from_json, to_json
from pmlbench.runner.run import UnitRunner, retries_timeout, spec_from_config
from pmlbench.runner.status import Status
from pmlbench.runner.store import ResultStore, iter_records
from pmlbench.runner.timeout import check_unit_timeout
from pmlbench.runner.units import canonical_json, describe_units, unit_description

# store states, in the order the summary names them
STATES = (Status.DONE, Status.FAILED, Status.NOT_APPLICABLE, Status.TIMED_OUT, Status.MISSING)


@dataclass
class PlannedUnit:
    """One unit of a dry run: its store state and whether the run would compute it."""

    key: str
    split: int
    state: str
    compute: bool
    method: str
    dataset: str  # the dataset's config node as canonical JSON (name and parameters)
    dataset_name: str
    elapsed_seconds: float | None = None  # of a timed-out unit


@dataclass
class JobPlan:
    """What one job (one experiment config) would do."""

    label: str
    store: str | None
    units: list[PlannedUnit] = field(default_factory=list)
    recompute: bool = False

    def line(self) -> str:
        """``dry run: <label>: 5 units: 3 done, 2 missing (splits 3, 4)``."""
        parts = []
        for state in STATES:
            splits = [u.split for u in self.units if u.state == state]
            if not splits:
                continue
            text = f"{len(splits)} {state.label}"
            if state != Status.DONE:
                text += f" (split{'s' if len(splits) > 1 else ''} {', '.join(map(str, splits))})"
            parts.append(text)
        tail = "; all to compute (recompute=true)" if self.recompute else ""
        return f"dry run: {self.label}: {_units(len(self.units))}: {', '.join(parts)}{tail}"


def plan_job(
    config: dict[str, Any],
    out_dir: Path,
    *,
    store: ResultStore | None,
    recompute: bool = False,
    unit_timeout: Any = None,
    label: str | None = None,
) -> JobPlan:
    """The dry run of one config: each unit's store state, computing and loading nothing.

    The config is checked as a run checks it (experiment settings, plugin parameters,
    ``unit_timeout``), so a dry run fails where the run would fail before any work.
    """
    spec = spec_from_config(config)
    limit = check_unit_timeout(unit_timeout)
    plugins = prepare(spec)
    units = describe_units(spec, plugins.registrations)
    # recompute=False: the store state of every unit, whatever this run would do with it
    runner = UnitRunner(
        spec, config, units, store, False, Path(out_dir), plugins, unit_timeout=limit
    )
    dataset = canonical_json(unit_description(spec, 0, fingerprints=False)["dataset"])
    method, dataset_name = spec.method["name"], spec.dataset["name"]
    plan = JobPlan(
        label or f"{method} on {dataset_name}",
        None if store is None else str(store.root),
        recompute=recompute,
    )
    for split, key in enumerate(units.keys):
        elapsed = None
        state: Status
        if store is None:
            state, compute = Status.MISSING, True
        elif runner.stored(split) is not None:
            state, compute = Status.DONE, False
        elif (earlier := runner.skipped(split)) is not None:
            state, compute = earlier[0], False
            elapsed = _number(earlier[1].get("elapsed_seconds"))
        elif (timeout := store.load_outcome(key, Status.TIMED_OUT)) is not None:
            state, compute = Status.TIMED_OUT, retries_timeout(timeout, limit)
            elapsed = _number(timeout.get("elapsed_seconds"))
        elif store.load_outcome(key, Status.FAILED) is not None:
            state, compute = Status.FAILED, True
        else:
            state, compute = Status.MISSING, True
        plan.units.append(
            PlannedUnit(
                key,
                split,
                str(state),
                compute or recompute,
                method,
                dataset,
                dataset_name,
                elapsed,
            )
        )
    return plan


def _units(n: int) -> str:
    return f"{n} unit{'' if n == 1 else 's'}"


def _number(value: Any) -> float | None:
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None


# ----------------------------------------------------------------------------- timings


def _size(summary: Any) -> float | None:
    """Data entries of a dataset summary: instances x (features + labels)."""
    if not isinstance(summary, dict):
        return None
    try:
        return float(summary["n"]) * (float(summary["d"]) + float(summary["l"]))
    except (KeyError, TypeError, ValueError):
        return None


@dataclass
class TimingIndex:
    """Stored CPU seconds of finished units, by method and dataset."""

    by_pair: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    by_method: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    sizes: dict[str, float] = field(default_factory=dict)
    n_timings: int = 0

    @classmethod
    def from_records(cls, records: Iterable[dict[str, Any]]) -> TimingIndex:
        pairs: dict[tuple[str, str], list[float]] = defaultdict(list)
        methods: dict[str, list[tuple[float, float]]] = defaultdict(list)
        sizes: dict[str, float] = {}
        n = 0
        for record in records:
            unit = record.get("unit") or {}
            try:
                method = str(unit["method"]["name"])
                dataset = canonical_json(unit["dataset"])
            except (KeyError, TypeError, ValueError):
                continue
            size = _size(record.get("dataset"))
            if size:
                sizes[dataset] = size
            cpu = _number((record.get("run") or {}).get("cpu_seconds"))
            if cpu is None or not math.isfinite(cpu) or cpu < 0:
                continue
            n += 1
            pairs[(method, dataset)].append(cpu)
            if size:
                methods[method].append((cpu, size))
        return cls(dict(pairs), dict(methods), sizes, n)

    @classmethod
    def from_stores(cls, stores: Iterable[str | Path]) -> TimingIndex:
        records = (
            record for store in stores if Path(store).is_dir() for record in iter_records(store)
        )
        return cls.from_records(records)

    def estimate(self, method: str, dataset: str) -> float | None:
        """Expected CPU seconds of one unit of ``method`` on ``dataset`` (None: unknown)."""
        same = self.by_pair.get((method, dataset))
        if same:
            return sum(same) / len(same)
        size, other = self.sizes.get(dataset), self.by_method.get(method)
        if size and other:
            return size * sum(cpu / s for cpu, s in other) / len(other)
        return None


# ----------------------------------------------------------------------------- summaries


def duration(seconds: float) -> str:
    """``0.4 s``, ``12 s``, ``41 min``, ``2.3 h``."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def summary_line(units: list[PlannedUnit], timings: TimingIndex) -> str:
    """``dry run: 600 units: 412 done, 3 failed, 0 n/a, 0 timed out, 185 missing; estimated
    41 min CPU for the 188 to compute (from 412 stored timings)``, counting each unit key
    once (jobs of a sweep may share units)."""
    unique = list({u.key: u for u in units}.values())
    counts = Counter(u.state for u in unique)
    text = f"dry run: {_units(len(unique))}: " + ", ".join(f"{counts[s]} {s.label}" for s in STATES)
    todo = [u for u in unique if u.compute]
    if not todo:
        return text + "; nothing to compute"
    estimates = []
    for u in todo:
        value = timings.estimate(u.method, u.dataset)
        if value is not None and u.elapsed_seconds is not None:
            value = max(value, u.elapsed_seconds)  # it already ran that long
        estimates.append(value)
    known = [e for e in estimates if e is not None]
    source = f"(from {timings.n_timings} stored timings)"
    if not known:
        return (
            text + f"; CPU time for the {len(todo)} to compute unknown "
            "(no stored timing of the same method)"
        )
    total = duration(sum(known))
    if len(known) == len(todo):
        return text + f"; estimated {total} CPU for the {len(todo)} to compute {source}"
    return (
        text + f"; estimated {total} CPU for {len(known)} of the {len(todo)} to compute, "
        f"{len(todo) - len(known)} unknown {source}"
    )


def write_job_plan(out_dir: Path, plan: JobPlan) -> Path:
    """Write a job's plan into its directory, for :func:`sweep_summary`."""
    return atomic_write_text(Path(out_dir) / DRY_RUN_FILE, to_json(asdict(plan)))


def read_job_plans(sweep_dir: Path) -> list[JobPlan]:
    """The plans the jobs of a dry-run sweep wrote (unreadable ones are skipped)."""
    plans = []
    for path in sorted(Path(sweep_dir).rglob(DRY_RUN_FILE)):
        try:
            data = from_json(path.read_text(encoding="utf-8"))
            units = [PlannedUnit(**u) for u in data["units"]]
            plans.append(JobPlan(data["label"], data["store"], units, bool(data["recompute"])))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return plans


def sweep_summary(sweep_dir: Path) -> str | None:
    """The summary line of a dry-run sweep from its jobs' plans (None when there are none)."""
    plans = read_job_plans(sweep_dir)
    if not plans:
        return None
    units = [u for plan in plans for u in plan.units]
    timings = TimingIndex.from_stores(sorted({p.store for p in plans if p.store}))
    return f"{summary_line(units, timings)}; {len(plans)} jobs"
