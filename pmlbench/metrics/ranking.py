"""Ranking metrics (one-error, ranking loss, average precision, coverage).

Definitions follow Zhang & Zhou, "A review on multi-label learning algorithms" (TKDE 2014).
Two conventions (see docs/metrics.md):

- ``zhang``: Zhang's MATLAB evaluation code, the reference for published PML numbers.
  Rows whose relevant set is empty or full are excluded from one-error, ranking loss and
  average precision; ranks come from a stable ascending sort, so among tied scores the
  higher column index ranks better; one-error counts no error when any label tied for the
  top score is relevant.
- ``sklearn``: scikit-learn's functions (degenerate rows kept, tied labels get the worst rank).

The zhang versions are written here because no library implements MATLAB's tie and
exclusion rules; they are vectorised over instances.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn import metrics as skm

from pmlbench.metrics.base import degenerate_rows


def _warn_if_two_valued(scores: np.ndarray, metric: str) -> None:
    if np.unique(scores).size <= 2:
        warnings.warn(
            f"{metric} received scores with at most two distinct values; ranking metrics "
            "need real-valued scores, not a bipartition",
            stacklevel=3,
        )


def _stable_ranks(scores: np.ndarray) -> np.ndarray:
    """MATLAB ranks: 1 = best; ties broken by a stable ascending sort (higher column first)."""
    n, q = scores.shape
    order = np.argsort(scores, axis=1, kind="stable")
    position = np.empty_like(order)
    np.put_along_axis(position, order, np.arange(q)[None, :].repeat(n, axis=0), axis=1)
    return q - position


def one_error(Y_true, Y_pred, scores, convention: str = "zhang") -> float:
    """Share of instances whose top-scored label is not relevant."""
    _warn_if_two_valued(scores, "one_error")
    if convention == "zhang":
        keep = ~degenerate_rows(Y_true)
        if not keep.any():
            return float("nan")
        Y, S = Y_true[keep], scores[keep]
        top = S == S.max(axis=1, keepdims=True)
        hit = (top & (Y == 1)).any(axis=1)
        return float(1.0 - hit.mean())
    top = np.argmax(scores, axis=1)
    return float(1.0 - Y_true[np.arange(len(top)), top].mean())


def ranking_loss(Y_true, Y_pred, scores, convention: str = "zhang") -> float:
    """Share of (relevant, irrelevant) pairs ordered wrongly, ties counted as wrong."""
    _warn_if_two_valued(scores, "ranking_loss")
    if convention == "sklearn":
        return float(skm.label_ranking_loss(Y_true, scores))
    keep = ~degenerate_rows(Y_true)
    if not keep.any():
        return float("nan")
    Y, S = Y_true[keep].astype(bool), scores[keep]
    # For every relevant label count irrelevant labels scored at least as high.
    losses = np.empty(len(Y))
    chunk = max(1, 20_000_000 // S.shape[1] ** 2)  # bounds the n x q x q comparison to ~20 MB
    for start in range(0, len(Y), chunk):
        y, s = Y[start : start + chunk], S[start : start + chunk]
        wrong = (s[:, :, None] <= s[:, None, :]) & y[:, :, None] & ~y[:, None, :]
        pairs = y.sum(axis=1) * (~y).sum(axis=1)
        losses[start : start + chunk] = wrong.sum(axis=(1, 2)) / pairs
    return float(losses.mean())


def average_precision(Y_true, Y_pred, scores, convention: str = "zhang") -> float:
    """Mean over relevant labels of (#relevant ranked at or above) / rank, averaged."""
    _warn_if_two_valued(scores, "average_precision")
    if convention == "sklearn":
        return float(skm.label_ranking_average_precision_score(Y_true, scores))
    keep = ~degenerate_rows(Y_true)
    if not keep.any():
        return float("nan")
    Y, S = Y_true[keep].astype(bool), scores[keep]
    ranks = _stable_ranks(S).astype(float)
    # Stable ranks are a permutation, so the m-th best relevant label has exactly m relevant
    # labels ranked at or above it: its precision is m / rank.
    sorted_ranks = np.sort(np.where(Y, ranks, np.inf), axis=1)
    m = np.arange(1, S.shape[1] + 1, dtype=float)[None, :]
    precision = np.where(np.isfinite(sorted_ranks), m / sorted_ranks, 0.0)
    return float((precision.sum(axis=1) / Y.sum(axis=1)).mean())


def coverage(Y_true, Y_pred, scores, convention: str = "zhang") -> float:
    """Mean over instances of (worst rank of a relevant label) - 1, unnormalised.

    PML papers often divide by the number of labels; divide the reported value by q for that.
    With the sklearn convention this is ``coverage_error - 1`` (tied labels get the worst rank).
    """
    _warn_if_two_valued(scores, "coverage")
    if convention == "sklearn":
        return float(skm.coverage_error(Y_true, scores) - 1.0)
    ranks = _stable_ranks(scores)
    worst = np.where(Y_true == 1, ranks, 0).max(axis=1)
    return float(worst.mean() - 1.0)
