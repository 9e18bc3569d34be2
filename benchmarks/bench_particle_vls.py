"""PARTICLE-VLS: cost of the calibrated-label-ranking stage on the bundled datasets.

For each dataset (split 0 of the default protocol, candidates at noise rate 1.0) it runs
stage 1 once, then trains every pairwise and label-vs-virtual linear SVM with data on both
sides, with 1 and with 2 joblib threads, and votes on the test half. It reports the number
of problems (of the q(q-1)/2 + q possible), the rows they hold in total, wall and CPU
seconds of each phase. CPU seconds are the honest number on a shared machine.

    python benchmarks/bench_particle_vls.py [--datasets corel5k bibtex ...] [--jobs 1 2]
"""

from __future__ import annotations

import argparse
import time
from functools import partial

import numpy as np

from pmlbench.core.checks import check_features
from pmlbench.methods.particle.clr import VIRTUAL, clr_votes, fit_clr
from pmlbench.methods.particle.credible import Stage1Params, credible_labels
from pmlbench.noise.uniform import uniform_noise
from pmlbench.plugins import registry
from pmlbench.protocol.splits import plan_splits

DATASETS = ("genbase", "medical", "arts", "corel5k", "bibtex")


def timed(fn):
    """(value, wall seconds, process CPU seconds) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return value, time.perf_counter() - wall, time.process_time() - cpu


def problem_rows(credible: np.ndarray, S: np.ndarray) -> int:
    """Total training rows over all problems with data on both sides."""
    C, N = credible.astype(np.int64), 1 - S.astype(np.int64)
    pos, neg = C.T @ N, N.T @ C  # pos[j, k]: credible j and non-candidate k
    rows = np.triu(pos + neg.T, 1)
    both = np.triu((pos > 0) & (neg.T > 0), 1)
    virtual = (C.sum(axis=0) > 0) & (N.sum(axis=0) > 0)
    return int(rows[both].sum() + (C.sum(axis=0) + N.sum(axis=0))[virtual].sum())


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--jobs", nargs="+", type=int, default=[1, 2])
    args = parser.parse_args(argv)
    for name in args.datasets:
        data = registry.load("dataset", name)()
        plan = plan_splits(data.n_instances, 1, 0.5, seed=0)[0]
        X = check_features(data.X[plan.train_idx])
        X_test = check_features(data.X[plan.test_idx])
        S = uniform_noise(data.Y[plan.train_idx], plan.noise_rng, rate=1.0)
        (credible, info), wall, cpu = timed(partial(credible_labels, X, S, Stage1Params()))
        q = S.shape[1]
        print(
            f"{name}: n={X.shape[0]} q={q} stage1 wall={wall:.1f}s cpu={cpu:.1f}s "
            f"iterations={info['n_iter']} rows-in-problems={problem_rows(credible, S)}"
        )
        for jobs in args.jobs:
            models, wall, cpu = timed(partial(fit_clr, X, credible, S, seed=0, n_jobs=jobs))
            n_virtual = int(np.sum(models.second == VIRTUAL))
            print(
                f"  svm n_jobs={jobs}: pairs={models.first.size - n_virtual}/{q * (q - 1) // 2} "
                f"virtual={n_virtual}/{q} not-converged={models.n_not_converged} "
                f"wall={wall:.1f}s cpu={cpu:.1f}s"
            )
        _, wall, cpu = timed(partial(clr_votes, models, X_test, q))
        print(f"  votes on {X_test.shape[0]} test instances: wall={wall:.1f}s cpu={cpu:.1f}s")


if __name__ == "__main__":
    main()
