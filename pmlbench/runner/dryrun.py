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

The CPU time of the units to compute is estimated (:class:`Estimator`) from, in this order:

- the ``cpu_seconds`` the store holds for finished units of the same method on the same
  dataset (other parameters, noise levels and splits; :class:`TimingIndex`), each scaled from
  its fits to the unit's (tuning grid and procedure, pmlbench.runner.costmodel.Work);
- the cost model fitted to recorded times (pmlbench.runner.costmodel), from the size of the
  unit's data (its training instances, features and labels, known from the store's records
  of the dataset, else from the model's sources, which hold every bundled dataset) and its
  fits; a method the model does not know (a plugin's) gets the model's fallback rule (the
  median known method), scaled to the method's own stored timings on other datasets when
  the store holds any.

A unit that a method declined up front before, the same unit (:func:`unit_signature`: the
same method, parameters, data, noise and protocol) at another commit, is expected to decline
again at no cost: the store's own declined units (``.na.json``) and those the cost model's
sources hold declined tell, and the summary counts them apart.

A unit whose dataset's size nobody recorded stays unknown, and the summary says so and why.
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
from pmlbench.runner.costmodel import (
    CostModel,
    Work,
    record_work,
    shipped_model,
    unit_signature,
)
from pmlbench.runner.format import DRY_RUN_FILE, from_json, to_json
from pmlbench.runner.run import UnitRunner, retries_timeout, spec_from_config
from pmlbench.runner.status import Status
from pmlbench.runner.store import ResultStore, iter_outcomes, iter_records
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
    test_size: float | None = None  # the protocol's, for the training instances of a split
    # its fits (pmlbench.runner.costmodel.Work, as a dict for dry_run.json)
    work: dict[str, Any] = field(default_factory=lambda: asdict(Work()))
    signature: str | None = None  # pmlbench.runner.costmodel.unit_signature


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
    description = unit_description(spec, 0, fingerprints=False)
    dataset = canonical_json(description["dataset"])
    test_size = _number(description.get("test_size"))
    work = asdict(Work.of(description.get("tune"), description.get("bipartition")))
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
                test_size,
                dict(work),
                unit_signature(units.descriptions[split]),
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


@dataclass(frozen=True)
class Timing:
    """A finished unit's CPU seconds, its work, and its data's size when the record tells."""

    cpu_seconds: float
    work: Work
    size: tuple[float, float, float] | None = None  # (training instances, features, labels)


@dataclass
class TimingIndex:
    """Stored CPU seconds of finished units, by method and dataset, and the sizes of the
    datasets the records tell."""

    by_pair: dict[tuple[str, str], list[Timing]] = field(default_factory=dict)
    by_method: dict[str, list[Timing]] = field(default_factory=dict)
    n_timings: int = 0
    # (instances, features, labels) of each dataset (its config node as canonical JSON)
    dims: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    # unit signatures the stores hold declined and never finished -> the store's path
    declined: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_records(
        cls,
        records: Iterable[dict[str, Any]],
        declined: Iterable[tuple[str, dict[str, Any]]] = (),
    ) -> TimingIndex:
        """The index of finished-unit ``records`` and of ``declined`` units' outcomes, each
        with the store it is in."""
        pairs: dict[tuple[str, str], list[Timing]] = defaultdict(list)
        methods: dict[str, list[Timing]] = defaultdict(list)
        dims: dict[str, tuple[float, float, float]] = {}
        n = 0
        declined = list(declined)
        finished: set[str] = set()  # signatures, needed only against declined outcomes
        for record in records:
            unit = record.get("unit") or {}
            if declined and unit:
                finished.add(unit_signature(unit))
            try:
                method = str(unit["method"]["name"])
                dataset = canonical_json(unit["dataset"])
            except (KeyError, TypeError, ValueError):
                continue
            shape = _shape(record.get("dataset"))
            if shape is not None:
                dims[dataset] = shape
            cpu = _number((record.get("run") or {}).get("cpu_seconds"))
            if cpu is None or not math.isfinite(cpu) or cpu < 0:
                continue
            n += 1
            n_train = _number((record.get("split") or {}).get("n_train"))
            size = None if shape is None or not n_train else (n_train, shape[1], shape[2])
            timing = Timing(cpu, record_work(record), size)
            pairs[(method, dataset)].append(timing)
            methods[method].append(timing)
        refused: dict[str, str] = {}
        for where, outcome in declined:
            unit = outcome.get("unit")
            if isinstance(unit, dict) and (signature := unit_signature(unit)) not in finished:
                refused.setdefault(signature, where)
        return cls(dict(pairs), dict(methods), n, dims, refused)

    @classmethod
    def from_stores(cls, stores: Iterable[str | Path]) -> TimingIndex:
        roots = [Path(store) for store in stores if Path(store).is_dir()]
        records = (record for root in roots for record in iter_records(root))
        declined = (
            (str(root), outcome)
            for root in roots
            for outcome in iter_outcomes(root, Status.NOT_APPLICABLE)
        )
        return cls.from_records(records, declined)

    def estimate(
        self, method: str, dataset: str, work: Work | None = None, kappa: float = 1.0
    ) -> float | None:
        """Expected CPU seconds of one unit of ``method`` on ``dataset`` from the stored units
        of the same pair (other parameters, noise levels and splits), each scaled from its
        fits to ``work``'s (pmlbench.runner.costmodel.Work; None: as recorded); None when
        there are none."""
        same = self.by_pair.get((method, dataset))
        if not same:
            return None
        if work is None:
            return sum(t.cpu_seconds for t in same) / len(same)
        fits = work.fits(kappa)
        return sum(t.cpu_seconds * fits / t.work.fits(kappa) for t in same) / len(same)


def _shape(summary: Any) -> tuple[float, float, float] | None:
    """``(n, d, labels)`` of a record's dataset summary (None: not all there)."""
    try:
        shape = (float(summary["n"]), float(summary["d"]), float(summary["l"]))
    except (KeyError, TypeError, ValueError):
        return None
    return shape if all(math.isfinite(v) and v > 0 for v in shape) else None


# ----------------------------------------------------------------------------- estimates

# where an estimate comes from; DECLINED: the same unit declined before, so 0 s
STORED, MODEL, FALLBACK, DECLINED = "stored", "model", "fallback", "declined"


@dataclass(frozen=True)
class UnitEstimate:
    """A unit's CPU seconds and their source (None: unknown, ``why`` says why)."""

    seconds: float | None
    source: str | None = None
    why: str | None = None  # unknown: why; DECLINED: where the same unit was declined


class Estimator:
    """CPU seconds of planned units (see the module docstring): the stored timings of the same
    method and dataset, else the cost model (the method's, else its fallback rule, scaled to
    the method's stored timings when there are any), else unknown."""

    def __init__(self, timings: TimingIndex, model: CostModel | None) -> None:
        self.timings, self.model = timings, model
        self._scale: dict[str, float] = {}

    def __call__(self, unit: PlannedUnit) -> UnitEstimate:
        where = self._declined_before(unit)
        if where is not None:
            return UnitEstimate(0.0, DECLINED, where)
        work = Work(**unit.work)
        kappa = 1.0 if self.model is None else self.model.kappa(unit.method)
        value = self.timings.estimate(unit.method, unit.dataset, work, kappa)
        if value is not None:
            return UnitEstimate(self._at_least_elapsed(value, unit), STORED)
        if self.model is None:
            return UnitEstimate(None, why=f"method {unit.method}")
        size = self._size(unit)
        if size is None:
            return UnitEstimate(None, why=f"dataset {unit.dataset_name}")
        found = self.model.estimate(unit.method, *size, work, self._known(unit))
        if found is None:
            return UnitEstimate(None, why=f"method {unit.method}")
        seconds = found.seconds
        if found.how == "fallback":
            seconds *= self._fallback_scale(unit.method)
        return UnitEstimate(self._at_least_elapsed(seconds, unit), found.how)

    def _declined_before(self, unit: PlannedUnit) -> str | None:
        """Where the same unit (its signature) was declined: a store of the index, else a
        source of the model (None: nowhere, or the unit already has an outcome here)."""
        if unit.signature is None or unit.state != str(Status.MISSING):
            return None
        where = self.timings.declined.get(unit.signature)
        if where is None and self.model is not None:
            where = (self.model.declined.get(unit.signature) or {}).get("source")
        return where

    @staticmethod
    def _at_least_elapsed(value: float, unit: PlannedUnit) -> float:
        # a timed-out unit to retry already ran that long
        return value if unit.elapsed_seconds is None else max(value, unit.elapsed_seconds)

    def _size(self, unit: PlannedUnit) -> tuple[float, float, float] | None:
        """``(n_train, d, q)`` of the unit: the dataset's size from the store's records of it,
        else (the bundled dataset as it is) from the model's sources."""
        assert self.model is not None
        shape = self.timings.dims.get(unit.dataset)
        if shape is None and unit.dataset == canonical_json({"name": unit.dataset_name}):
            shape = self.model.dataset_size(unit.dataset_name)
        if shape is None or unit.test_size is None:
            return None
        n, d, q = shape
        n_train = n - math.ceil(unit.test_size * n)  # as pmlbench.protocol.splits plans them
        return (n_train, d, q) if n_train > 0 else None

    def _known(self, unit: PlannedUnit) -> str | None:
        """The unit's dataset by name when it is the one the model's sources hold (the
        bundled dataset as it is, of the same size), else None."""
        assert self.model is not None
        name = unit.dataset_name
        if unit.dataset != canonical_json({"name": name}):
            return None
        shape = self.timings.dims.get(unit.dataset)
        held = self.model.dataset_size(name)
        if held is None or (shape is not None and tuple(map(float, held)) != tuple(shape)):
            return None
        return name

    def _fallback_scale(self, method: str) -> float:
        """Recorded / fallback-estimated CPU seconds, summed over the store's units of a method
        without a cost model (1 when it has none with a known size)."""
        if method not in self._scale:
            assert self.model is not None
            recorded = estimated = 0.0
            for timing in self.timings.by_method.get(method, []):
                if timing.size is None:
                    continue
                found = self.model.estimate(method, *timing.size, timing.work)
                if found is not None and found.seconds > 0:
                    recorded, estimated = recorded + timing.cpu_seconds, estimated + found.seconds
            self._scale[method] = recorded / estimated if recorded > 0 and estimated > 0 else 1.0
        return self._scale[method]

    def scaled(self, method: str) -> bool:
        """Whether the fallback estimates of ``method`` are scaled to its stored timings."""
        return self._fallback_scale(method) != 1.0


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


_SHIPPED: Any = object()  # summary_line's default model: the one shipped with pmlbench


def _names(noun: str, names: Iterable[str]) -> str:
    names = sorted(set(names))
    return f"{noun}{'s' if len(names) > 1 else ''} {', '.join(names)}"


def summary_line(
    units: list[PlannedUnit], timings: TimingIndex, model: CostModel | None = _SHIPPED
) -> str:
    """``dry run: 600 units: 412 done, 3 failed, 0 n/a, 0 timed out, 185 missing; estimated
    41 min CPU for the 188 to compute (from 412 stored timings)``, counting each unit key
    once (jobs of a sweep may share units). Units the store's timings cannot tell are
    estimated by ``model`` (by default the cost model shipped with pmlbench; None: none),
    and the line says how much came from each source."""
    if model is _SHIPPED:
        model = shipped_model()
    unique = list({u.key: u for u in units}.values())
    counts = Counter(u.state for u in unique)
    text = f"dry run: {_units(len(unique))}: " + ", ".join(f"{counts[s]} {s.label}" for s in STATES)
    todo = [u for u in unique if u.compute]
    if not todo:
        return text + "; nothing to compute"
    estimator = Estimator(timings, model)
    found = [(u, estimator(u)) for u in todo]
    parts: dict[str, list[float]] = {STORED: [], MODEL: [], FALLBACK: []}
    declined = [(u, e) for u, e in found if e.source == DECLINED]
    for _, e in found:
        if e.seconds is not None and e.source in parts:
            parts[e.source].append(e.seconds)
    unknown = [(u, e) for u, e in found if e.seconds is None]
    known = len(todo) - len(unknown)
    sources = []
    if parts[STORED] or not (parts[MODEL] or parts[FALLBACK] or declined):
        sources.append(f"from {timings.n_timings} stored timings")
    if model is not None and (parts[MODEL] or parts[FALLBACK]):
        if parts[STORED]:
            sources[0] = f"{duration(sum(parts[STORED]))} for {len(parts[STORED])} {sources[0]}"
        if parts[MODEL]:
            sources.append(
                f"{duration(sum(parts[MODEL]))} for {len(parts[MODEL])} from the cost model "
                f"fitted to {model.provenance()}"
            )
        if parts[FALLBACK]:
            methods = sorted({u.method for u, e in found if e.source == FALLBACK})
            scaled = [m for m in methods if estimator.scaled(m)]
            tail = f", scaled to the stored timings of {', '.join(scaled)}" if scaled else ""
            sources.append(
                f"{duration(sum(parts[FALLBACK]))} for {len(parts[FALLBACK])} of "
                f"{_names('method', methods)}, which the cost model does not know, as the "
                f"median known method{tail}"
            )
    if declined:
        where = sorted({str(e.why) for _, e in declined})
        sources.append(
            f"{len(declined)} expected to decline up front at no cost, as the same units of "
            f"{_names('method', (u.method for u, _ in declined))} did in {' and '.join(where)}"
        )
    if unknown:
        reasons = []
        why = [str(e.why).split(" ", 1) for _, e in unknown]
        methods = [name for kind, name in why if kind == "method"]
        datasets = [name for kind, name in why if kind == "dataset"]
        if methods:
            reasons.append(f"no stored timing or cost model of {_names('method', methods)}")
        if datasets:
            reasons.append(f"no recorded size of {_names('dataset', datasets)}")
        sources.append("; ".join(reasons))
    if not known:
        return text + f"; CPU time for the {len(todo)} to compute unknown ({sources[-1]})"
    total = duration(sum(sum(v) for v in parts.values()))
    source = f"({'; '.join(sources)})"
    if not unknown:
        return text + f"; estimated {total} CPU for the {len(todo)} to compute {source}"
    return (
        text + f"; estimated {total} CPU for {known} of the {len(todo)} to compute, "
        f"{len(unknown)} unknown {source}"
    )


def job_estimate(units: list[PlannedUnit], estimator: Estimator) -> float | None:
    """CPU seconds of the units a job would compute (None: some unknown)."""
    total = 0.0
    for u in units:
        if u.compute:
            seconds = estimator(u).seconds
            if seconds is None:
                return None
            total += seconds
    return total


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
