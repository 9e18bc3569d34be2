"""Bipartition metrics (subset accuracy, Hamming loss, macro-F1, micro-F1).

Both conventions agree on these except for the macro-F1 of a label with TP = FP = FN = 0,
which ``zero_division`` decides: 0 (default; Zhang's toolbox and scikit-learn's default),
1, or "exclude" (average over the labels where F1 is defined).
"""

from __future__ import annotations

import numpy as np

from pmlbench.errors import PmlbenchError

ZERO_DIVISION = (0, 1, "exclude")


def _check_zero_division(zero_division) -> None:
    if zero_division not in ZERO_DIVISION:
        raise PmlbenchError(
            f"unknown macro-F1 zero_division {zero_division!r}; use one of {list(ZERO_DIVISION)}"
        )


def subset_accuracy(Y_true, Y_pred, scores=None) -> float:
    """Share of instances whose predicted set equals the relevant set exactly."""
    return float((Y_true == Y_pred).all(axis=1).mean())


def hamming_loss(Y_true, Y_pred, scores=None) -> float:
    """Share of mismatched (instance, label) entries."""
    return float((Y_true != Y_pred).mean())


def _counts(Y_true, Y_pred):
    t, p = Y_true.astype(bool), Y_pred.astype(bool)
    tp = (t & p).sum(axis=0)
    fp = (~t & p).sum(axis=0)
    fn = (t & ~p).sum(axis=0)
    return tp, fp, fn


def macro_f1(Y_true, Y_pred, scores=None, zero_division=0) -> float:
    """Mean over labels of 2TP / (2TP + FP + FN)."""
    _check_zero_division(zero_division)
    tp, fp, fn = _counts(Y_true, Y_pred)
    denominator = 2 * tp + fp + fn
    defined = denominator > 0
    f1 = np.divide(2.0 * tp, denominator, out=np.zeros(len(tp)), where=defined)
    if zero_division == "exclude":
        return float(f1[defined].mean()) if defined.any() else float("nan")
    f1[~defined] = float(zero_division)
    return float(f1.mean())


def micro_f1(Y_true, Y_pred, scores=None, zero_division=0) -> float:
    """2 sum TP / (2 sum TP + sum FP + sum FN)."""
    _check_zero_division(zero_division)
    tp, fp, fn = (c.sum() for c in _counts(Y_true, Y_pred))
    denominator = 2 * tp + fp + fn
    if denominator == 0:
        return float("nan") if zero_division == "exclude" else float(zero_division)
    return float(2.0 * tp / denominator)
