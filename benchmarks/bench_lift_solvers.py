"""LIFT's two SVM solvers compared: libsvm (the authors' path) and the primal Newton solver.

For each dataset and split (50/50, candidates at noise rate 1.0, LIFT's defaults otherwise)
it runs one unit with ``method.solver=libsvm`` and one with ``method.solver=newton`` on the
same split and candidates, records average precision, ranking loss and the unit's fit
seconds, and prints per dataset the mean ± standard deviation over the splits and the
two-sided paired t-test (``scipy.stats.ttest_rel``) of each metric. Records are appended to
a JSON-lines file, so an interrupted run resumes where it stopped.

    python benchmarks/bench_lift_solvers.py                        # the five paper datasets
    python benchmarks/bench_lift_solvers.py --datasets genbase --splits 2 --out /tmp/l.jsonl
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from scipy.stats import ttest_rel

DATASETS = ("genbase", "medical", "arts", "corel5k", "bibtex")
SOLVERS = ("libsvm", "newton")
METRICS = ("average_precision", "ranking_loss")


def run_unit(dataset: str, split: int, solver: str, rate: float) -> dict:
    """One split of LIFT with ``solver``, as the runner runs it (fit, predict, metrics)."""
    from pmlbench.plugins.loading import load_dataset
    from pmlbench.protocol.experiment import ExperimentSpec, prepare, run_split
    from pmlbench.protocol.splits import plan_splits

    spec = ExperimentSpec(
        dataset={"name": dataset},
        noise={"name": "uniform", "rate": rate},
        method={"name": "lift", "solver": solver},
        metrics=list(METRICS),
        n_splits=split + 1,
    )
    plugins = prepare(spec)
    data = load_dataset(spec.dataset)
    plan = plan_splits(data.n_instances, spec.n_splits, spec.test_size, spec.seed)[split]
    start = time.perf_counter()
    result = run_split(spec, data, plan, plugins)
    return {
        "dataset": dataset,
        "split": split,
        "solver": solver,
        "rate": rate,
        "wall": time.perf_counter() - start,
        "fit": result.fit_seconds,
        **{name: float(result.values[name]) for name in METRICS},
    }


def table(records: list[dict], datasets: list[str]) -> str:
    """Markdown: per dataset and metric, mean ± std of each solver and the paired t-test."""
    lines = [
        "| dataset | splits | AP libsvm | AP newton | p (AP) | RL libsvm | RL newton | p (RL) "
        "| fit s libsvm | fit s newton |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for dataset in datasets:
        by = {
            solver: {
                r["split"]: r for r in records if r["dataset"] == dataset and r["solver"] == solver
            }
            for solver in SOLVERS
        }
        splits = sorted(set(by["libsvm"]) & set(by["newton"]))
        if not splits:
            continue
        cells = [dataset, str(len(splits))]
        for metric in METRICS:
            a = np.array([by["libsvm"][s][metric] for s in splits])
            b = np.array([by["newton"][s][metric] for s in splits])
            p = ttest_rel(a, b).pvalue if len(splits) > 1 and np.any(a != b) else float("nan")
            cells += [f"{a.mean():.4f} ± {a.std(ddof=1) if len(a) > 1 else 0:.4f}"]
            cells += [f"{b.mean():.4f} ± {b.std(ddof=1) if len(b) > 1 else 0:.4f}", f"{p:.3f}"]
        for solver in SOLVERS:
            cells.append(f"{np.mean([by[solver][s]['fit'] for s in splits]):.1f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("--rate", type=float, default=1.0)
    parser.add_argument("--out", type=Path, default=Path("lift_solvers.jsonl"))
    args = parser.parse_args(argv)
    records = (
        [json.loads(line) for line in args.out.read_text().splitlines() if line.strip()]
        if args.out.exists()
        else []
    )
    done = {(r["dataset"], r["split"], r["solver"], r["rate"]) for r in records}
    for dataset in args.datasets:
        for split in range(args.splits):
            for solver in SOLVERS:
                if (dataset, split, solver, args.rate) in done:
                    continue
                record = run_unit(dataset, split, solver, args.rate)
                records.append(record)
                with args.out.open("a") as handle:
                    handle.write(json.dumps(record) + "\n")
                print(json.dumps(record), flush=True)
    print(table([r for r in records if r["rate"] == args.rate], args.datasets))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
