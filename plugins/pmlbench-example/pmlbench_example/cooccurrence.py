"""Label-correlated candidate noise: wrong labels that tend to appear with the true ones.

Annotators confuse a label with the labels it usually comes with, not with a random one.
For instance i with true set y_i, this model adds exactly as many wrong labels as the
PML3ER uniform model (m_i = min(round(rate |y_i|), l - 1 - |y_i|)), but draws them without
replacement with probability proportional to

    (1)  w_ij = sum_{t in y_i} P(j | t) + smoothing,    j not in y_i,

where P(j | t) = |{p : t, j in y_p}| / |{p : t in y_p}| is estimated on the ground truth the
model receives (the training part). Weighted sampling without replacement uses exponential
races: the m_i labels with the smallest E_ij / w_ij, E_ij ~ Exp(1), are drawn (Efraimidis and
Spirakis, Inf. Proc. Letters 2006); with smoothing = 0, labels of zero weight are drawn
uniformly at random only once the labels of positive weight run out.
"""

from __future__ import annotations

import numpy as np

from pmlbench.plugin import ROUNDING, PmlbenchError, check_label_matrix, noise_counts


def cooccurrence_weights(Y_true: np.ndarray, smoothing: float) -> np.ndarray:
    """w_ij of Eq. (1) for every instance and label (zero on the true labels)."""
    Y = Y_true.astype(np.float64)
    pair = Y.T @ Y
    freq = np.diag(pair).copy()
    conditional = np.divide(pair, freq[:, None], out=np.zeros_like(pair), where=freq[:, None] > 0)
    np.fill_diagonal(conditional, 0.0)
    weights = Y @ conditional + float(smoothing)
    weights[Y_true == 1] = 0.0
    return weights


def cooccurrence_noise(
    Y_true: np.ndarray,
    rng: np.random.Generator,
    rate: float = 1.0,
    smoothing: float = 0.01,
    rounding: str = "half_up",
) -> np.ndarray:
    """Label-correlated noise: wrong labels drawn in proportion to co-occurrence (Eq. 1).

    Args:
        Y_true: n x l ground truth (0/1) of the training part.
        rng: the generator that draws the wrong labels.
        rate: wrong labels per true label, as in the uniform model (0.5 ... 2.0).
        smoothing: pseudo-weight of every wrong label; 0 draws never co-occurring labels last.
        rounding: how rate * |y| becomes a count (see pmlbench's uniform model).
    """
    if not np.isfinite(rate) or rate < 0 or not np.isfinite(smoothing) or smoothing < 0:
        raise PmlbenchError("noise.rate and noise.smoothing must be non-negative numbers")
    if rounding not in ROUNDING:
        raise PmlbenchError(f"unknown noise.rounding {rounding!r}; use one of {list(ROUNDING)}")
    Y_true = check_label_matrix(Y_true, what="ground-truth labels")
    n, n_labels = Y_true.shape
    counts = noise_counts(Y_true.sum(axis=1), n_labels, float(rate), rounding)
    weights = cooccurrence_weights(Y_true, smoothing)
    race = rng.exponential(size=(n, n_labels))
    tiebreak = rng.random((n, n_labels))
    with np.errstate(divide="ignore"):
        keys = np.where(weights > 0, race / np.where(weights > 0, weights, 1.0), np.inf)
    keys[Y_true == 1] = np.nan  # true labels sort after everything (never drawn: m_i caps)
    order = np.lexsort((tiebreak, keys), axis=1)
    take = np.arange(n_labels)[None, :] < counts[:, None]
    rows = np.repeat(np.arange(n), take.sum(axis=1))
    candidates = Y_true.copy()
    candidates[rows, order[take]] = 1
    return candidates
