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

from pmlbench.report import ReportOptions, build_report, write_report

DATASETS = ["genbase", "medical", "arts", "corel5k", "bibtex"]
RATES = [0.5, 1.0, 1.5, 2.0]
METHODS = ["pml3er", "particle_map", "pml_lrs", "pml_fp", "mlknn", "lift"]
METRICS = {
    "subset_accuracy": True,
    "hamming_loss": False,
    "one_error": False,
    "ranking_loss": False,
    "average_precision": True,
    "macro_f1": True,
    "micro_f1": True,
}
SPLITS = 5


def write_synthetic(root: Path, seed: int = 0) -> int:
    """One results.csv per (dataset, rate, method) run directory; returns the row count."""
    rng = np.random.default_rng(seed)
    job, rows_written = 0, 0
    for d, dataset in enumerate(DATASETS):
        for rate in RATES:
            for m, method in enumerate(METHODS):
                rows = []
                for split in range(SPLITS):
                    for metric, higher in METRICS.items():
                        skill = 0.6 + 0.03 * (len(METHODS) - m) - 0.05 * rate + 0.02 * d
                        value = float(np.clip(skill + rng.normal(0, 0.01), 0, 1))
                        rows.append(
                            {
                                "dataset": dataset,
                                "noise": "uniform",
                                "noise_rate": rate,
                                "method": method,
                                "seed": 0,
                                "split": split,
                                "metric": metric,
                                "value": value if higher else 1 - value,
                                "higher_is_better": higher,
                                "convention": "zhang",
                                "bipartition": "method's predict",
                                "tuned": "",
                                "oracle": False,
                                "n_train": 500,
                                "n_test": 500,
                                "n_degenerate": 0,
                                "fit_seconds": 1.0,
                                "predict_seconds": 0.1,
                            }
                        )
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
