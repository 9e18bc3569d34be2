"""Time the rerun of a finished 600-unit sweep, and the code and file digests in its keys.

Unit keys cover every file of each third-party plugin's distribution, the import closure in
pmlbench of the unit's plugins and of the protocol, the files a config names and the library
versions (pmlbench.runner.units). This checks that computing
them keeps a finished sweep's rerun fast:

1. the digests alone: the first call in a process (every file read and hashed) and later
   calls (one ``stat`` per file), for one 5-split job;
2. a 600-unit store: 120 jobs (ML-kNN on genbase, k in 1..30 x noise rate 0.5 ... 2.0) x
   5 splits. Its records are synthetic numbers written by the runner's own record writer
   (UnitRunner.unit_record) under the real keys, so writing the store takes seconds;
   ``--compute`` computes the 600 units instead (minutes);
3. the rerun of all 120 jobs through the Python API (``run_config``, ``recompute=false``):
   every unit is found, checked (key, description, split, metrics) and reused, and each
   job writes results.csv, run.json and units.json;
4. with ``--cli``, the same rerun through ``python -m pmlbench -m ...`` (Hydra's basic
   launcher, one process), which adds Hydra's own cost per job.

    python benchmarks/bench_rerun.py [--compute] [--cli] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from pmlbench.api import compose_config
from pmlbench.core import fingerprint
from pmlbench.protocol.experiment import SplitResult, prepare
from pmlbench.runner.run import UnitRunner, run_config, spec_from_config
from pmlbench.runner.store import ResultStore
from pmlbench.runner.units import (
    _plugin_infos,
    code_fingerprint,
    code_roots,
    describe_units,
    input_files,
    unit_keys,
)

KS = list(range(1, 31))
RATES = [0.5, 1.0, 1.5, 2.0]
SPLITS = 5
GENBASE = {"name": "genbase", "n": 662, "d": 1186, "l": 27, "label_cardinality": 1.252}


def configs() -> list[dict]:
    """The 120 jobs' resolved configs (composed once, then varied like a sweep would)."""
    base = compose_config(
        ["method=mlknn", "dataset=genbase", f"protocol.n_splits={SPLITS}", "quiet=true"]
    )
    return [
        {
            **base,
            "method": {**base["method"], "k": k},
            "noise": {**base["noise"], "rate": rate},
        }
        for k in KS
        for rate in RATES
    ]


def time_digests(config: dict) -> dict[str, float]:
    """Seconds for the key digests of one 5-split job: cold (first call) and warm."""
    spec = spec_from_config(config)
    start = time.perf_counter()
    unit_keys(spec)
    cold = time.perf_counter() - start
    warm = []
    for _ in range(50):
        start = time.perf_counter()
        unit_keys(spec)
        warm.append(time.perf_counter() - start)
    parts = {}
    roots = code_roots(_plugin_infos(spec))
    for name, call in (
        ("code_fingerprint", lambda: code_fingerprint(spec)),
        ("import closure digest", lambda: fingerprint.modules_digest(roots)),
        ("pmlbench_tree (walk)", fingerprint.pmlbench_tree),
        ("whole-source digest", fingerprint.pmlbench_source_digest),
        ("input_files", lambda: input_files(spec)),
    ):
        runs = []
        for _ in range(50):
            start = time.perf_counter()
            call()
            runs.append(time.perf_counter() - start)
        parts[name] = statistics.median(runs)
    return {"unit_keys_cold": cold, "unit_keys_warm": statistics.median(warm), **parts}


def write_synthetic_store(store: ResultStore, jobs: list[dict], out: Path) -> None:
    """Every unit of ``jobs`` as the runner would store it, with made-up numbers."""
    rng = np.random.default_rng(0)
    for config in jobs:
        spec = spec_from_config(config)
        plugins = prepare(spec)
        units = describe_units(spec, plugins.registrations)
        runner = UnitRunner(spec, config, units, store, False, out, plugins)
        for split, key in enumerate(runner.keys):
            values = {m: float(rng.uniform()) for m in spec.metrics}
            result = SplitResult(
                index=split,
                values=values,
                fit_seconds=0.01,
                predict_seconds=0.01,
                n_train=331,
                n_test=331,
                n_degenerate=0,
                bipartition="method's predict",
                seeds={},
            )
            store.save(runner.unit_record(key, split, result, dict(GENBASE), "uniform"))


def rerun_api(store: ResultStore, jobs: list[dict], out: Path) -> tuple[float, int]:
    """Seconds to rerun every job through run_config, and the number of reused units."""
    start = time.perf_counter()
    for i, config in enumerate(jobs):
        run_config(config, out / f"job_{i}", quiet=True, store=store)
    seconds = time.perf_counter() - start
    cached = sum(
        u["status"] == "cached"
        for i in range(len(jobs))
        for u in json.loads((out / f"job_{i}" / "units.json").read_text())["units"]
    )
    return seconds, cached


def rerun_cli(store_dir: Path, out: Path) -> float:
    command = [
        sys.executable,
        "-m",
        "pmlbench",
        "-m",
        "method=mlknn",
        "dataset=genbase",
        f"method.k={','.join(map(str, KS))}",
        f"noise.rate={','.join(map(str, RATES))}",
        f"protocol.n_splits={SPLITS}",
        f"results_store={store_dir}",
        "cache_dir=null",
        "quiet=true",
        f"hydra.sweep.dir={out}",
    ]
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compute", action="store_true", help="compute the 600 units")
    parser.add_argument("--cli", action="store_true", help="also rerun through the CLI")
    parser.add_argument("--keep", type=Path, help="write into this directory and keep it")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="pmlbench-rerun-"))
    jobs = configs()
    store = ResultStore(root / "store")

    digests = time_digests(jobs[0])
    print("digests of one 5-split job (seconds):")
    for name, seconds in digests.items():
        print(f"  {name:<24} {seconds * 1000:8.2f} ms")

    start = time.perf_counter()
    if args.compute:
        rerun_api(store, jobs, root / "first")
    else:
        write_synthetic_store(store, jobs, root / "first")
    n_units = len(list((root / "store").glob("*.json")))
    print(f"store: {n_units} units in {time.perf_counter() - start:.1f} s")

    seconds, cached = rerun_api(ResultStore(root / "store"), jobs, root / "rerun")
    print(
        f"rerun through the API: {len(jobs)} jobs, {cached} of {len(jobs) * SPLITS} units "
        f"reused in {seconds:.2f} s ({seconds / len(jobs) * 1000:.1f} ms per job)"
    )
    if cached != len(jobs) * SPLITS:
        raise SystemExit("not every unit was reused")
    if args.cli:
        seconds = rerun_cli(root / "store", root / "cli")
        print(f"rerun through python -m pmlbench -m (basic launcher): {seconds:.1f} s")
    if args.keep is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
