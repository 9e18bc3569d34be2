"""Ranks of methods within each block (a PML dataset), respecting the metric's direction.

Equal results tie. A mean over splits is a float whose last bits depend on the order of its
additions: two methods that make the same 20 errors over five splits (spread differently
over the splits) get means 1e-17 apart, and an exact comparison would rank them, count a
win between them and change the Friedman statistic. :func:`merge_near_ties` makes values
that agree to :data:`TIE_TOLERANCE` (relative to max(1, |value|)) equal before any
comparison; a genuine difference of a metric over hundreds of test instances is many
orders of magnitude larger (one label of one instance of 8,000 x 983 moves a mean over
five splits by 2.5e-8), while the rounding noise of a mean is a few units of 1e-16.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import rankdata

from pmlbench.errors import PmlbenchError

# two values closer than this (relative to max(1, |value|)) are the same result
TIE_TOLERANCE = 1e-12


def merge_near_ties(values, tolerance: float = TIE_TOLERANCE) -> np.ndarray:
    """A copy of ``values`` (a vector, or a table whose rows are compared) in which values
    of a row that agree to ``tolerance`` are equal.

    Along each row sorted, a value within ``tolerance * max(1, |value|)`` of the previous
    one joins its run, and every member of a run takes the run's first (smallest) value;
    NaN stays NaN. Rows already free of near ties come back unchanged, bit for bit.
    """
    array = np.array(values, dtype=np.float64)
    if array.ndim not in (1, 2):
        raise PmlbenchError(f"ties are merged in a vector or a table, got shape {array.shape}")
    rows = array.reshape(1, -1) if array.ndim == 1 else array
    for row in rows:
        present = np.flatnonzero(~np.isnan(row))
        if len(present) < 2:
            continue
        order = present[np.argsort(row[present], kind="stable")]
        ordered = row[order]
        gaps = np.diff(ordered)
        close = gaps <= tolerance * np.maximum(1.0, np.abs(ordered[1:]))
        if not np.any(close & (gaps > 0)):
            continue
        starts = np.concatenate([[True], ~close])
        first = np.maximum.accumulate(np.where(starts, np.arange(len(ordered)), 0))
        row[order] = ordered[first]
    return array


def rank_within_blocks(values, higher_is_better: bool) -> np.ndarray:
    """Rank the methods (columns) within every block (row): 1 is best, ties get average ranks.

    For a higher-is-better metric the largest value gets rank 1; for a lower-is-better one
    (Hamming loss, ranking loss, ...) the smallest. Values that agree to
    :data:`TIE_TOLERANCE` tie (:func:`merge_near_ties`).
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2:
        raise PmlbenchError(f"ranking needs a blocks x methods table, got shape {values.shape}")
    if np.any(np.isnan(values)):
        raise PmlbenchError("cannot rank missing values; drop blocks where a method has no result")
    values = merge_near_ties(values)
    return rankdata(-values if higher_is_better else values, axis=1, method="average")


def average_ranks(values, higher_is_better: bool) -> np.ndarray:
    """The mean rank of each method over all blocks."""
    return rank_within_blocks(values, higher_is_better).mean(axis=0)
