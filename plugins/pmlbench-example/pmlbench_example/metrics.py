"""``macro_auc``: the area under the ROC curve, averaged over labels.

AUC_j is the probability that a random relevant instance of label j is scored above a random
irrelevant one (ties count one half). Labels with only relevant or only irrelevant test
instances have no AUC and are left out of the average; when no label has both, the value is
NaN rather than a made-up number.
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics import roc_auc_score

from pmlbench.plugin import Metric


def macro_auc_value(Y_true: np.ndarray, Y_pred: np.ndarray, scores: np.ndarray) -> float:
    """Mean over labels with both classes present of the per-label ROC AUC."""
    positives = Y_true.sum(axis=0)
    defined = (positives > 0) & (positives < Y_true.shape[0])
    if not defined.any():
        return float("nan")
    return float(roc_auc_score(Y_true[:, defined], scores[:, defined], average="macro"))


macro_auc = Metric(
    "macro_auc",
    macro_auc_value,
    higher_is_better=True,
    needs="scores",
    description="ROC AUC averaged over labels that have both classes in the test part",
)
