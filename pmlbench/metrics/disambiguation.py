"""Disambiguation quality: how well a PML method tells the true labels among the candidates.

A PML method trained on candidate labels first decides which candidates of each training
instance are true (PML3ER's enriched labels, PARTICLE's credible labels, PML-LD's label
distributions, the noise matrices of NLR and PML-NI, ...). A method that exposes its
confidence per training candidate (``disambiguation_scores_``, see :mod:`pmlbench.plugin`)
is scored on the training part, whose clean labels pmlbench knows:

- ``disambiguation_auc``: the area under the ROC curve of that confidence over all
  training candidates (every instance's candidates pooled), positives the true labels and
  negatives the false candidates; tied confidences count one half (the Mann-Whitney
  statistic, as ``sklearn.metrics.roc_auc_score``). 0.5 is a random ordering.
- ``disambiguation_precision``: per training instance with t_i >= 1 true labels, the share
  of true labels among its t_i most confident candidates, averaged over those instances.
  A tie across the cut is resolved by its expectation under a random order of the tied
  candidates (each tied candidate fills the remaining places with equal probability), so
  the value does not depend on the order of floating-point equal scores.

Both are training-side measures: they say nothing about the test part and are never ranked
with the test metrics.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import rankdata

from pmlbench.errors import PluginError

MEASURES = ("disambiguation_auc", "disambiguation_precision")


def _check(scores, candidates, truth) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    candidates = np.asarray(candidates) != 0
    truth = np.asarray(truth) != 0
    try:
        scores = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError):
        raise PluginError(
            "disambiguation_scores_ must be a numeric n_train x labels array; "
            "set it to the confidences of the training candidates"
        ) from None
    if scores.shape != candidates.shape or truth.shape != candidates.shape:
        raise PluginError(
            f"disambiguation_scores_ has shape {scores.shape}, the training candidates "
            f"{candidates.shape}; set one confidence per training instance and label"
        )
    if not np.all(np.isfinite(scores[candidates])):
        raise PluginError(
            "disambiguation_scores_ holds NaN or infinite values at candidate labels; "
            "set finite confidences"
        )
    return scores, candidates, truth & candidates


def disambiguation_auc(scores, candidates, truth) -> float:
    """AUC of ``scores`` separating true labels from false candidates, over all candidates.

    AUC = (R_pos - n_pos (n_pos + 1) / 2) / (n_pos n_neg), R_pos the sum of the average
    ranks of the true candidates among all candidates (Mann & Whitney 1947; Hanley & McNeil
    1982). NaN when every candidate is true or none is (nothing to separate). True labels
    outside the candidate set are not candidates and do not count.
    """
    scores, candidates, truth = _check(scores, candidates, truth)
    values = scores[candidates]
    positive = truth[candidates]
    n_pos = int(positive.sum())
    n_neg = len(values) - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = rankdata(values, method="average")
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def disambiguation_precision(scores, candidates, truth) -> float:
    """Mean over instances with true labels of the precision of their top-t_i candidates.

    t_i is the number of true labels among instance i's candidates. Candidates strictly
    above the cut count fully; the g candidates tied at the cut share the remaining r
    places, each true one counting r/g (the expectation over the orders of the tie).
    NaN when no instance has a true candidate.
    """
    scores, candidates, truth = _check(scores, candidates, truth)
    precisions = []
    for row_scores, row_candidates, row_truth in zip(scores, candidates, truth, strict=True):
        t = int(row_truth.sum())
        if t == 0:
            continue
        s = row_scores[row_candidates]
        is_true = row_truth[row_candidates]
        cut = np.sort(s)[::-1][t - 1]  # the t-th largest confidence
        above = s > cut
        tied = s == cut
        remaining = t - int(above.sum())
        hits = float(is_true[above].sum()) + remaining * float(is_true[tied].sum()) / int(
            tied.sum()
        )
        precisions.append(hits / t)
    return float(np.mean(precisions)) if precisions else float("nan")


def disambiguation_measures(scores, candidates, truth) -> dict[str, float]:
    """Both measures by name (:data:`MEASURES`); an undefined one (NaN) is left out."""
    values = {
        "disambiguation_auc": disambiguation_auc(scores, candidates, truth),
        "disambiguation_precision": disambiguation_precision(scores, candidates, truth),
    }
    return {name: value for name, value in values.items() if np.isfinite(value)}
