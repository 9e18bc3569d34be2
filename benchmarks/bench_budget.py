"""Every built-in method on one split of the large datasets, against ML-kNN in the same run.

The suite's budget (pmlbench.core.budget, docs/protocol.md "Budget"): a unit's CPU time at
most ``BUDGET_RATIO`` times ML-kNN's on the same split, ML-kNN's floored at
``FLOOR_SECONDS``, or the method refuses up front with :class:`pmlbench.errors.NotApplicable`
naming its cap. The suite tunes every unit, so measure with ``--tuning holdout``; without it
the units run at their constructor defaults (issue 13's first survey, whose rule of 10 times
ML-kNN's untuned command time is superseded). One split (50/50, candidates at noise rate
1.0, no cache) per dataset. For each dataset this script runs
ML-kNN first and last, and every other built-in method in between, each unit in a fresh
subprocess (``run_split``, exactly what a single ``python -m pmlbench`` run does per split:
fit, predict, metrics), and prints a Markdown table per dataset:

- ``wall s``: the unit's wall-clock seconds; ``ratio``: wall / ML-kNN's wall (the mean of
  its two runs);
- ``CPU s``: process CPU seconds of the unit, including joblib worker processes (they are
  shut down and reaped before the count); ``CPU ratio``: the same against ML-kNN's CPU
  floored at ``FLOOR_SECONDS``, the budget's measure ("within budget"), which a busy machine
  distorts less than wall time;
- ``command s``: the whole subprocess, from its start to its exit (Python start-up, imports,
  loading the data, drawing the candidates, the unit, stopping worker processes): what a
  user waits for one split, and the convention of the issue's own table (ridge 2.3 s and
  PML3ER 4.3 s on corel16k001, whose units alone take 0.5 s and 2 s); ``command ratio``:
  the same against ML-kNN's. On the small datasets, where ML-kNN's unit takes 0.02-0.5 s,
  an unfloored unit ratio would mostly measure fixed costs such as starting worker
  processes: the floor keeps them from deciding;
- ``peak MB``: the subprocess's maximum resident set size (imports and data included);
- ``n/a``: the method refused, with its one-line message.

The load average before and after each dataset is printed, since other processes on the
machine stretch wall times (not CPU times).

    python benchmarks/bench_budget.py                                   # corel16k001, delicious
    python benchmarks/bench_budget.py --datasets all --timeout 600            # every bundled one
    python benchmarks/bench_budget.py --datasets emotions --methods lift pml_lrs
    python benchmarks/bench_budget.py --timeout 1200 --json /tmp/budget.json
    python benchmarks/bench_budget.py --variants lift:solver=newton lift:max_libsvm_instances=null
    python benchmarks/bench_budget.py --tuning holdout --datasets yeastbp      # tuned units

With ``--tuning``, every unit, ML-kNN's included, tunes its method's declared grid
(``default_tuning_grid``) under that ``tune.procedure`` with the protocol's other tuning
defaults: the budget counts fit + predict with tuning, the same for every method.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

# benchmarks/ is on sys.path: scripts run from it
from bench_scaling import builtin_plugins, parse_variant

from pmlbench.core.budget import BUDGET_RATIO, FLOOR_SECONDS

DATASETS = ("corel16k001", "delicious")
BASELINE = "mlknn"


def builtin_methods() -> list[str]:
    """Methods registered by pmlbench itself (not plugins of other distributions), but the
    ``external`` wrapper, which needs a command to run."""
    return builtin_plugins("method", leave_out="external")


def bundled_datasets() -> list[str]:
    """Every dataset pmlbench bundles (not ``file``, which reads the user's own), by name."""
    return builtin_plugins("dataset", leave_out="file")


def tuned_node(name: str, procedure: str) -> dict:
    """The ``tune`` node of a tuned unit: the method's declared grid under ``procedure``
    (the protocol's defaults otherwise); empty when ``procedure`` is ``none``."""
    from pmlbench.plugins import registry

    if procedure == "none":
        return {}
    grid = dict(getattr(registry.load("method", name), "default_tuning_grid", {}) or {})
    return {"grid": grid, "procedure": procedure} if grid else {}


def run_unit(method: str, dataset: str, split: int, rate: float, tuning: str = "none") -> dict:
    """One split of ``method`` (a name or a variant, see ``bench_scaling.parse_variant``) on
    ``dataset`` in this process; wall, CPU and peak memory. ``tuning``: ``none`` (the
    constructor defaults) or a ``tune.procedure`` under which the declared grid is tuned."""
    from pmlbench.errors import NotApplicable
    from pmlbench.plugins.loading import load_dataset
    from pmlbench.protocol.experiment import ExperimentSpec, prepare, run_split
    from pmlbench.protocol.splits import plan_splits

    name, params = parse_variant(method)
    spec = ExperimentSpec(
        dataset={"name": dataset},
        noise={"name": "uniform", "rate": rate},
        method={"name": name, **params},
        tune=tuned_node(name, tuning),
        metrics=["average_precision", "ranking_loss"],
        n_splits=split + 1,
    )
    plugins = prepare(spec)
    data = load_dataset(spec.dataset)
    plan = plan_splits(data.n_instances, spec.n_splits, spec.test_size, spec.seed)[split]
    start, cpu = time.perf_counter(), time.process_time()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    record: dict = {"method": method, "dataset": dataset}
    try:
        result = run_split(spec, data, plan, plugins)
    except NotApplicable as exc:
        record.update(status="n/a", message=str(exc), wall=time.perf_counter() - start)
        return record
    wall = time.perf_counter() - start
    own = time.process_time() - cpu
    # joblib's worker processes: stop them so that their CPU time reaches RUSAGE_CHILDREN
    from joblib.externals.loky import get_reusable_executor

    get_reusable_executor().shutdown(wait=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    workers = (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)
    record.update(
        status="ok",
        wall=wall,
        fit=result.fit_seconds,
        predict=result.predict_seconds,
        cpu=own + workers,
        peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        **{name: float(value) for name, value in result.values.items()},
    )
    return record


def measure(
    method: str, dataset: str, split: int, rate: float, timeout: float | None, tuning: str = "none"
) -> dict:
    """:func:`run_unit` in a fresh subprocess (stopped after ``timeout`` seconds)."""
    command = [sys.executable, __file__, "--unit", method, dataset, str(split), str(rate), tuning]
    start = time.perf_counter()
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, start_new_session=True
        )
    except subprocess.TimeoutExpired:
        return {"method": method, "dataset": dataset, "status": "timeout", "wall": timeout}
    command_wall = time.perf_counter() - start
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        error = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"method": method, "dataset": dataset, "status": "failed", "message": error}
    return {**json.loads(lines[-1]), "command_wall": command_wall}


def table(records: list[dict], baseline: list[dict]) -> str:
    """The Markdown table of one dataset, ratios against the mean of the baseline runs."""
    base_wall = sum(r["wall"] for r in baseline) / len(baseline)
    base_cpu = max(sum(r["cpu"] for r in baseline) / len(baseline), FLOOR_SECONDS)
    base_command = sum(r["command_wall"] for r in baseline) / len(baseline)
    lines = [
        "| method | wall s | ratio | CPU s | CPU ratio | command s | command ratio | peak MB "
        "| AP | within budget |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        if r["status"] == "ok":
            ratio = r["cpu"] / base_cpu
            lines.append(
                f"| {r['method']} | {r['wall']:.3g} | {r['wall'] / base_wall:.1f} | "
                f"{r['cpu']:.3g} | {ratio:.1f} | {r['command_wall']:.3g} | "
                f"{r['command_wall'] / base_command:.1f} | {r['peak_mb']:.0f} | "
                f"{r['average_precision']:.3f} | {'yes' if ratio <= BUDGET_RATIO else 'NO'} |"
            )
        elif r["status"] == "n/a":
            lines.append(f"| {r['method']} | n/a | | | | | | | | refuses: {r['message']} |")
        else:
            detail = f" after {r['wall']:.0f} s" if r["status"] == "timeout" else ""
            message = r.get("message", "")
            lines.append(f"| {r['method']} | {r['status']}{detail} | | | | | | | | NO {message} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--datasets", nargs="+", default=list(DATASETS), help="names, or all: every bundled one"
    )
    parser.add_argument("--methods", nargs="+", help="default: every built-in method")
    parser.add_argument(
        "--variants",
        nargs="+",
        default=[],
        help="extra rows with non-default parameters, e.g. lift:solver=newton",
    )
    parser.add_argument("--split", type=int, default=0)
    parser.add_argument("--rate", type=float, default=1.0, help="uniform noise rate")
    parser.add_argument(
        "--timeout", type=float, default=None, help="stop a unit after this many seconds"
    )
    parser.add_argument("--json", type=Path, help="also write every record here")
    parser.add_argument(
        "--tuning",
        default="none",
        choices=["none", "holdout", "kfold"],
        help="none: constructor defaults; otherwise every method (ML-kNN too) tunes its "
        "declared grid under this tune.procedure, as the tuned suite does",
    )
    parser.add_argument("--unit", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.unit:
        method, dataset, split, rate, tuning = args.unit
        print(json.dumps(run_unit(method, dataset, int(split), float(rate), tuning)), flush=True)
        return 0
    methods = [m for m in (args.methods or builtin_methods()) if m != BASELINE] + args.variants
    everything = []
    for dataset in bundled_datasets() if args.datasets == ["all"] else args.datasets:
        print(f"\n### {dataset} (split {args.split}, noise rate {args.rate})\n", flush=True)
        print(f"load average before: {os.getloadavg()}", flush=True)
        first = measure(BASELINE, dataset, args.split, args.rate, args.timeout, args.tuning)
        print(f"  {BASELINE}: {first.get('wall', 0):.1f} s", flush=True)
        records = []
        for method in methods:
            records.append(
                measure(method, dataset, args.split, args.rate, args.timeout, args.tuning)
            )
            r = records[-1]
            print(f"  {method}: {r['status']} {r.get('wall', 0):.1f} s", flush=True)
        last = measure(BASELINE, dataset, args.split, args.rate, args.timeout, args.tuning)
        print(f"  {BASELINE} again: {last.get('wall', 0):.1f} s", flush=True)
        print(f"load average after: {os.getloadavg()}\n", flush=True)
        baseline = [r for r in (first, last) if r["status"] == "ok"]
        if not baseline:
            print(f"{BASELINE} failed on {dataset}: {first}")
            continue
        print(table([first, *records, last], baseline), flush=True)
        everything += [first, *records, last]
    if args.json:
        args.json.write_text(json.dumps(everything, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
