"""kNN search on whole-number features: the exact-BLAS path against re-measuring ties.

:func:`pmlbench.numerics.neighbors.kneighbors` measures again, without BLAS, every reference
row within a rounding margin of the k-th distance, so that ties are decided the same way on
every machine. Whole-number features (binary words, counts) with squared norms below 2**50
skip that step: BLAS computes their distances exactly, in any order, on every kernel. This
script times both paths in the same run on the training half (first 50%) of bundled
datasets, k = 10 neighbours among themselves (the kNN graph of ML-kNN, PML3ER and PARTICLE),
checks that both give the same neighbours and distances bit for bit, and prints the ratio.

    python benchmarks/bench_knn_exact.py
    python benchmarks/bench_knn_exact.py --datasets yeastbp genbase --repeats 5
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import pmlbench.datasets.bundled as bundled
import pmlbench.numerics.neighbors as neighbors

DEFAULT_DATASETS = ["yeastbp", "delicious", "bibtex", "corel16k001", "genbase"]


def best_seconds(function, repeats: int) -> tuple[float, object]:
    """The fastest of ``repeats`` calls, and the last result."""
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def measure(name: str, k: int, repeats: int) -> str:
    X = getattr(bundled, name)().X
    X = X[: X.shape[0] // 2]
    if not neighbors._integer_valued(X):
        return f"| {name} | {X.shape[0]} x {X.shape[1]} | not whole numbers | | | |"

    def search():
        return neighbors.kneighbors(X, X, k, exclude_self=True, return_distance=True)

    exact_s, (idx, dist) = best_seconds(search, repeats)
    original = neighbors._integer_valued
    neighbors._integer_valued = lambda X: False  # the general path: re-measure near the k-th
    try:
        remeasure_s, (idx_again, dist_again) = best_seconds(search, repeats)
    finally:
        neighbors._integer_valued = original
    same = np.array_equal(idx, idx_again) and np.array_equal(dist, dist_again)
    return (
        f"| {name} | {X.shape[0]} x {X.shape[1]} | {exact_s:.2f} | {remeasure_s:.2f} | "
        f"{remeasure_s / exact_s:.1f} | {'yes' if same else 'NO'} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=DEFAULT_DATASETS)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print("| dataset | training rows x features | exact path s | re-measure s | ratio | same |")
    print("|---|---|---:|---:|---:|---|")
    for name in args.datasets:
        print(measure(name, args.k, args.repeats), flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
