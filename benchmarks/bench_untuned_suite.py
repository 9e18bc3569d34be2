"""The untuned suite's units on today's code against a baseline source tree, same run.

Issue 33's target: the untuned suite's units take at most half the CPU they took when the
authors'-defaults suite was computed (docs/leaderboard-defaults-results.tar.xz, 5.7 CPU
hours of units). This script takes the units of that archive on ``--datasets`` (default
delicious, half of that suite's CPU), split 0 of each case, and runs each one exactly as
configured there (the method's parameters, the tuning grid and folds, the noise rate) twice:
with a baseline source tree (``--baseline``, put first on ``PYTHONPATH``; the commit that
computed the archive) and with this tree, each in a fresh subprocess with one BLAS thread,
a fresh result store, cache off, the order alternating from unit to unit. Where the archive
tuned (PML3ER and ridge, 5-fold cross-validation), this tree is given ``tune.procedure=kfold``
so that both trees do the same work (``--procedure holdout``: today's default selection
instead, one held-out fifth).

Printed per unit: the CPU seconds of the unit in each tree (process and any workers) and in
the archive's record, the ratio this / baseline, and the largest absolute difference of any
metric between this tree and the archive. Then per method and in total: the summed CPU of
the measured units, their ratio, and the archive's CPU on the same datasets (all splits)
scaled by that ratio, an estimate of what those units cost on today's code.

    git worktree add --detach /tmp/base-defaults bb115ae
    python benchmarks/bench_untuned_suite.py --baseline /tmp/base-defaults
    python benchmarks/bench_untuned_suite.py --baseline /tmp/base-defaults --datasets bibtex \\
        --methods pml3er schirn --json /tmp/untuned.json

``--json`` makes a run resumable: units already in the file are not run again.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict
from pathlib import Path

# benchmarks/ is on sys.path: scripts run from it
from source_trees import TreeRunFailed, exit_on_sigterm, largest_difference, run_in_tree

HERE = Path(__file__).resolve().parents[1]
ARCHIVE = HERE / "docs" / "leaderboard-defaults-results.tar.xz"
TARGET = 0.5

# The unit's CPU is the runner's own measure (its record's run.cpu_seconds: the unit's
# process and workers, without start-up and data loading), as in the archive's records.
_UNIT = """
import json, pathlib, sys
from pmlbench.api import compose_config
from pmlbench.runner.run import run_config
from pmlbench.runner.store import ResultStore
import pmlbench
out = pathlib.Path(sys.argv[1])
run_config(compose_config(sys.argv[2:]), out / "run", quiet=True,
           store=ResultStore(out / "store"))
(stored,) = (out / "store").rglob("*.json")
record = json.loads(stored.read_text())
if record["status"] != "done":
    sys.exit(f"the unit is {record['status']}: {record.get('error') or record.get('message')}")
print(json.dumps({"cpu": record["run"]["cpu_seconds"], "values": record["split"]["values"],
                  "tuned": record["split"]["tuned"], "source": pmlbench.__file__}))
"""


def archive_units(archive: Path, datasets: list[str]) -> tuple[list[dict], dict]:
    """The finished units of ``archive`` on ``datasets``: split 0's records, and each
    (method, dataset)'s CPU seconds over all its splits and cases."""
    from pmlbench.runner.costmodel import archive_records

    units, totals = [], defaultdict(float)
    for record in archive_records(archive):
        dataset = record["unit"]["dataset"]["name"]
        if record.get("status") != "done" or dataset not in datasets:
            continue
        method = record["unit"]["method"]["name"]
        totals[method, dataset] += record["run"]["cpu_seconds"]
        if record["split"]["index"] == 0:
            units.append(record)
    units.sort(
        key=lambda r: (
            r["unit"]["dataset"]["name"],
            r["unit"]["method"]["name"],
            r["config"]["noise"].get("rate", 0),
        )
    )
    return units, dict(totals)


def _value(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ",".join(_value(v) for v in value) + "]"
    return repr(value) if isinstance(value, float) else str(value)


def overrides(record: dict, kfold: bool) -> list[str]:
    """The command-line overrides that configure ``record``'s unit (split 0 only)."""
    config = record["config"]
    method = dict(config["method"])
    name = method.pop("name")
    noise = config["noise"]
    grid = {k: v for k, v in config["tune"]["grid"].items() if v is not None}
    result = [f"method={name}", f"dataset={config['dataset']['name']}", f"noise={noise['name']}"]
    result += [f"noise.{k}={_value(v)}" for k, v in noise.items() if k != "name"]
    result += [f"method.{k}={_value(v)}" for k, v in method.items()]
    result += [f"tune.grid.{k}={_value(v)}" for k, v in config["tune"]["grid"].items()]
    if grid:
        result.append(f"tune.cv={config['tune']['cv']}")
        result += ["tune.procedure=kfold"] if kfold else []
    result += [
        f"seed={config['seed']}",
        f"protocol.test_size={config['protocol']['test_size']}",
        "protocol.n_splits=1",
        "cache_dir=null",
    ]
    return result


def has_procedure(tree: Path) -> bool:
    """Whether ``tree``'s tuning has the ``procedure`` setting (the baseline's has not)."""
    settings = tree / "pmlbench" / "protocol" / "settings.py"
    return '"procedure"' in settings.read_text(encoding="utf-8")


def run_unit(tree: Path, args: list[str]) -> dict:
    """One unit with ``tree``'s pmlbench in a fresh process: CPU seconds, metric values."""
    try:
        return {"status": "ok", **run_in_tree(tree, _UNIT, args)}
    except TreeRunFailed as failure:
        return {"status": "failed", "message": str(failure)}


def unit_id(record: dict) -> str:
    config = record["config"]
    return (
        f"{config['method']['name']} {config['dataset']['name']} "
        f"rate {config['noise'].get('rate', '-')}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, required=True, help="source tree to compare")
    parser.add_argument("--archive", type=Path, default=ARCHIVE)
    parser.add_argument("--datasets", nargs="+", default=["delicious"])
    parser.add_argument("--methods", nargs="+", help="default: every method with units there")
    parser.add_argument(
        "--procedure",
        choices=["kfold", "holdout"],
        default="kfold",
        help="this tree's selection where the archive tuned (kfold: the archive's own)",
    )
    parser.add_argument("--json", type=Path, help="write every measurement here; resume from it")
    args = parser.parse_args(argv)
    exit_on_sigterm()

    units, totals = archive_units(args.archive, args.datasets)
    if args.methods:
        units = [u for u in units if u["config"]["method"]["name"] in args.methods]
    if not units:
        raise SystemExit(f"error: no finished unit of {args.datasets} in {args.archive}")
    trees = {"baseline": args.baseline.resolve(), "this": HERE}
    kfold = {
        name: args.procedure == "kfold" and has_procedure(tree) for name, tree in trees.items()
    }
    done: dict[str, dict] = {}
    if args.json and args.json.exists():
        done = {m["unit"]: m for m in json.loads(args.json.read_text())}
    print(f"load average before: {os.getloadavg()}; {len(units)} units", flush=True)
    print(
        "| unit | archive CPU s | baseline CPU s | this CPU s | this / baseline "
        "| largest difference from the archive |"
    )
    print("|---|---:|---:|---:|---:|---|")
    for index, record in enumerate(units):
        name = unit_id(record)
        if name not in done:
            order = list(trees) if index % 2 == 0 else list(reversed(trees))
            runs = {tree: run_unit(trees[tree], overrides(record, kfold[tree])) for tree in order}
            done[name] = {
                "unit": name,
                "method": record["config"]["method"]["name"],
                "dataset": record["config"]["dataset"]["name"],
                "archive_cpu": record["run"]["cpu_seconds"],
                "archive_values": record["split"]["values"],
                **runs,
            }
            if args.json:
                args.json.write_text(json.dumps(list(done.values()), indent=1))
        measured = done[name]
        base, this = measured["baseline"], measured["this"]
        if base["status"] != "ok" or this["status"] != "ok":
            failed = base if base["status"] != "ok" else this
            print(
                f"| {name} | {measured['archive_cpu']:.1f} | | | | failed: {failed['message']} |",
                flush=True,
            )
            continue
        gap, where = largest_difference(this["values"], measured["archive_values"])
        print(
            f"| {name} | {measured['archive_cpu']:.1f} | {base['cpu']:.1f} | {this['cpu']:.1f} "
            f"| {this['cpu'] / base['cpu']:.3f} | {gap:.3g} ({where}) |",
            flush=True,
        )

    print()
    print(
        "| method | datasets | baseline CPU s (split 0) | this CPU s (split 0) | ratio "
        "| archive CPU min (all splits) | estimated today, min |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    by_method: dict[str, list[dict]] = defaultdict(list)
    for measured in done.values():
        if measured["baseline"]["status"] == "ok" and measured["this"]["status"] == "ok":
            by_method[measured["method"]].append(measured)
    grand = {"baseline": 0.0, "this": 0.0, "archive": 0.0, "estimate": 0.0}
    for method in sorted(by_method):
        rows = by_method[method]
        base = sum(r["baseline"]["cpu"] for r in rows)
        this = sum(r["this"]["cpu"] for r in rows)
        datasets = sorted({r["dataset"] for r in rows})
        archive = sum(totals.get((method, d), 0.0) for d in datasets)
        estimate = archive * this / base
        for key, value in zip(grand, (base, this, archive, estimate), strict=True):
            grand[key] += value
        print(
            f"| {method} | {' '.join(datasets)} | {base:.1f} | {this:.1f} | {this / base:.3f} "
            f"| {archive / 60:.1f} | {estimate / 60:.1f} |"
        )
    if grand["baseline"]:
        ratio = grand["this"] / grand["baseline"]
        print(
            f"| total | | {grand['baseline']:.1f} | {grand['this']:.1f} | {ratio:.3f} "
            f"| {grand['archive'] / 60:.1f} | {grand['estimate'] / 60:.1f} |"
        )
        verdict = "meets" if grand["estimate"] <= TARGET * grand["archive"] else "misses"
        print(
            f"\nestimated today / archive: {grand['estimate'] / grand['archive']:.3f} "
            f"({verdict} the target of {TARGET} on these datasets)"
        )
    print(f"load average after: {os.getloadavg()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
