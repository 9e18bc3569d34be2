"""Do pmlbench's numbers depend on the BLAS kernel or the thread count? Run and compare.

OpenBLAS picks its kernels by CPU; ``OPENBLAS_CORETYPE`` selects others on one machine.
This script runs the same units once per BLAS variant, each in its own subprocess with the
variable set for that command only (never in pmlbench, its tests or CI), and prints, per
method, the largest difference of any metric value between the variants:

- ``Haswell``, ``Sandybridge``, ``Katmai``: run on any x86-64 machine with AVX2;
- ``SkylakeX``: only where the CPU has AVX-512 (skipped otherwise);
- ``Haswell, 1 thread``: ``OPENBLAS_NUM_THREADS=1``.

Each unit is a plain run (``results_store=null cache_dir=null``, so nothing is reused),
default parameters, ``protocol.n_splits`` splits. The default set is the one the
reproducibility issue names: every built-in method on genbase (3 splits), and PML3ER and
both PARTICLE variants on medical and on enron at noise rate 2.0.

    python benchmarks/cross_kernel.py                       # the default set (about 15 min)
    python benchmarks/cross_kernel.py --methods mlknn pml3er --datasets genbase --splits 2
    python benchmarks/cross_kernel.py --json /tmp/cross_kernel.json
    python benchmarks/cross_kernel.py --methods pml_ld --set method.init_solver=exact

Exit status 1 when any difference exceeds ``--tolerance`` (default 1e-9).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

BUILT_IN = (
    "mlknn",
    "ridge",
    "lift",
    "pml3er",
    "particle_map",
    "particle_vls",
    "pml_ni",
    "pml_lrs",
    "nlr",
    "pml_ld",
    "pmndp",
    "pml_lenfn",
    "schirn",
    "pml_plr",
    "pml_ma",
    "pml_lrig",
    "plain",
    "pml_dda",
)
HEAVY = ("pml3er", "particle_map", "particle_vls")
VARIANTS = {
    "SkylakeX": {"OPENBLAS_CORETYPE": "SkylakeX"},
    "Haswell": {"OPENBLAS_CORETYPE": "Haswell"},
    "Sandybridge": {"OPENBLAS_CORETYPE": "Sandybridge"},
    "Katmai": {"OPENBLAS_CORETYPE": "Katmai"},
    "Haswell, 1 thread": {"OPENBLAS_CORETYPE": "Haswell", "OPENBLAS_NUM_THREADS": "1"},
}

_UNIT = """
import json, sys
from pmlbench.api import run
from threadpoolctl import threadpool_info
result = run(sys.argv[2:], sys.argv[1], quiet=True)
blas = [i for i in threadpool_info() if i["user_api"] == "blas"]
kernels = sorted({i.get("architecture") or "?" for i in blas})
values = {f"{s.index}/{m}": v for s in result.splits for m, v in s.values.items()}
print(json.dumps({"kernels": kernels, "values": values}))
"""


def has_avx512() -> bool:
    try:
        return "avx512f" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


def default_units(splits: int) -> list[tuple[str, str, float, int]]:
    units = [(method, "genbase", 1.0, splits) for method in BUILT_IN]
    for dataset in ("medical", "enron"):
        units += [(method, dataset, 2.0, splits) for method in HEAVY]
    return units


def run_unit(
    method: str, dataset: str, rate: float, splits: int, env: dict[str, str], extra: list[str]
) -> dict:
    overrides = [
        *extra,
        f"method={method}",
        f"dataset={dataset}",
        f"noise.rate={rate}",
        f"protocol.n_splits={splits}",
        "results_store=null",
        "cache_dir=null",
    ]
    with tempfile.TemporaryDirectory() as out:
        done = subprocess.run(
            [sys.executable, "-c", _UNIT, out, *overrides],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
        )
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"error": tail}
    return json.loads(done.stdout.strip().splitlines()[-1])


def largest_difference(runs: dict[str, dict]) -> tuple[float, str]:
    """The largest |a - b| of one metric value over all pairs of variants, and where."""
    ok = {name: r["values"] for name, r in runs.items() if "values" in r}
    worst, where = 0.0, ""
    keys = set().union(*(v.keys() for v in ok.values())) if ok else set()
    for key in sorted(keys):
        values = [v[key] for v in ok.values() if key in v and v[key] == v[key]]
        if len(values) >= 2 and max(values) - min(values) > worst:
            worst, where = max(values) - min(values), key
    return worst, where


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", nargs="+", help="only these methods (default set: all)")
    parser.add_argument("--datasets", nargs="+", help="only these datasets")
    parser.add_argument("--splits", type=int, default=3)
    parser.add_argument("--tolerance", type=float, default=1e-9)
    parser.add_argument("--json", type=Path, help="also write every value here")
    parser.add_argument(
        "--set",
        nargs="+",
        default=[],
        metavar="OVERRIDE",
        help="extra overrides for every unit, e.g. method.init_solver=exact",
    )
    args = parser.parse_args(argv)

    variants = {k: v for k, v in VARIANTS.items() if k != "SkylakeX" or has_avx512()}
    units = default_units(args.splits)
    if args.methods:
        units = [u for u in units if u[0] in args.methods]
    if args.datasets:
        units = [u for u in units if u[1] in args.datasets]
    print(f"variants: {', '.join(variants)}; {len(units)} units x {len(variants)} variants")
    per_method: dict[str, tuple[float, str]] = {}
    everything = []
    for method, dataset, rate, splits in units:
        runs = {
            name: run_unit(method, dataset, rate, splits, env, args.set)
            for name, env in variants.items()
        }
        worst, where = largest_difference(runs)
        errors = {name: r["error"] for name, r in runs.items() if "error" in r}
        label = f"{method} on {dataset} rate {rate:g}"
        kernels = {name: r.get("kernels") for name, r in runs.items()}
        print(f"  {label}: largest difference {worst:.3g} ({where or '-'})", flush=True)
        for name, message in errors.items():
            print(f"    {name}: {message}")
        everything.append({"unit": label, "runs": runs, "kernels": kernels, "largest": worst})
        if worst >= per_method.get(method, (-1.0, ""))[0]:
            per_method[method] = (worst, f"{label}, {where}" if where else label)
    print("\n| method | largest difference of any metric value | where |")
    print("|---|---|---|")
    for method, (worst, where) in per_method.items():
        print(f"| {method} | {worst:.3g} | {where} |")
    if args.json:
        args.json.write_text(json.dumps(everything, indent=1))
    return 1 if any(w > args.tolerance for w, _ in per_method.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
