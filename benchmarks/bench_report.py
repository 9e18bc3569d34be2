"""Time ``pmlbench report`` over a paper-sized set of synthetic results.

5 datasets x 4 noise rates x 6 methods x 5 splits x 7 metrics (4,200 result rows in 120
run directories, laid out like a Hydra multirun), reported with a reference method, Holm
correction and all figures. Prints the time of each phase.

    python benchmarks/bench_report.py [--no-plots] [--keep DIR]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

# benchmarks/ is on sys.path: scripts run from it
from synthetic_results import DATASETS, METHODS, RATES, SPLITS, unit_rows

from pmlbench.report import ReportOptions, build_report, write_report


def write_synthetic(root: Path, seed: int = 0) -> int:
    """One results.csv per (dataset, rate, method) run directory; returns the row count."""
    rng = np.random.default_rng(seed)
    job, rows_written = 0, 0
    for dataset in DATASETS:
        for rate in RATES:
            for method in METHODS:
                rows = []
                for split in range(SPLITS):
                    rows += unit_rows(rng, dataset, rate, method, split)
                run_dir = root / f"{job}_{method}_{dataset}"
                run_dir.mkdir(parents=True)
                pd.DataFrame(rows).to_csv(run_dir / "results.csv", index=False)
                job += 1
                rows_written += len(rows)
    return rows_written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--no-plots", action="store_true")
    parser.add_argument("--keep", type=Path, help="write inputs and report here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        n_rows = write_synthetic(root / "multirun")
        options = ReportOptions(reference="pml3er", correction="holm", plots=not args.no_plots)
        start = time.perf_counter()
        report = build_report([root / "multirun"], options)
        built = time.perf_counter()
        written = write_report(report, root / "report")
        done = time.perf_counter()
    print(f"{n_rows} result rows in {len(report.loaded.files)} results.csv files")
    print(f"build_report (read + tests): {built - start:.2f} s")
    print(f"write_report ({len(written)} files, plots={options.plots}): {done - built:.2f} s")
    print(f"total: {done - start:.2f} s")


if __name__ == "__main__":
    main()
