"""Exactness without its price: the fast exact paths against the slow ones, same run, same bits.

The kernel-independent decisions of pmlbench.numerics (docs/protocol.md, "Reproducibility")
used to be paid for everywhere: PML3ER's and PARTICLE's NNLS weights ran the Lawson-Hanson
method one row at a time in Python floats on Gram matrices from ``numpy.einsum``, and kNN's
general path measured every candidate near the k-th distance again without BLAS. Now the
Lawson-Hanson steps run for all rows at once with the same float operations
(``exact.canonical_nnls_batch``), whole-number Gram matrices come from BLAS or sparse
products (exact in any order), and kNN measures again only candidates whose BLAS distances
lie within the rounding margin of each other. This script times both ways on the training
half (first 50%) of each dataset, k = 10, one BLAS thread, CPU seconds (best of
``--repeats``), and checks that both give the same numbers bit for bit:

- NNLS weights V (Eq. 2 of PML3ER): the row-by-row reference (``scalar_nnls_weights``
  below, the code as it was) against ``enrichment.nnls_weights``;
- the kNN graph on the general path (forced for whole-number features, which normally take
  the exact-BLAS path): every candidate measured again (``remeasure_all`` below) against
  ``neighbors.kneighbors``.

    python benchmarks/bench_exactness.py
    python benchmarks/bench_exactness.py --datasets yeast arts --repeats 3

``--main-job TREE`` also times the README's main job (``python -m pmlbench method=pml3er
dataset=bibtex``, store and cache off) as whole commands, paired (this tree, then the
source tree TREE on PYTHONPATH, in turn), user + system CPU seconds of each finished
process from ``os.wait4``:

    git worktree add /tmp/base3515582 3515582
    python benchmarks/bench_exactness.py --datasets --main-job /tmp/base3515582 --pairs 3

(``--datasets`` with no name skips the per-dataset table.)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

import pmlbench.datasets.bundled as bundled
import pmlbench.numerics.neighbors as neighbors
from pmlbench.numerics.enrichment import nnls_weights, weight_graph
from pmlbench.numerics.exact import canonical_nnls, row_groups, squared_distances

DEFAULT_DATASETS = ["bibtex", "genbase", "medical", "corel5k"]
MAIN_JOB = [
    "-m",
    "pmlbench",
    "method=pml3er",
    "dataset=bibtex",
    "results_store=null",
    "cache_dir=null",
    "quiet=true",
]


def scalar_nnls_weights(X, N: np.ndarray) -> sp.csr_matrix:
    """The reference: nnls_weights as it was, one canonical_nnls call per row on Gram
    matrices from einsum."""
    n, k = N.shape
    groups = row_groups(X)
    index = np.hstack([N, np.arange(n)[:, None]])
    grams = np.empty((n, k + 1, k + 1))
    chunk = max(1, 4_000_000 // ((k + 1) * X.shape[1]))
    for start in range(0, n, chunk):
        Z = X[index[start : start + chunk].ravel()]
        Z = (Z.toarray() if sp.issparse(Z) else np.asarray(Z, dtype=np.float64)).reshape(
            -1, k + 1, X.shape[1]
        )
        grams[start : start + chunk] = np.einsum("imd,ind->imn", Z, Z, optimize=False)
    weights = np.zeros((n, k))
    for i in range(n):
        G = grams[i]
        if not G[k, k] > 0:
            continue
        ids = groups[N[i]]
        copies = ids == groups[i]
        if copies.any():
            weights[i, copies] = 1.0 / np.count_nonzero(copies)
            continue
        _, first = np.unique(ids, return_index=True)
        first = np.sort(first)
        v = canonical_nnls(G[np.ix_(first, first)], G[first, k], float(G[k, k]))
        for position, value in zip(first, v, strict=True):
            members = ids == ids[position]
            weights[i, members] = value / np.count_nonzero(members)
    return weight_graph(weights, N)


def remeasure_all(X, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The reference kNN graph of the general path: every candidate within twice the
    rounding margin of the k-th BLAS distance measured again, then ordered."""
    n = X.shape[0]
    sq = neighbors._squared_norms(X)
    block = max(1, neighbors._BLOCK_ENTRIES // n)
    indices, distances = np.empty((n, k), dtype=np.int64), np.empty((n, k))
    for start in range(0, n, block):
        stop = min(start + block, n)
        D = neighbors.euclidean_distances(
            X[start:stop], X, Y_norm_squared=sq[None, :], squared=True
        )
        D[np.arange(stop - start), np.arange(start, stop)] = np.inf
        bound = neighbors.gemm_distance_margin(sq[start:stop], sq.max())
        kth = np.partition(D, k - 1, axis=1)[:, k - 1 : k]
        rows, cols = np.nonzero(D <= kth + 2.0 * bound[:, None])
        keep = cols != rows + start
        rows, cols = rows[keep], cols[keep]
        exact = squared_distances(X, X, rows + start, cols)
        order = np.lexsort((cols, exact, rows))
        rows, cols, exact = rows[order], cols[order], exact[order]
        first = np.searchsorted(rows, np.arange(stop - start))
        kept = np.arange(len(rows)) - first[rows] < k
        indices[start:stop] = cols[kept].reshape(-1, k)
        distances[start:stop] = np.sqrt(exact[kept]).reshape(-1, k)
    return indices, distances


def best_cpu_seconds(function, repeats: int) -> tuple[float, object]:
    """The smallest CPU time of ``repeats`` calls, and the last result."""
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.process_time()
        result = function()
        best = min(best, time.process_time() - start)
    return best, result


def same_bits(a, b) -> bool:
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def measure(name: str, k: int, repeats: int) -> str:
    X = sp.csr_matrix(getattr(bundled, name)().X)
    X = X[: X.shape[0] // 2]
    N = neighbors.kneighbors(X, X, k, exclude_self=True)
    old_s, V_old = best_cpu_seconds(lambda: scalar_nnls_weights(X, N), repeats)
    new_s, V_new = best_cpu_seconds(lambda: nnls_weights(X, N), repeats)
    nnls_same = all(same_bits(getattr(V_old, a), getattr(V_new, a)) for a in ("indptr", "indices"))
    nnls_same = nnls_same and same_bits(V_old.data, V_new.data)
    original = neighbors._integer_valued
    neighbors._integer_valued = lambda X: False  # the general path, as for other features
    try:
        knn_old_s, (idx_old, dist_old) = best_cpu_seconds(lambda: remeasure_all(X, k), repeats)
        knn_new_s, idx_new = best_cpu_seconds(
            lambda: neighbors.kneighbors(X, X, k, exclude_self=True), repeats
        )
        _, (idx_d, dist_d) = best_cpu_seconds(
            lambda: neighbors.kneighbors(X, X, k, exclude_self=True, return_distance=True), 1
        )
    finally:
        neighbors._integer_valued = original
    knn_same = (
        same_bits(idx_old, idx_new) and same_bits(idx_old, idx_d) and same_bits(dist_old, dist_d)
    )
    return (
        f"| {name} | {X.shape[0]} x {X.shape[1]} | {old_s:.2f} | {new_s:.2f} | "
        f"{old_s / new_s:.1f} | {'yes' if nnls_same else 'NO'} | {knn_old_s:.2f} | "
        f"{knn_new_s:.2f} | {knn_old_s / knn_new_s:.1f} | {'yes' if knn_same else 'NO'} |"
    )


def run_once(python_path: str | None) -> float:
    """CPU seconds (user + system, the process and its children) of one main job."""
    env = dict(os.environ)
    if python_path:
        env["PYTHONPATH"] = python_path
    else:
        env.pop("PYTHONPATH", None)
    with open(os.devnull, "wb") as sink:
        process = subprocess.Popen(
            [sys.executable, *MAIN_JOB], env=env, stdout=sink, stderr=sink, cwd=_scratch()
        )
        _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"the main job failed (PYTHONPATH={python_path})")
    return usage.ru_utime + usage.ru_stime


def _scratch() -> str:
    path = Path(os.environ.get("TMPDIR", "/tmp")) / "bench_exactness_runs"
    path.mkdir(exist_ok=True)
    return str(path)


def main_job(base: str, pairs: int) -> None:
    here = str(Path(__file__).resolve().parents[1])
    print(f"main job, this tree ({here}) against {base}, {pairs} pairs, CPU seconds")
    print("| pair | this tree | base | ratio |")
    print("|---:|---:|---:|---:|")
    ratios = []
    run_once(here)  # warm-up: file caches, compiled bytecode
    for pair in range(1, pairs + 1):
        ours, theirs = run_once(here), run_once(base)
        ratios.append(ours / theirs)
        print(f"| {pair} | {ours:.1f} | {theirs:.1f} | {ours / theirs:.2f} |", flush=True)
    print(f"median ratio: {float(np.median(ratios)):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="*", default=DEFAULT_DATASETS)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--main-job", metavar="TREE", help="source tree to compare against")
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    if args.datasets:
        print(
            "| dataset | training rows x features | NNLS row by row s | NNLS now s | ratio | "
            "same | kNN general, all re-measured s | kNN now s | ratio | same |"
        )
        print("|---|---|---:|---:|---:|---|---:|---:|---:|---|")
        with threadpool_limits(1):
            for name in args.datasets:
                print(measure(name, args.k, args.repeats), flush=True)
    if args.main_job:
        main_job(args.main_job, args.pairs)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
