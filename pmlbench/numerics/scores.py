"""From scores to label sets: a fixed threshold and the at-least-one-label rule.

Shared by the methods whose own ``predict`` thresholds their scores (ridge, PML3ER, through
:class:`LinearScores`) and by the protocol's bipartition rules
(``pmlbench.protocol.bipartition``).
"""

from __future__ import annotations

import numpy as np

from pmlbench.core.checks import check_feature_count, check_features


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


class LinearScores:
    """Scores ``X W_`` and a thresholded ``predict``, shared by ridge and PML3ER."""

    # set by the estimators' constructors and fit
    threshold: float
    allow_empty: bool
    W_: np.ndarray
    n_features_in_: int

    def decision_function(self, X) -> np.ndarray:
        """Scores ``X W`` (n x l)."""
        X = check_features(X)
        check_feature_count(X, self.n_features_in_, method=type(self).__name__)
        return np.asarray(X @ self.W_)

    def predict(self, X) -> np.ndarray:
        """Threshold the scores (see ``threshold`` and ``allow_empty``)."""
        return threshold_labels(self.decision_function(X), self.threshold, self.allow_empty)
