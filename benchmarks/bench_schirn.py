"""Schirn: CPU of one tuned unit, a baseline commit's code against the working tree, same run.

For each dataset, the first split of the suite's protocol (50/50, uniform candidate noise at
``--rate``, seed 0) with Schirn tuned over its declared grid under the suite's procedure
(``holdout``: the grid through ``fit_grid`` on 80 % of the training part, the winner refitted
on all of it), then predict and the seven metrics. Each unit runs in a fresh subprocess with
one BLAS thread, once with ``pmlbench/methods/schirn.py`` as committed at ``--baseline``
(loaded in place of the module; everything else is the working tree's) and once with the
working tree's, alternating, ``--repeats`` times. It prints, per dataset:

- the CPU seconds of both (best of the repeats) and their ratio, working tree / baseline;
- the iterations the grid ran (``_iteration`` calls of the tuning's ``fit_grid``, the refit's
  excluded; 3 x 100 if nothing were shared) and the winning setting;
- the largest absolute difference of each metric value between the two.

``--qr-blocks`` instead times step 3's QR alone on random matrices of the training shapes of
delicious, corel5k, bibtex and corel16k001 (n x labels): LAPACK ``dgeqrf`` against
``dgeqrt`` at several block sizes and at :func:`pmlbench.methods.schirn.qr_block_size`
(best of three, one BLAS thread, in this process).

    python benchmarks/bench_schirn.py                                  # delicious, bibtex
    python benchmarks/bench_schirn.py --datasets genbase medical --repeats 1
    python benchmarks/bench_schirn.py --baseline 3e96480 --json /tmp/schirn.json
    python benchmarks/bench_schirn.py --qr-blocks
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULE = "pmlbench/methods/schirn.py"
DATASETS = ("delicious", "bibtex")


def run_unit(dataset: str, rate: float, baseline_file: str | None) -> dict:
    """One tuned split of Schirn in this process (``baseline_file``: that module's code)."""
    if baseline_file:
        import pmlbench.methods

        found = importlib.util.spec_from_file_location("pmlbench.methods.schirn", baseline_file)
        assert found is not None and found.loader is not None
        module = importlib.util.module_from_spec(found)
        sys.modules["pmlbench.methods.schirn"] = module
        found.loader.exec_module(module)
        pmlbench.methods.schirn = module
    from threadpoolctl import threadpool_limits

    import pmlbench.methods.schirn as schirn
    from pmlbench.plugins.loading import load_dataset
    from pmlbench.protocol.experiment import ExperimentSpec, prepare, run_split
    from pmlbench.protocol.splits import plan_splits

    assert schirn.__file__ == (baseline_file or str(ROOT / MODULE)), schirn.__file__
    counted = {"iterations": 0, "in_grid": True}
    step = schirn._iteration

    def counting(*args, **kwargs):
        counted["iterations"] += counted["in_grid"]
        return step(*args, **kwargs)

    schirn._iteration = counting
    fit_grid = schirn.Schirn.fit_grid

    def grid_then_refit(self, X, Y, points):
        yield from fit_grid(self, X, Y, points)
        counted["in_grid"] = False  # what follows the grid is the refit

    schirn.Schirn.fit_grid = grid_then_refit  # type: ignore[method-assign]
    spec = ExperimentSpec(
        dataset={"name": dataset},
        noise={"name": "uniform", "rate": rate},
        method={"name": "schirn"},
        tune={"grid": dict(schirn.Schirn.default_tuning_grid), "procedure": "holdout", "n_jobs": 1},
        n_splits=1,
    )
    plugins = prepare(spec)
    data = load_dataset(spec.dataset)
    plan = plan_splits(data.n_instances, 1, spec.test_size, spec.seed)[0]
    with threadpool_limits(1):
        cpu = time.process_time()
        result = run_split(spec, data, plan, plugins)
        cpu = time.process_time() - cpu
    return {
        "dataset": dataset,
        "code": "baseline" if baseline_file else "working tree",
        "cpu": cpu,
        "grid_iterations": counted["iterations"],
        "chosen": result.tuned,
        "values": {name: float(value) for name, value in result.values.items()},
    }


QR_SHAPES = ((8052, 983), (2500, 374), (3697, 159), (6883, 153))


def qr_blocks() -> None:
    """CPU seconds of ``dgeqrf`` and of ``dgeqrt`` at several block sizes, per shape."""
    import numpy as np
    import scipy.linalg
    from threadpoolctl import threadpool_limits

    from pmlbench.methods.schirn import qr_block_size

    def best(function, *args, **kwargs) -> float:
        times = []
        for _ in range(3):
            start = time.process_time()
            function(*args, **kwargs)
            times.append(time.process_time() - start)
        return min(times)

    geqrf, geqrt = scipy.linalg.qr, scipy.linalg.lapack.dgeqrt
    blocks = (32, 64, 128, 192)
    print("| n x c | dgeqrf s | " + " | ".join(f"dgeqrt {b}" for b in blocks) + " | rule |")
    print("|---|---|" + "---|" * (len(blocks) + 1))
    with threadpool_limits(1):
        for n, c in QR_SHAPES:
            A = np.asfortranarray(np.random.default_rng(0).normal(size=(n, c)))
            base = best(geqrf, A, mode="raw", check_finite=False)
            cells = [f"{best(geqrt, min(b, c), A) / base:.2f}" for b in blocks]
            rule = qr_block_size(c)
            ratio = best(geqrt, rule, A) / base
            print(f"| {n} x {c} | {base:.3f} | {' | '.join(cells)} | {ratio:.2f} ({rule}) |")


def measure(dataset: str, rate: float, baseline_file: str | None) -> dict:
    """:func:`run_unit` in a fresh subprocess with one BLAS thread."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    command = [sys.executable, __file__, "--unit", dataset, str(rate), baseline_file or ""]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"{dataset}: {(done.stderr.strip().splitlines() or ['no output'])[-1]}")
    return json.loads(lines[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--rate", type=float, default=1.0, help="uniform noise rate (1.0)")
    parser.add_argument("--baseline", default="HEAD", help="commit of the baseline module")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write every record here")
    parser.add_argument("--qr-blocks", action="store_true", help="time step 3's QR alone")
    parser.add_argument("--unit", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.unit:
        dataset, rate, baseline_file = args.unit
        print(json.dumps(run_unit(dataset, float(rate), baseline_file or None)), flush=True)
        return 0
    if args.qr_blocks:
        qr_blocks()
        return 0
    source = subprocess.run(
        ["git", "show", f"{args.baseline}:{MODULE}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    records = []
    with tempfile.TemporaryDirectory(prefix="bench-schirn-") as scratch:
        baseline_file = str(Path(scratch) / "schirn_baseline.py")
        Path(baseline_file).write_text(source)
        print(f"baseline {args.baseline}; load average before: {os.getloadavg()}", flush=True)
        print(
            "| dataset | baseline CPU s | working tree CPU s | ratio | grid iterations "
            "(baseline / working tree) | chosen | largest metric difference |"
        )
        print("|---|---|---|---|---|---|---|", flush=True)
        for dataset in args.datasets:
            runs: dict[str, list[dict]] = {"baseline": [], "working tree": []}
            for _ in range(args.repeats):
                for file in (baseline_file, None):
                    record = measure(dataset, args.rate, file)
                    runs[record["code"]].append(record)
                    records.append(record)
            old = min(runs["baseline"], key=lambda r: r["cpu"])
            new = min(runs["working tree"], key=lambda r: r["cpu"])
            gaps = {name: abs(new["values"][name] - old["values"][name]) for name in old["values"]}
            worst = max(gaps, key=gaps.get)  # type: ignore[arg-type]
            print(
                f"| {dataset} | {old['cpu']:.1f} | {new['cpu']:.1f} | "
                f"{new['cpu'] / old['cpu']:.3f} | {old['grid_iterations']} / "
                f"{new['grid_iterations']} | {new['chosen']} | {gaps[worst]:.3g} ({worst}) |",
                flush=True,
            )
            print("  metric differences: " + json.dumps({k: f"{v:.3g}" for k, v in gaps.items()}))
    print(f"load average after: {os.getloadavg()}")
    if args.json:
        args.json.write_text(json.dumps(records, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
