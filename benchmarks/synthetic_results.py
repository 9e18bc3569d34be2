"""Synthetic results of a paper-sized sweep, for the benchmarks that time the report.

5 datasets x 4 noise rates x 6 methods x 5 splits x 7 metrics: 600 units, 4,200 result
rows. Each method has a fixed skill (the first method best), worse with the noise rate and
better with the dataset's position, plus seeded noise of 0.01; a metric where lower is
better gets 1 - value.
"""

from __future__ import annotations

import numpy as np

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


def unit_rows(rng: np.random.Generator, dataset: str, rate: float, method: str, split: int):
    """The seven result rows (``results.csv`` columns) of one unit, one draw of ``rng`` each."""
    d, m = DATASETS.index(dataset), METHODS.index(method)
    skill = 0.6 + 0.03 * (len(METHODS) - m) - 0.05 * rate + 0.02 * d
    rows = []
    for metric, higher in METRICS.items():
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
    return rows
