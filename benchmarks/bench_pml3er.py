"""PML3ER: fit time and peak memory, against a deliberately plain faithful implementation.

For each bundled benchmark dataset (one 50/50 split, candidates at noise rate 1.0) it
reports, for pmlbench's PML3ER:

- ``fit``: one fit at lambda2 = 10, caches cleared first (stage timings from diagnostics_);
- ``tuned``: fit_with_tuning with the paper's grid lambda2 in {10, 100} and inner 5-fold CV
  (10 inner fits and the final refit);

and for the plain implementation below (dense n x n V, dense X, a matrix inverse per
iteration, a per-row NNLS on the raw d x k system, dense propagation) one fit at the same
lambda2, the speed ratio plain / pmlbench, and how far the two fitted W and training scores
agree (exactly only on the synthetic set with continuous features: real data have duplicate
rows, so neighbour ties and NNLS optima are not unique and the two may pick different ones).
Peak memory is the peak of traced allocations (tracemalloc; numpy arrays included),
measured in the same call as the time; times are wall-clock and CPU (process) seconds, and
the ratio is taken on CPU seconds, which a busy machine distorts less. Both run with BLAS
limited to one thread (the
setting PML3ER uses by default), so the ratio measures the algorithms, not the threading.

    python benchmarks/bench_pml3er.py [--datasets genbase medical ...] [--no-plain] [--no-tuned]
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np
import scipy.sparse as sp
from scipy.optimize import nnls
from threadpoolctl import threadpool_limits

from pmlbench.methods.pml3er import PML3ER
from pmlbench.noise.uniform import uniform_noise
from pmlbench.numerics.enrichment import enrich, pml3er_normalize
from pmlbench.plugins import registry
from pmlbench.protocol.experiment import ExperimentSpec
from pmlbench.protocol.fitting import fit_with_tuning
from pmlbench.protocol.splits import plan_splits

DATASETS = ("synthetic", "genbase", "medical", "arts", "corel5k", "bibtex")
LAMBDA2 = 10.0


def measure(fn, *args, **kwargs):
    """(result, (wall seconds, CPU seconds), peak traced MB) of one call."""
    tracemalloc.start()
    start, cpu = time.perf_counter(), time.process_time()
    result = fn(*args, **kwargs)
    seconds = (time.perf_counter() - start, time.process_time() - cpu)
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return result, seconds, peak


def plain_pml3er(
    X,
    Y,
    *,
    k=10,
    alpha=0.5,
    lambda1=1.0,
    lambda2=LAMBDA2,
    tau=1.0,
    max_iter=5,
    admm_iter=5,
    tol=1e-6,
    propagation_tol=1e-6,
    propagation_max_iter=1000,
):
    """PML3ER written straight from the equations, with no attention to cost."""
    X = X.toarray() if sp.issparse(X) else np.asarray(X)
    Y = Y.astype(float)
    n = X.shape[0]
    sq = (X**2).sum(axis=1)
    D = sq[:, None] + sq[None, :] - 2 * X @ X.T
    np.fill_diagonal(D, np.inf)
    neighbors = np.argsort(D, axis=1, kind="stable")[:, :k]
    V = np.zeros((n, n))
    for i in range(n):
        v = nnls(X[neighbors[i]].T, X[i])[0]
        V[i, neighbors[i]] = v / v.sum() if v.sum() > 0 else 1.0 / k
    F = Y.copy()
    for _ in range(propagation_max_iter):
        F_new = pml3er_normalize(alpha * V.T @ F + (1 - alpha) * Y, Y)
        change = np.abs(F_new - F).max()
        F = F_new
        if change < propagation_tol:
            break
    Yhat = enrich(F, Y)
    n_labels = Y.shape[1]
    C, B, Bhat, Theta = Y.copy(), np.eye(n_labels), np.eye(n_labels), np.zeros((n_labels, n_labels))
    W = np.linalg.inv(X.T @ X + lambda2 * np.eye(X.shape[1])) @ X.T @ C
    previous = None
    for _ in range(max_iter):
        C = (Yhat @ B.T + X @ W) @ np.linalg.inv(B @ B.T + np.eye(n_labels))
        C = np.clip(C, 0, 1) * Y
        for _ in range(admm_iter):
            Bhat = np.linalg.inv(2 * C.T @ C + tau * np.eye(n_labels)) @ (
                2 * C.T @ Yhat + tau * B + Theta
            )
            U, s, Vt = np.linalg.svd(Bhat - Theta / tau)
            B = U @ np.diag(np.maximum(s - lambda1 / tau, 0)) @ Vt
            Theta = Theta + tau * (B - Bhat)
        W = np.linalg.inv(X.T @ X + lambda2 * np.eye(X.shape[1])) @ X.T @ C
        value = (
            np.sum((Yhat - C @ B) ** 2)
            + np.sum((C - X @ W) ** 2)
            + lambda1 * np.linalg.svd(B, compute_uv=False).sum()
            + lambda2 * np.sum(W**2)
        )
        if previous is not None and abs(previous - value) <= tol * abs(previous):
            break
        previous = value
    return W


def split_data(name: str):
    if name == "synthetic":  # continuous features: unique neighbours and NNLS solutions
        rng = np.random.default_rng(0)
        X = rng.normal(size=(400, 30))
        Y_true = (X @ rng.normal(size=(30, 8)) > 1.0).astype(np.uint8)
        Y_true[np.arange(400), rng.integers(0, 8, 400)] = 1
        return X, Y_true, uniform_noise(Y_true, rng, rate=1.0)
    dataset = registry.load("dataset", name)()
    plan = plan_splits(dataset.X.shape[0], 1, 0.5, 0)[0]
    X = dataset.X[plan.train_idx]
    Y_true = dataset.Y[plan.train_idx]
    return X, Y_true, uniform_noise(Y_true, plan.noise_rng, rate=1.0)


def tuning_spec() -> ExperimentSpec:
    return ExperimentSpec(
        dataset={},
        noise={},
        method={},
        tune={
            "grid": {"lambda2": [10, 100]},
            "cv": 5,
            "scoring": "average_precision",
            "oracle": False,
        },
        bipartition={"rule": "threshold", "threshold": 0.5, "allow_empty": False},
        metrics=["average_precision"],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--no-plain", action="store_true", help="skip the plain implementation")
    parser.add_argument("--no-tuned", action="store_true", help="skip the tuned fit")
    args = parser.parse_args(argv)
    header = (
        f"{'dataset':9} {'n x d x l':>15} {'fit s':>6} {'cpu':>6} {'MB':>5} {'knn':>5} "
        f"{'nnls':>5} {'prop':>5} {'stage2':>6} {'tuned s':>7} {'cpu':>6} {'MB':>5} "
        f"{'plain s':>7} {'cpu':>6} {'MB':>5} {'ratio':>5} {'max|dW|':>8}"
    )
    print(header)
    print("-" * len(header))
    for name in args.datasets:
        X, _, Y = split_data(name)
        n, d = X.shape
        with threadpool_limits(1, user_api="blas"):
            model, (fit_s, fit_cpu), fit_mb = measure(PML3ER(lambda2=LAMBDA2).fit, X, Y)
            stage = model.diagnostics_
            tuned = "-", "-", "-"
            if not args.no_tuned:
                _, (tuned_s, tuned_cpu), tuned_mb = measure(
                    fit_with_tuning,
                    PML3ER(),
                    X,
                    Y,
                    spec=tuning_spec(),
                    Y_true_train=Y,
                    random_state=0,
                )
                tuned = f"{tuned_s:7.2f}", f"{tuned_cpu:6.2f}", f"{tuned_mb:5.0f}"
            plain = "-", "-", "-", "-", "-"
            if not args.no_plain:
                W_plain, (plain_s, plain_cpu), plain_mb = measure(plain_pml3er, X, Y)
                gap = np.abs(W_plain - model.W_).max()
                plain = (
                    f"{plain_s:7.2f}",
                    f"{plain_cpu:6.2f}",
                    f"{plain_mb:5.0f}",
                    f"{plain_cpu / fit_cpu:5.1f}",
                    f"{gap:8.1e}",
                )
        print(
            f"{name:9} {f'{n}x{d}x{Y.shape[1]}':>15} {fit_s:6.2f} {fit_cpu:6.2f} {fit_mb:5.0f} "
            f"{stage['knn_seconds']:5.2f} {stage['nnls_seconds']:5.2f} "
            f"{stage['propagation_seconds']:5.2f} {stage['stage2_seconds']:6.2f} "
            f"{' '.join(tuned)} {' '.join(plain)}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
