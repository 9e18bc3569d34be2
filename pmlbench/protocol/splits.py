"""The paper's protocol: seeded random train/test splits and per-split random streams.

Every random draw of a run comes from ``numpy.random.SeedSequence(seed, spawn_key=(split,))``,
spawned into independent streams for the split, the noise and the method. The streams depend
only on (seed, split), so every method, noise level and hyper-parameter sees the same split,
and every method the same candidate labels: paired comparisons rely on it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pmlbench.errors import PmlbenchError

STREAMS = ("split", "noise", "method")


@dataclass(frozen=True)
class SplitPlan:
    """The indices and random streams of one split."""

    index: int
    train_idx: np.ndarray
    test_idx: np.ndarray
    noise_rng: np.random.Generator
    method_seed: int
    seed_record: dict


def split_streams(seed: int, split: int) -> dict[str, np.random.SeedSequence]:
    """Independent seed sequences for the split, noise and method draws of one split."""
    children = np.random.SeedSequence(int(seed), spawn_key=(int(split),)).spawn(len(STREAMS))
    return dict(zip(STREAMS, children, strict=True))


def plan_splits(n: int, n_splits: int, test_size: float, seed: int) -> list[SplitPlan]:
    """``n_splits`` random train/test partitions of ``n`` instances (ceil(test_size*n) test)."""
    if not isinstance(n_splits, int) or n_splits < 1:
        raise PmlbenchError(f"protocol.n_splits must be a positive integer, got {n_splits!r}")
    if not 0 < float(test_size) < 1:
        raise PmlbenchError(
            f"protocol.test_size must lie strictly between 0 and 1, got {test_size!r}"
        )
    n_test = math.ceil(float(test_size) * n)
    if n_test >= n or n_test < 1:
        raise PmlbenchError(f"test_size {test_size} leaves no training or no test data for n = {n}")
    plans = []
    for s in range(n_splits):
        streams = split_streams(seed, s)
        permutation = np.random.default_rng(streams["split"]).permutation(n)
        method_seed = int(streams["method"].generate_state(1)[0])
        plans.append(
            SplitPlan(
                index=s,
                train_idx=np.sort(permutation[n_test:]),
                test_idx=np.sort(permutation[:n_test]),
                noise_rng=np.random.default_rng(streams["noise"]),
                method_seed=method_seed,
                seed_record={
                    "seed": int(seed),
                    "spawn_key": [s],
                    "method_random_state": method_seed,
                },
            )
        )
    return plans
