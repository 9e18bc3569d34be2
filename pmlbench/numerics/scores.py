"""From scores to label sets: a fixed threshold and the at-least-one-label rule.

Shared by the methods whose own ``predict`` thresholds their scores (ridge, PML3ER) and by
the protocol's bipartition rules (``pmlbench.protocol.bipartition``).
"""

from __future__ import annotations

import numpy as np


def ensure_nonempty(Y_pred: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Give every instance with no predicted label its top-scored label."""
    Y_pred = Y_pred.copy()
    empty = Y_pred.sum(axis=1) == 0
    if empty.any():
        Y_pred[np.flatnonzero(empty), np.argmax(scores[empty], axis=1)] = 1
    return Y_pred


def threshold_labels(scores: np.ndarray, threshold: float, allow_empty: bool) -> np.ndarray:
    """Labels scored at least ``threshold``; the top label when none is (unless allowed)."""
    Y_pred = (scores >= threshold).astype(np.uint8)
    return Y_pred if allow_empty else ensure_nonempty(Y_pred, scores)
