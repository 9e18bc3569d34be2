"""Wall time of the paper experiment (``+experiment=paper``) from a result store.

Reads the per-unit wall and CPU seconds that a sweep stored (pmlbench.runner.store), and
extrapolates from the units present to the whole paper grid (five datasets x four noise
rates x five splits x the methods of conf/experiment/paper.yaml), assuming a unit costs
what the measured units of its (method, dataset) cost on average. CPU seconds do not grow
when other processes share the cores, so they give the estimate for an otherwise idle
machine: total CPU / cores, plus the per-job start-up cost measured separately.

    python benchmarks/paper_walltime.py <store dir> [--cores 2] [--job-overhead 3.0]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from pmlbench.runner.store import iter_records

DATASETS = ("arts", "bibtex", "corel5k", "genbase", "medical")
RATES = 4
SPLITS = 5


def unit_costs(store_dir: Path) -> pd.DataFrame:
    rows = []
    for record in iter_records(store_dir):
        unit, run = record["unit"], record["run"]
        if "cpu_seconds" not in run:
            continue
        rows.append(
            {
                "method": unit["method"]["name"],
                "dataset": unit["dataset"]["name"],
                "rate": unit["noise"].get("rate"),
                "split": unit["split"],
                "cpu": run["cpu_seconds"],
                "wall": run["wall_seconds"],
            }
        )
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument(
        "--job-overhead",
        type=float,
        default=3.0,
        help="CPU seconds a job spends starting up (imports, config, data)",
    )
    args = parser.parse_args()
    costs = unit_costs(args.store)
    if costs.empty:
        raise SystemExit("no units with CPU seconds in this store")
    per_pair = costs.groupby(["method", "dataset"])[["cpu", "wall"]].mean()
    per_pair["units"] = costs.groupby(["method", "dataset"]).size()
    print("mean seconds per unit (one split), measured:")
    print(per_pair.round(2).to_string())
    missing = [
        (m, d)
        for m in per_pair.index.get_level_values(0).unique()
        for d in DATASETS
        if (m, d) not in per_pair.index
    ]
    if missing:
        print(f"not measured (left out of the estimate): {missing}")
    paper_units = per_pair["cpu"] * RATES * SPLITS
    jobs = len(per_pair) * RATES
    total_cpu = paper_units.sum() + jobs * args.job_overhead
    print("\nper method, whole paper grid (CPU seconds):")
    print(paper_units.groupby(level=0).sum().round(0).to_string())
    print(
        f"\npaper grid: {len(per_pair) * RATES * SPLITS} units in {jobs} jobs; "
        f"total CPU {total_cpu / 3600:.2f} h; "
        f"wall on {args.cores} idle cores ~ {total_cpu / args.cores / 3600:.2f} h"
    )


if __name__ == "__main__":
    main()
