"""What tuning costs: one tuned split against one untuned split of the same method, same run.

Issue 33's target: for every method, tuning its declared grid (``default_tuning_grid``) under
the suite's selection procedure costs at most 3x one untuned fit on the same split. For each
method and dataset this script runs, each in a fresh subprocess (no shared caches), the first
split of the paper's protocol (50/50, uniform candidate noise at rate 1.0):

- ``untuned``: the method at its constructor defaults (``tune.grid=null``): fit, predict,
  metrics;
- ``tuned``: the same with the declared grid under ``--procedure`` (default ``holdout``) and
  ``--cv`` folds: the grid fitted on the inner training part (through the method's
  ``fit_grid`` hook when it has one), scored against the candidates, the winner refitted on
  the whole training part, then predict and metrics;

and prints the CPU seconds of both (process plus joblib workers, one BLAS thread) and their
ratio, per method the median over the datasets and the worst one. ``--agreement`` also fits
the grid once through ``fit_grid`` and once point by point from scratch on the training part
and prints the largest absolute difference of their test scores
(:func:`pmlbench.testing.check_fit_grid`).

    python benchmarks/bench_tuning_cost.py                                   # every method
    python benchmarks/bench_tuning_cost.py --methods pml_ni nlr --datasets enron yeast
    python benchmarks/bench_tuning_cost.py --procedure kfold --agreement --json /tmp/cost.json
    OPENBLAS_CORETYPE=Haswell python benchmarks/bench_tuning_cost.py --agreement-only
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

# benchmarks/ is on sys.path: scripts run from it
from bench_scaling import builtin_plugins

DATASETS = ("bibtex", "corel5k", "enron", "yeast")
TARGET = 3.0


def declared_grid(method: str) -> dict:
    from pmlbench.plugins import registry

    return dict(getattr(registry.load("method", method), "default_tuning_grid", {}) or {})


def run_unit(method: str, dataset: str, mode: str, procedure: str, cv: int) -> dict:
    """One split in this process: CPU seconds of fit (with tuning when ``mode`` is tuned) and
    predict, or the largest difference between ``fit_grid`` and fits from scratch."""
    from threadpoolctl import threadpool_limits

    from pmlbench.errors import NotApplicable
    from pmlbench.plugins.loading import load_dataset
    from pmlbench.protocol.experiment import ExperimentSpec, make_candidates, prepare, run_split
    from pmlbench.protocol.splits import plan_splits

    grid = declared_grid(method)
    tune = {"grid": grid if mode != "untuned" else {}, "cv": cv, "procedure": procedure}
    spec = ExperimentSpec(
        dataset={"name": dataset},
        noise={"name": "uniform", "rate": 1.0},
        method={"name": method},
        tune={**tune, "n_jobs": 1},
        metrics=["average_precision"],
        n_splits=1,
    )
    plugins = prepare(spec)
    data = load_dataset(spec.dataset)
    plan = plan_splits(data.n_instances, 1, spec.test_size, spec.seed)[0]
    record: dict = {"method": method, "dataset": dataset, "mode": mode, "grid": grid}
    with threadpool_limits(1):
        if mode == "agreement":
            from sklearn.model_selection import ParameterGrid

            from pmlbench.testing import check_fit_grid

            estimator = plugins.method.build(plan.method_seed)
            if not callable(getattr(estimator, "fit_grid", None)):
                return {**record, "status": "no fit_grid"}
            X_train = data.X[plan.train_idx]
            Y_cand = make_candidates(plugins.noise, data, plan)
            try:
                gap = check_fit_grid(
                    estimator,
                    X_train,
                    Y_cand,
                    list(ParameterGrid(grid)),
                    X_eval=data.X[plan.test_idx],
                    atol=float("inf"),
                )
            except NotApplicable as exc:
                return {**record, "status": "n/a", "message": str(exc)}
            return {**record, "status": "ok", "max_gap": gap}
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu, start = time.process_time(), time.perf_counter()
        try:
            result = run_split(spec, data, plan, plugins)
        except NotApplicable as exc:
            return {**record, "status": "n/a", "message": str(exc)}
        own, wall = time.process_time() - cpu, time.perf_counter() - start
    from joblib.externals.loky import get_reusable_executor

    get_reusable_executor().shutdown(wait=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    workers = (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)
    return {
        **record,
        "status": "ok",
        "cpu": own + workers,
        "wall": wall,
        "chosen": result.tuned,
        "average_precision": float(result.values["average_precision"]),
    }


def measure(method: str, dataset: str, mode: str, procedure: str, cv: int, timeout) -> dict:
    """:func:`run_unit` in a fresh subprocess."""
    command = [sys.executable, __file__, "--unit", method, dataset, mode, procedure, str(cv)]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, start_new_session=True
        )
    except subprocess.TimeoutExpired:
        return {"method": method, "dataset": dataset, "mode": mode, "status": "timeout"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        error = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {
            "method": method,
            "dataset": dataset,
            "mode": mode,
            "status": "failed",
            "message": error,
        }
    return json.loads(lines[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--methods", nargs="+", help="default: every built-in method")
    parser.add_argument("--procedure", default="holdout", choices=["holdout", "kfold"])
    parser.add_argument("--cv", type=int, default=5)
    parser.add_argument(
        "--agreement", action="store_true", help="also compare with fits from scratch"
    )
    parser.add_argument(
        "--agreement-only",
        action="store_true",
        help="only compare fit_grid with fits from scratch (no timing: safe on a busy machine)",
    )
    parser.add_argument("--timeout", type=float, default=None)
    parser.add_argument("--json", type=Path, help="also write every record here")
    parser.add_argument("--unit", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.unit:
        method, dataset, mode, procedure, cv = args.unit
        print(json.dumps(run_unit(method, dataset, mode, procedure, int(cv))), flush=True)
        return 0
    methods = args.methods or builtin_plugins("method", leave_out="external")
    if args.agreement_only:
        return agreement_table(methods, args)
    print(f"load average before: {os.getloadavg()}", flush=True)
    records = []
    lines = [
        f"| method | grid points | dataset | untuned CPU s | tuned CPU s ({args.procedure}, "
        f"cv={args.cv}) | ratio | chosen |" + (" max gap |" if args.agreement else ""),
        "|---|---|---|---|---|---|---|" + ("---|" if args.agreement else ""),
    ]
    summary = []
    for method in methods:
        ratios = {}
        for dataset in args.datasets:
            pair = {
                mode: measure(method, dataset, mode, args.procedure, args.cv, args.timeout)
                for mode in ("untuned", "tuned") + (("agreement",) if args.agreement else ())
            }
            records.extend(pair.values())
            untuned, tuned = pair["untuned"], pair["tuned"]
            size = len(list(_points(untuned.get("grid") or declared_grid(method))))
            if untuned["status"] != "ok" or tuned["status"] != "ok":
                status = untuned["status"] if untuned["status"] != "ok" else tuned["status"]
                lines.append(f"| {method} | {size} | {dataset} | {status} | | | |")
                print(lines[-1], flush=True)
                continue
            ratio = tuned["cpu"] / untuned["cpu"]
            ratios[dataset] = ratio
            gap = ""
            if args.agreement:
                agreement = pair["agreement"]
                gap = (
                    f" {agreement.get('max_gap', agreement['status']):.3g} |"
                    if agreement["status"] == "ok"
                    else f" {agreement['status']} |"
                )
            lines.append(
                f"| {method} | {size} | {dataset} | {untuned['cpu']:.2f} | {tuned['cpu']:.2f} | "
                f"{ratio:.2f} | {tuned['chosen']} |{gap}"
            )
            print(lines[-1], flush=True)
        if ratios:
            worst = max(ratios, key=ratios.get)
            summary.append(
                f"| {method} | {statistics.median(ratios.values()):.2f} | "
                f"{ratios[worst]:.2f} ({worst}) | "
                f"{'yes' if ratios[worst] <= TARGET else 'NO'} |"
            )
    print(f"load average after: {os.getloadavg()}\n")
    print("\n".join(lines))
    print("\n| method | median ratio | worst ratio | within 3x |\n|---|---|---|---|")
    print("\n".join(summary))
    if args.json:
        args.json.write_text(json.dumps(records, indent=1))
    return 0


def agreement_table(methods: list[str], args: argparse.Namespace) -> int:
    """Per method and dataset, the largest difference between the test scores of
    ``fit_grid`` and of each grid point fitted from scratch; per method, the largest over the
    datasets (the BLAS kernel named, to rerun under another with ``OPENBLAS_CORETYPE``)."""
    from threadpoolctl import threadpool_info

    kernels = sorted(
        {str(i.get("architecture")) for i in threadpool_info() if i["user_api"] == "blas"}
    )
    print(f"BLAS kernel: {', '.join(kernels) or 'unknown'}", flush=True)
    records, lines, summary = [], ["| method | dataset | max gap |", "|---|---|---|"], []
    for method in methods:
        gaps = {}
        for dataset in args.datasets:
            found = measure(method, dataset, "agreement", args.procedure, args.cv, args.timeout)
            records.append(found)
            if found["status"] == "ok":
                gaps[dataset] = found["max_gap"]
                lines.append(f"| {method} | {dataset} | {found['max_gap']:.3g} |")
            else:
                lines.append(f"| {method} | {dataset} | {found['status']} |")
            print(lines[-1], flush=True)
        if gaps:
            worst = max(gaps, key=gaps.get)
            summary.append(f"| {method} | {gaps[worst]:.3g} ({worst}) | {len(gaps)} |")
    print("\n".join(lines))
    print("\n| method | largest gap | datasets |\n|---|---|---|")
    print("\n".join(summary))
    if args.json:
        args.json.write_text(json.dumps({"kernels": kernels, "records": records}, indent=1))
    return 0


def _points(grid: dict):
    from sklearn.model_selection import ParameterGrid

    return ParameterGrid(grid) if grid else [{}]


if __name__ == "__main__":
    sys.exit(main())
