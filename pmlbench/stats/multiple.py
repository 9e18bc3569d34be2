"""Corrections for many simultaneous tests."""

from __future__ import annotations

import gc

import numpy as np
from statsmodels.stats.multitest import multipletests

from pmlbench.errors import PmlbenchError

CORRECTIONS = ("none", "holm")


def adjust_pvalues(pvalues, correction: str = "none") -> np.ndarray:
    """Adjusted p-values; a test is significant when its adjusted p-value is below alpha.

    ``"holm"`` is Holm's (1979) step-down procedure (statsmodels ``method="holm"``; note that
    statsmodels' own default, ``"hs"``, is Holm-Sidak). It controls the family-wise error over
    all the given tests without assuming independence.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    if correction not in CORRECTIONS:
        raise PmlbenchError(f"unknown correction {correction!r}; use one of {list(CORRECTIONS)}")
    if p.size == 0 or correction == "none":
        return p.copy()
    if np.any(np.isnan(p)):
        raise PmlbenchError("cannot adjust NaN p-values; a test upstream is undefined")
    # statsmodels' Holm branch runs gc.collect(); freezing the existing objects first keeps
    # that from sweeping the whole heap on every call
    gc.freeze()
    try:
        return multipletests(p, method="holm")[1]
    finally:
        gc.unfreeze()
