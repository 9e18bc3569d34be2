"""Which selection procedure: cheaper ones against 5-fold cross-validation, same splits.

Issue 33 asks for the suite's tuning procedure to be chosen by measurement. For every method
with a declared grid (``default_tuning_grid``), on the paper's five datasets, on the first
``--splits`` splits of the paper's protocol (50/50, uniform candidate noise at rate 1.0,
seed 0), this script computes once:

- the 5-fold score matrix (grid points x folds) exactly as ``tune.procedure=kfold
  tune.cv=5`` does (:func:`pmlbench.protocol.tuning.cross_validate_grid`: the folds of
  ``KFold(5, shuffle=True, random_state=<the split's method seed>)``, average precision
  against the candidates), with the CPU time of each fold's grid fit;
- the 3-fold score matrix the same way (``tune.cv=3``);
- every grid point's test score: the grid fitted on the whole training part and scored on
  the test part against the ground truth (average precision);
- the CPU time of one untuned fit on the whole training part (the cost unit).

From these it derives the choice of each procedure: ``kfold5`` (the reference), ``kfold3``,
``holdout`` (fold 0 of the 5, what ``tune.procedure=holdout`` scores) and ``2of5`` (folds 0
and 1), with ties to the first grid point as ``best_index`` breaks them. It prints, per
method and procedure, how often the choice equals 5-fold's, the test average precision lost
against 5-fold's choice (mean and worst, in points of AP x 100), and the median cost in
untuned fits (the folds' grid fits plus one refit).

    python benchmarks/bench_selection.py                              # every tuned method
    python benchmarks/bench_selection.py --methods pml3er ridge --splits 2 --json /tmp/sel.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench_scaling import builtin_plugins

PAPER_DATASETS = ("genbase", "medical", "arts", "corel5k", "bibtex")
PROCEDURES = ("kfold5", "kfold3", "holdout", "2of5")


def run_unit(method: str, dataset: str, split: int) -> dict:
    """Score matrices, test scores and costs of one split, in this process."""
    import numpy as np
    from sklearn.base import clone
    from sklearn.model_selection import KFold, ParameterGrid
    from threadpoolctl import threadpool_limits

    from pmlbench.errors import NotApplicable
    from pmlbench.plugins import registry
    from pmlbench.plugins.loading import load_dataset
    from pmlbench.protocol.experiment import ExperimentSpec, make_candidates, prepare
    from pmlbench.protocol.fitting import fold_scorer
    from pmlbench.protocol.splits import plan_splits
    from pmlbench.protocol.tuning import fit_grid_points, scoring_metric

    grid = dict(registry.load("method", method).default_tuning_grid)
    points = list(ParameterGrid(grid))
    spec = ExperimentSpec(
        dataset={"name": dataset},
        noise={"name": "uniform", "rate": 1.0},
        method={"name": method},
        metrics=["average_precision"],
        n_splits=split + 1,
    )
    plugins = prepare(spec)
    data = load_dataset(spec.dataset)
    plan = plan_splits(data.n_instances, spec.n_splits, spec.test_size, spec.seed)[split]
    X = data.X[plan.train_idx]
    Y_cand = make_candidates(plugins.noise, data, plan)
    X_test, Y_test = data.X[plan.test_idx], data.Y[plan.test_idx]
    metric = scoring_metric("average_precision")
    score = fold_scorer(spec, metric, plan.method_seed)
    estimator = plugins.method.build(plan.method_seed)
    record: dict = {"method": method, "dataset": dataset, "split": split, "grid": points}

    def grid_scores(X_fit, Y_fit, X_held, Y_held) -> tuple[list[float], float]:
        cpu = time.process_time()
        scores = [float("nan")] * len(points)
        for index, fitted in fit_grid_points(clone(estimator), X_fit, Y_fit, points):
            scores[index] = score(fitted, X_fit, Y_fit, X_held, Y_held)
        return scores, time.process_time() - cpu

    try:
        with threadpool_limits(1):
            cpu = time.process_time()
            clone(estimator).fit(X, Y_cand)
            record["untuned_cpu"] = time.process_time() - cpu
            for cv in (5, 3):
                folds = KFold(cv, shuffle=True, random_state=plan.method_seed).split(X)
                columns, times = [], []
                for fit_idx, held_idx in folds:
                    s, t = grid_scores(X[fit_idx], Y_cand[fit_idx], X[held_idx], Y_cand[held_idx])
                    columns.append(s)
                    times.append(t)
                record[f"fold_scores{cv}"] = np.array(columns).T.tolist()
                record[f"fold_cpu{cv}"] = times
            record["test_scores"], record["test_cpu"] = grid_scores(X, Y_cand, X_test, Y_test)
    except NotApplicable as exc:
        return {**record, "status": "n/a", "message": str(exc)}
    return {**record, "status": "ok"}


def choices(record: dict) -> dict[str, tuple[int, float]]:
    """(chosen grid index, cost in untuned fits) of every procedure on one split."""
    import numpy as np

    from pmlbench.protocol.tuning import best_index

    five, three = np.array(record["fold_scores5"]), np.array(record["fold_scores3"])
    unit = record["untuned_cpu"]
    refit = 1.0  # one fit on the whole training part at the chosen point, about one unit
    used = {"kfold5": (five, 5), "kfold3": (three, 3), "holdout": (five[:, :1], 1)}
    used["2of5"] = (five[:, :2], 2)
    out = {}
    for name, (matrix, n_folds) in used.items():
        with np.errstate(all="ignore"):
            means = np.nanmean(matrix, axis=1)
        times = record["fold_cpu3"] if name == "kfold3" else record["fold_cpu5"][:n_folds]
        out[name] = (best_index(means, True), sum(times) / unit + refit)
    return out


def measure(method: str, dataset: str, split: int, timeout) -> dict:
    command = [sys.executable, __file__, "--unit", method, dataset, str(split)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"method": method, "dataset": dataset, "split": split, "status": "timeout"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        error = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"method": method, "dataset": dataset, "split": split, "status": error}
    return json.loads(lines[-1])


def summarise(records: list[dict]) -> str:
    lines = [
        "| method | procedure | units | same choice as 5-fold | AP lost, mean (x100) | "
        "AP lost, worst (x100) | cost in untuned fits (median) |",
        "|---|---|---|---|---|---|---|",
    ]
    by_method: dict[str, list[dict]] = {}
    for r in records:
        if r["status"] == "ok":
            by_method.setdefault(r["method"], []).append(r)
    for method, done in by_method.items():
        picked = [choices(r) for r in done]
        for procedure in PROCEDURES:
            same, lost, cost = 0, [], []
            for r, c in zip(done, picked, strict=True):
                reference = r["test_scores"][c["kfold5"][0]]
                index, units = c[procedure]
                same += index == c["kfold5"][0]
                lost.append(100 * (reference - r["test_scores"][index]))
                cost.append(units)
            lines.append(
                f"| {method} | {procedure} | {len(done)} | {same}/{len(done)} | "
                f"{statistics.mean(lost):.3f} | {max(lost):.3f} | {statistics.median(cost):.2f} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(PAPER_DATASETS))
    parser.add_argument("--methods", nargs="+", help="default: every built-in method with a grid")
    parser.add_argument("--splits", type=int, default=2, help="the first N splits")
    parser.add_argument("--timeout", type=float, default=None)
    parser.add_argument("--json", type=Path, help="write every record here (and resume from it)")
    parser.add_argument("--unit", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.unit:
        method, dataset, split = args.unit
        print(json.dumps(run_unit(method, dataset, int(split))), flush=True)
        return 0
    from pmlbench.plugins import registry

    methods = args.methods or [
        m
        for m in builtin_plugins("method", leave_out="external")
        if getattr(registry.load("method", m), "default_tuning_grid", None)
    ]
    records = json.loads(args.json.read_text()) if args.json and args.json.is_file() else []
    done = {(r["method"], r["dataset"], r["split"]) for r in records}
    for method in methods:
        for dataset in args.datasets:
            for split in range(args.splits):
                if (method, dataset, split) in done:
                    continue
                start = time.perf_counter()
                records.append(measure(method, dataset, split, args.timeout))
                print(
                    f"{method} {dataset} split {split}: {records[-1]['status']} "
                    f"({time.perf_counter() - start:.0f} s)",
                    flush=True,
                )
                if args.json:
                    args.json.write_text(json.dumps(records))
    print(summarise(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
