"""Bipartition rules: how a method's scores become predicted label sets.

Binarisation is a separate, recorded step: every result row names the rule used.

- ``method``: the method's own ``predict`` (e.g. ML-kNN's posterior >= 0.5).
- ``threshold``: score >= ``threshold``.

With ``allow_empty: false`` an instance whose rule selects no label gets its top-scored label.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pmlbench.errors import PmlbenchError

RULES = ("method", "threshold")


def ensure_nonempty(Y_pred: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Give every instance with no predicted label its top-scored label."""
    Y_pred = Y_pred.copy()
    empty = Y_pred.sum(axis=1) == 0
    if empty.any():
        Y_pred[np.flatnonzero(empty), np.argmax(scores[empty], axis=1)] = 1
    return Y_pred


@dataclass
class Bipartition:
    """A configured bipartition rule; ``fit`` sees training data only."""

    rule: str = "method"
    threshold: float = 0.5
    allow_empty: bool = True

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise PmlbenchError(f"unknown bipartition.rule {self.rule!r}; use one of {list(RULES)}")

    def fit(self, estimator, X_train, Y_candidates) -> Bipartition:
        return self

    def apply(self, estimator, X, scores: np.ndarray) -> np.ndarray:
        if self.rule == "method":
            Y_pred = np.asarray(estimator.predict(X))
        else:
            Y_pred = (scores >= self.threshold).astype(np.uint8)
        if not self.allow_empty:
            Y_pred = ensure_nonempty(Y_pred, scores)
        return Y_pred

    def describe(self) -> str:
        text = "method's predict" if self.rule == "method" else f"score >= {self.threshold:g}"
        return text + ("" if self.allow_empty else ", top label if empty")


def make_bipartition(config: dict) -> Bipartition:
    """A Bipartition from the ``bipartition`` config node."""
    known = {"rule", "threshold", "allow_empty"}
    unknown = set(config) - known
    if unknown:
        raise PmlbenchError(f"unknown bipartition options {sorted(unknown)}; known: {sorted(known)}")
    return Bipartition(**config)
