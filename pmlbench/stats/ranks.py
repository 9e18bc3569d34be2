"""Ranks of methods within each block (a PML dataset), respecting the metric's direction."""

from __future__ import annotations

import numpy as np
from scipy.stats import rankdata

from pmlbench.errors import PmlbenchError


def rank_within_blocks(values, higher_is_better: bool) -> np.ndarray:
    """Rank the methods (columns) within every block (row): 1 is best, ties get average ranks.

    For a higher-is-better metric the largest value gets rank 1; for a lower-is-better one
    (Hamming loss, ranking loss, ...) the smallest.
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2:
        raise PmlbenchError(f"ranking needs a blocks x methods table, got shape {values.shape}")
    if np.any(np.isnan(values)):
        raise PmlbenchError("cannot rank missing values; drop blocks where a method has no result")
    return rankdata(-values if higher_is_better else values, axis=1, method="average")


def average_ranks(values, higher_is_better: bool) -> np.ndarray:
    """The mean rank of each method over all blocks."""
    return rank_within_blocks(values, higher_is_better).mean(axis=0)
