"""The application behind ``python -m pmlbench``: from a resolved config to written results.

:func:`run_config` runs the experiment a config describes, one unit (split) at a time. With
a result store (pmlbench.runner.store) a unit already in the store is reused instead of recomputed,
a finished unit is written to the store at once, and a unit that raises is recorded as
failed (with its traceback) while the other units go on. The run directory always receives
results.csv / run.json assembled from every unit of the run, reused or computed, and
units.json saying which was which.

Statuses of a unit in units.json: ``computed``, ``cached`` (reused from the store),
``failed`` (raised; retried by the next run), ``not_applicable`` (its method raised
:class:`pmlbench.errors.NotApplicable`: recorded in ``<key>.na.json``, not retried unless
``recompute=true``, not an error) and ``timed_out`` (stopped at ``unit_timeout``: recorded in
``<key>.timeout.json`` with its elapsed time; retried only with ``recompute=true``, without
a limit or with a limit above that elapsed time, since the same limit would stop it again).
With ``unit_timeout`` set, or ``isolate`` (the command line sets it), each computed unit runs
in a forked child process (pmlbench.runner.timeout), stopped at ``unit_timeout`` if set:
plugin code that calls ``os._exit`` or crashes the interpreter fails its unit and nothing
else. Otherwise (and without ``os.fork``) units run in this process, where ``sys.exit``
still only fails the unit.
"""

from __future__ import annotations

import dataclasses
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pmlbench.core.console import print_warning, split_progress
from pmlbench.core.digest import content_digest
from pmlbench.errors import NotApplicable, PluginError, PmlbenchError
from pmlbench.plugins import registry
from pmlbench.plugins.contracts import METHOD_HOOKS
from pmlbench.protocol.experiment import (
    NATURAL_NOISE,
    ExperimentResult,
    ExperimentSpec,
    Plugins,
    SplitResult,
    make_candidates,
    prepare,
    run_prepared,
)
from pmlbench.protocol.splits import plan_splits, split_streams
from pmlbench.runner import settings
from pmlbench.runner.format import (
    UNITS_FILE,
    write_units,
)
from pmlbench.runner.outputs import (
    clear_results,
    git_commit,
    package_versions,
    tidy_records,
    write_results,
)
from pmlbench.runner.status import UNFINISHED, Status
from pmlbench.runner.store import ResultStore, run_metadata
from pmlbench.runner.timeout import (
    REMOTE_TRACEBACK,
    UnitTimedOut,
    call_with_timeout,
    check_unit_timeout,
    contain_exit,
    isolation_available,
    tree_cpu_seconds,
)
from pmlbench.runner.unit_warnings import capture as capture_warnings
from pmlbench.runner.units import Units, describe_units


def spec_from_config(config: dict[str, Any]) -> ExperimentSpec:
    """The plain-data experiment spec from a resolved config dict.

    A top-level setting the config leaves out takes its default from
    pmlbench.runner.settings (ExperimentSpec's own, for its fields); ``tune`` and
    ``bipartition``, which every method node carries, take ExperimentSpec's. ExperimentSpec
    checks every value.
    """
    nodes = {name: config[name] for name in ("tune", "bipartition") if name in config}
    return ExperimentSpec(
        dataset=config["dataset"],
        noise=config["noise"],
        method=config["method"],
        **settings.spec_values(config),
        **nodes,
    )


class UnitsFailed(PmlbenchError):
    """Some units of a run raised; they were recorded, the others were run and written."""

    def __init__(
        self,
        message: str,
        result: ExperimentResult | None,
        failures: list[dict[str, Any]],
        exit_code: int = 1,
    ) -> None:
        super().__init__(message)
        self.result = result
        self.failures = failures
        self.exit_code = exit_code


@dataclass
class UnitLog:
    """What happened to each unit of one run."""

    entries: list[dict[str, Any]] = field(default_factory=list)

    def add(self, key: str, split: int, status: Status, **extra: Any) -> None:
        self.entries.append({"key": key, "split": split, "status": str(status), **extra})

    def count(self, status: Status) -> int:
        return sum(e["status"] == status for e in self.entries)

    @property
    def failures(self) -> list[dict[str, Any]]:
        return [e for e in self.entries if e["status"] == Status.FAILED]

    @property
    def unfinished(self) -> list[dict[str, Any]]:
        """Units that failed or timed out (not applicable ones are not unfinished)."""
        return [e for e in self.entries if e["status"] in UNFINISHED]


def split_record(split: SplitResult) -> dict[str, Any]:
    return {f.name: getattr(split, f.name) for f in dataclasses.fields(split) if f.name != "arrays"}


def split_from_record(record: dict[str, Any]) -> SplitResult | None:
    """The SplitResult a stored unit holds (None when the record predates its fields)."""
    names = {f.name for f in dataclasses.fields(SplitResult)} - {"arrays"}
    try:
        return SplitResult(**{k: v for k, v in record.get("split", {}).items() if k in names})
    except TypeError:
        return None


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if not isinstance(exc, PmlbenchError) else text


def retries_timeout(record: dict[str, Any], unit_timeout: float | None) -> bool:
    """Whether a run with ``unit_timeout`` tries again a unit stopped as ``record`` says: only
    without a limit or with one above the time the unit already ran."""
    if unit_timeout is None:
        return True
    try:
        elapsed = float(record.get("elapsed_seconds", 0.0))
    except (TypeError, ValueError):
        return True
    return unit_timeout > elapsed


class UnitRunner:
    """The unit hook of protocol.experiment.run_prepared: reuse, compute, store, record."""

    def __init__(
        self,
        spec: ExperimentSpec,
        config: dict[str, Any],
        units: Units,
        store: ResultStore | None,
        recompute: bool,
        out_dir: Path,
        plugins: Plugins,
        advance=None,
        catch: bool = True,
        unit_timeout: float | None = None,
        isolate: bool = False,
    ) -> None:
        self.spec, self.config, self.units, self.plugins = spec, config, units, plugins
        self.keys = list(units.keys)
        self.catch, self.unit_timeout = catch, unit_timeout
        self.isolate = isolate and isolation_available()
        self.store, self.recompute, self.out_dir = store, recompute, out_dir
        self.advance = advance or (lambda: None)
        self.log = UnitLog()
        self.metrics = plugins.metrics
        self._meta: dict[str, Any] | None = None
        self._data_digest: tuple[Any, str] | None = None
        self._warned_inputs: set[str] = set()
        self._dataset_name: str | None = None

    def meta(self) -> dict[str, Any]:
        if self._meta is None:
            self._meta = {"versions": package_versions(), "git_commit": git_commit()}
        return self._meta

    def stored(self, split: int) -> tuple[dict[str, Any], SplitResult] | None:
        """The stored record and split of a finished unit, unless recomputing.

        The store hands out only a record that agrees with this run's key (its description,
        split and metrics; ResultStore.load), and predictions only when they match the
        digest in that record; a damaged file is named in a warning and the unit recomputed.
        """
        if self.store is None or self.recompute:
            return None
        key = self.keys[split]
        directions = {name: m.higher_is_better for name, m in self.metrics.items()}
        record = self.store.load(key, directions)
        if record is None:
            return None
        result = split_from_record(record)
        if result is None:
            return None
        if self.spec.save_predictions:
            arrays = self.store.load_arrays(key, record.get("arrays_digest"))
            if arrays is None:
                return None
            result.arrays = arrays
        return record, result

    def skipped(self, split: int) -> tuple[Status, dict[str, Any]] | None:
        """The earlier outcome of a unit this run does not try again, as (status, record):
        ``not_applicable`` unless recomputing, ``timed_out`` when :func:`retries_timeout`
        says no. None for a unit to compute."""
        if self.store is None or self.recompute:
            return None
        key = self.keys[split]
        record = self.store.load_outcome(key, Status.NOT_APPLICABLE)
        if record is not None:
            return Status.NOT_APPLICABLE, record
        record = self.store.load_outcome(key, Status.TIMED_OUT)
        if record is not None and not retries_timeout(record, self.unit_timeout):
            return Status.TIMED_OUT, record
        return None

    def inputs(self, plan, dataset) -> dict[str, str]:
        """Digests of what a unit is computed from: the dataset plugin's data and the noise
        model's candidates, drawn again from a fresh generator of the split's stream."""
        self._dataset_name = dataset.name
        if self._data_digest is None or self._data_digest[0] is not dataset:
            digest = content_digest(dataset.X, dataset.Y, dataset.Y_candidates)
            self._data_digest = (dataset, digest)
        rng = np.random.default_rng(split_streams(self.spec.seed, plan.index)["noise"])
        drawn = make_candidates(
            self.plugins.noise, dataset, dataclasses.replace(plan, noise_rng=rng)
        )
        return {"data": self._data_digest[1], "candidates": content_digest(drawn)}

    def same_inputs(self, record: dict[str, Any], inputs: dict[str, str]) -> bool:
        """Whether a stored unit was computed from the data and candidates this run has; a
        plugin that returns other data on each call, or draws outside the generator it is
        given, is named in a warning (once per run) and its unit recomputed."""
        summary = record.get("dataset")
        named = summary.get("name") if isinstance(summary, dict) else None
        if named != self._dataset_name:
            # the key does not cover the name a dataset plugin or file gives its data: an
            # edited record would show these numbers under another dataset
            print_warning(
                f"store record {record.get('key')} names the dataset {named!r}, but its "
                f"dataset is called {self._dataset_name!r}: the record was edited; "
                "recomputing the unit and replacing it"
            )
            return False
        stored = record.get("inputs")
        if not isinstance(stored, dict):
            # written before inputs were recorded, or with them removed: nothing shows that
            # its plugins gave it this data, so it is computed again (and then recorded)
            if "unchecked" not in self._warned_inputs:
                self._warned_inputs.add("unchecked")
                print_warning(
                    "stored units of this run hold no digests of their data and candidate "
                    "labels (written by an older pmlbench, or edited), so their reuse cannot be "
                    "checked; recomputing them"
                )
            return False
        for part, plugin in (("data", self.spec.dataset), ("candidates", self.spec.noise)):
            if stored.get(part) != inputs[part]:
                kind = "dataset" if part == "data" else "noise"
                if kind not in self._warned_inputs:
                    self._warned_inputs.add(kind)
                    behaviour = (
                        "returned other data than when its results were stored"
                        if kind == "dataset"
                        else "drew other candidate labels than when its results were stored"
                    )
                    print_warning(
                        f"{kind} plugin {plugin.get('name')!r} {behaviour}: it is not "
                        "deterministic (a plugin must give the same output for the same "
                        "parameters and draw only from the generator it is given); "
                        "recomputing its units"
                    )
                return False
        return True

    def __call__(self, plan, dataset, compute) -> SplitResult | None:
        key = self.keys[plan.index]
        inputs = self.inputs(plan, dataset)
        found = self.stored(plan.index)
        if found is not None and not self.same_inputs(found[0], inputs):
            found = None
        if found is not None:
            self.log.add(key, plan.index, Status.CACHED)
            self.advance()
            return found[1]
        earlier = self.skipped(plan.index)
        if earlier is not None:
            self.log_earlier(plan.index, *earlier)
            self.advance()
            return None
        try:
            result, timing = self.compute(compute)
        except NotApplicable as exc:  # the method's published form does not fit this input
            if not self.catch:
                raise
            self.not_applicable(plan.index, exc)
            self.advance()
            return None
        except UnitTimedOut as exc:
            if not self.catch:
                raise
            self.timed_out(plan.index, exc)
            self.advance()
            return None
        except Exception as exc:  # any failure of a unit is recorded; the other units go on
            if not self.catch:
                raise
            self.fail(plan.index, exc)
            self.advance()
            return None
        summary = {"name": dataset.name, **dataset.summary()}
        noise = NATURAL_NOISE if dataset.Y_candidates is not None else self.spec.noise["name"]
        if self.store is not None:
            record = self.unit_record(key, plan.index, result, summary, noise)
            record["inputs"] = inputs
            record["run"].update(timing)
            self.store.save(record, arrays=result.arrays or None)
        self.log.add(key, plan.index, Status.COMPUTED, **timing)
        self.advance()
        return result

    def compute(self, compute) -> tuple[SplitResult, dict[str, Any]]:
        """Run one unit in a child process (with ``unit_timeout`` or ``isolate``; stopped at
        the limit, if set), or here; plugin code that exits or crashes fails the unit. The
        warnings it raised are returned with its timings (pmlbench.runner.unit_warnings)."""
        captured = capture_warnings(compute)
        if self.unit_timeout is not None or self.isolate:
            child = call_with_timeout(captured, self.unit_timeout)
            result, caught = child.value
            timing: dict[str, Any] = {
                "wall_seconds": child.wall_seconds,
                "cpu_seconds": child.cpu_seconds,
            }
        else:
            wall, cpu = time.perf_counter(), tree_cpu_seconds()
            result, caught = contain_exit(captured)
            # CPU seconds of the whole unit (noise, fit, tuning, predict, metrics) in this
            # process and every process working for it (joblib workers, external programs):
            # unlike wall time they do not grow when others share cores
            timing = {
                "wall_seconds": time.perf_counter() - wall,
                "cpu_seconds": tree_cpu_seconds() - cpu,
            }
        if caught:
            timing["warnings"] = caught
        return result, timing

    def record(
        self,
        key: str,
        split: int,
        status: Status,
        fields: dict[str, Any],
        run: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The store record of a unit, whatever its outcome: schema, key, status and the
        unit's description, then ``fields``, the resolved config and the run's metadata
        (host, time, versions, git commit; ``run`` adds to it)."""
        return {
            "schema": 1,
            "key": key,
            "status": str(status),
            "unit": self.units.descriptions[split],
            **fields,
            "config": self.config,
            "run": {**run_metadata(self.out_dir), **self.meta(), **(run or {})},
        }

    def _save_outcome(self, record: dict[str, Any]) -> None:
        if self.store is not None:
            self.store.save_outcome(record)

    def not_applicable(self, split: int, exc: NotApplicable) -> None:
        """Record a unit whose method refused it up front (not a failure)."""
        key = self.keys[split]
        reason = _one_line(exc)
        fields = {"reason": reason, "error_type": type(exc).__name__}
        self._save_outcome(self.record(key, split, Status.NOT_APPLICABLE, fields))
        self.log.add(key, split, Status.NOT_APPLICABLE, reason=reason)

    def timed_out(self, split: int, exc: UnitTimedOut) -> None:
        """Record a unit stopped at ``unit_timeout``, with the time it ran."""
        key = self.keys[split]
        error = _one_line(exc)
        timing = {"unit_timeout": exc.limit, "elapsed_seconds": exc.elapsed}
        run = {"wall_seconds": exc.elapsed, "cpu_seconds": exc.cpu_seconds}
        self._save_outcome(
            self.record(key, split, Status.TIMED_OUT, {"error": error, **timing}, run)
        )
        self.log.add(key, split, Status.TIMED_OUT, error=error, user_error=True, **timing)

    def log_earlier(self, split: int, status: Status, record: dict[str, Any]) -> None:
        """units.json entry of a unit skipped for its stored n/a or timeout record."""
        key = self.keys[split]
        if status == Status.NOT_APPLICABLE:
            self.log.add(key, split, status, reason=record.get("reason"), from_store=True)
            return
        self.log.add(
            key,
            split,
            status,
            error=record.get("error"),
            user_error=True,
            unit_timeout=record.get("unit_timeout"),
            elapsed_seconds=record.get("elapsed_seconds"),
            from_store=True,
        )

    def unit_record(
        self, key: str, split: int, result: SplitResult, summary: dict[str, Any], noise: str
    ) -> dict[str, Any]:
        """The store record of a finished unit (status ``done``)."""
        one = ExperimentResult(self.spec, summary, noise, [result], self.metrics)
        fields = {
            "dataset": summary,
            "noise": noise,
            "records": tidy_records(one).to_dict(orient="records"),
            "split": split_record(result),
        }
        return self.record(key, split, Status.DONE, fields)

    def fail(self, split: int, exc: BaseException) -> None:
        key = self.keys[split]
        text = getattr(exc, REMOTE_TRACEBACK, None) or "".join(
            traceback.format_exception(type(exc), exc, exc.__traceback__)
        )
        error = _one_line(exc)
        fields = {"error": error, "error_type": type(exc).__name__, "traceback": text}
        self._save_outcome(self.record(key, split, Status.FAILED, fields))
        self.log.add(
            key,
            split,
            Status.FAILED,
            error=error,
            traceback=text,
            user_error=isinstance(exc, PmlbenchError),
        )

    def fail_remaining(self, exc: BaseException) -> None:
        """A failure before or between units (e.g. the dataset does not load): every unit not
        yet logged is recorded as failed with it."""
        logged = {e["split"] for e in self.log.entries}
        for split in range(len(self.keys)):
            if split not in logged:
                self.fail(split, exc)
                self.advance()

    def assemble_stored(self) -> ExperimentResult | None:
        """The whole run from the store, when every unit is there with the digests of its
        inputs and the dataset and noise plugins give those inputs again (the dataset is
        loaded and the candidates drawn, no method fitted)."""
        maybe_found = [self.stored(s) for s in range(len(self.keys))]
        found = [f for f in maybe_found if f is not None]
        if not found or len(found) < len(maybe_found):
            return None
        if not all(isinstance(record.get("inputs"), dict) for record, _ in found):
            return None  # unit by unit: those without input digests are computed again
        # the data loaded and the candidates drawn again must be those stored (cheap next to
        # fitting): a plugin that changed its output has its units recomputed
        dataset = self.plugins.dataset.load()
        plans = plan_splits(
            dataset.n_instances, self.spec.n_splits, self.spec.test_size, self.spec.seed
        )
        for (record, _), plan in zip(found, plans, strict=True):
            if not self.same_inputs(record, self.inputs(plan, dataset)):
                return None
        for split in range(len(found)):
            self.log.add(self.keys[split], split, Status.CACHED)
            self.advance()
        first = found[0][0]
        return ExperimentResult(
            self.spec,
            first["dataset"],
            first["noise"],
            [result for _, result in found],
            self.metrics,
        )


def run_config(
    config: dict[str, Any],
    out_dir: Path,
    quiet: bool = False,
    *,
    store: ResultStore | None = None,
    recompute: bool = False,
    catch_failures: bool | None = None,
    unit_timeout: float | None = None,
    isolate: bool = False,
) -> ExperimentResult:
    """Run the experiment a resolved config describes and write its results into ``out_dir``.

    With ``store``, units found there are reused (unless ``recompute``), computed units are
    stored. With ``catch_failures`` (default: when there is a store) a failing unit is
    recorded (store and units.json) and the other units go on; :class:`UnitsFailed` is
    raised after the others' results were written. Without it, the first error propagates.
    A unit whose method raises :class:`NotApplicable` is recorded as ``not_applicable`` and
    is no failure (the result may then hold fewer splits, or none). With ``unit_timeout``
    (seconds) each unit is computed in a child process and stopped at that limit; a stopped
    unit is recorded as ``timed_out`` and counts as unfinished, like a failure. With
    ``isolate`` each unit is computed in a child process even without a limit, so that plugin
    code that ends or crashes the process fails only its unit.
    """

    out_dir = Path(out_dir)
    spec = spec_from_config(config)
    unit_timeout = check_unit_timeout(unit_timeout)
    # every plugin looked up once and every parameter checked before any work: the units'
    # keys and the run both start from what this prepared
    try:
        plugins = prepare(spec)
    except PmlbenchError:
        raise
    except Exception:
        # a malformed plugin makes the parameter check itself fail: name it, not a traceback
        _check_method_constraints(spec)
        raise
    units = describe_units(spec, plugins.registrations)
    catch = store is not None if catch_failures is None else catch_failures
    label = f"{spec.method['name']} on {spec.dataset['name']}"
    with split_progress(quiet) as progress:
        task = progress.add_task(label, total=spec.n_splits)
        runner = UnitRunner(
            spec,
            config,
            units,
            store,
            recompute,
            out_dir,
            plugins,
            advance=lambda: progress.advance(task),
            catch=catch,
            unit_timeout=unit_timeout,
            isolate=isolate,
        )
        result = runner.assemble_stored()
        if result is None:
            try:
                result = run_prepared(spec, plugins, unit=runner)
            except PmlbenchError:
                # the input is at fault (a dataset file, a dataset.* key, an unwritable
                # store): one line, and no failure records that a fixed input would orphan
                raise
            except Exception as exc:  # the dataset, metrics or splits could not be set up
                if not catch:
                    raise
                runner.fail_remaining(exc)
                result = None
    write_units(out_dir, runner.log.entries)
    if result is not None and result.splits:
        write_results(result, config, out_dir)
    else:
        clear_results(out_dir)  # an earlier run's numbers in a reused directory
    unfinished = runner.log.unfinished
    if unfinished:
        raise units_failed(unfinished, len(units.keys), result, out_dir)
    assert result is not None  # without a result every unit was logged as failed
    return result


def _check_method_constraints(spec: ExperimentSpec) -> None:
    """Refuse, naming the plugin, a method whose ``parameter_constraints`` are not constraint
    lists (``{"tag": [str]}`` where ``[Type(str)]`` belongs), before its parameters are
    checked against them: that check would otherwise end in a traceback. A method that
    cannot be loaded is left to the preparation, which says why."""
    name = spec.method.get("name")
    try:
        info = registry.get("method", str(name))
        method = info.load()
    except Exception:  # unknown or broken: reported by prepare, with its own advice
        return
    constraints = getattr(method, "parameter_constraints", None)
    description, valid = METHOD_HOOKS["parameter_constraints"]
    if constraints is not None and not valid(constraints):
        raise PluginError(
            f"{info.label} declares parameter_constraints that are not {description}; fix "
            f"the plugin (pmlbench check-plugin {name} lists its contract violations)"
        )


def units_failed(
    failures: list[dict[str, Any]], n_units: int, result, out_dir: Path
) -> UnitsFailed:
    first = failures[0]["error"]
    user_error = all(f.get("user_error") for f in failures)
    timed_out = sum(f.get("status") == Status.TIMED_OUT for f in failures)
    if len(failures) == n_units and len({f["error"] for f in failures}) == 1:
        message = first
    elif not timed_out:
        message = f"{len(failures)} of {n_units} units failed; first: {first}"
    elif timed_out == len(failures):
        message = f"{len(failures)} of {n_units} units timed out; first: {first}"
    else:
        message = (
            f"{len(failures)} of {n_units} units failed or timed out "
            f"({len(failures) - timed_out} failed, {timed_out} timed out); first: {first}"
        )
    if not user_error:
        message += f" (tracebacks in {out_dir / UNITS_FILE})"
    return UnitsFailed(message, result, failures, exit_code=2 if user_error else 1)
