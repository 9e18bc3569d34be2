"""Confidence-weighted binary relevance (CWBR) for partial multi-label learning.

Binary relevance trains one classifier per label. On candidate labels, a plain binary
relevance model treats every candidate as relevant; CWBR instead gives each candidate label
j of instance i a confidence c_ij in [0, 1] that it is truly relevant and maximises the
expected log-likelihood of a logistic model under these soft labels:

    (1)  knn_ij  = |{p in N_k(i) : j in S_p}| / k            (neighbours agree on j)
    (2)  cooc_ij = mean_{m in S_i, m != j} P(j in S | m in S)  (j co-occurs with the others)
    (3)  c_ij    = (1 - alpha) knn_ij + alpha cooc_ij, rescaled so that max_{j in S_i} c_ij = 1
    (4)  min_w  sum_i [ c_ij log(1 + e^{-f_j(x_i)}) + (1 - c_ij) log(1 + e^{f_j(x_i)}) ]
                + ||w_j||^2 / (2 C),   with c_ij = 0 for j not in S_i

where S_i is the candidate set of instance i, N_k(i) its k nearest training neighbours (never
itself), and a sole candidate gets c_ij = 1. The rescaling in (3) encodes that every
instance has at least one relevant label. Objective (4) is fitted by scikit-learn's
LogisticRegression with each candidate instance entered twice, as a positive with weight
c_ij and as a negative with weight 1 - c_ij.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.linear_model import LogisticRegression

from pmlbench.plugin import (
    Interval,
    ValidatedParameters,
    check_features,
    check_label_matrix,
    kneighbors,
    neighbor_counts,
)


def candidate_confidence(X, S: np.ndarray, k: int, alpha: float) -> np.ndarray:
    """Confidences c_ij of Eqs. (1)-(3): zero off the candidate sets, in [0, 1] on them."""
    S = S.astype(np.float64)
    n = S.shape[0]
    k = min(int(k), n - 1)
    knn = neighbor_counts(kneighbors(X, X, k, exclude_self=True), S) / k if k > 0 else S
    pair = S.T @ S  # pair[m, j] = number of instances with both m and j as candidates
    freq = np.diag(pair).copy()
    conditional = np.divide(pair, freq[:, None], out=np.zeros_like(pair), where=freq[:, None] > 0)
    size = S.sum(axis=1, keepdims=True)
    # sum over m in S_i of P(j | m), minus the m = j term (P(j | j) = 1), averaged
    cooc = np.divide(S @ conditional - S, size - 1, out=np.ones_like(S), where=size > 1)
    conf = ((1.0 - alpha) * knn + alpha * cooc) * S
    top = conf.max(axis=1, keepdims=True)
    conf = np.divide(conf, top, out=S.copy(), where=top > 0)
    conf[size[:, 0] == 1] = S[size[:, 0] == 1]
    return np.clip(conf, 0.0, 1.0)


class ConfidenceWeightedBR(ValidatedParameters, BaseEstimator):
    """Confidence-weighted binary relevance: soft-label logistic regression per label.

    Args:
        C: inverse L2 regularisation strength of each logistic regression (Eq. 4).
        k: neighbours used for the agreement term of the confidence (Eq. 1).
        alpha: weight of label co-occurrence against neighbour agreement (Eq. 3), in [0, 1].
        max_iter: iteration limit of the L-BFGS solver.
    """

    # Probabilities are calibrated around 0.5; never predict an empty label set.
    default_bipartition = {"rule": "threshold", "threshold": 0.5, "allow_empty": False}
    # Checked before any work: a run stops with "method.alpha must be a number in [0, 1], ..."
    parameter_constraints = {
        "C": [Interval(float, 0, None, closed="neither")],
        "k": [Interval(int, 1, None)],
        "alpha": [Interval(float, 0, 1)],
        "max_iter": [Interval(int, 1, None)],
    }

    def __init__(self, C: float = 1.0, k: int = 10, alpha: float = 0.5, max_iter: int = 500):
        self.C = C
        self.k = k
        self.alpha = alpha
        self.max_iter = max_iter

    def fit(self, X, Y) -> ConfidenceWeightedBR:
        """Estimate confidences (Eqs. 1-3), then fit one soft-label model per label (Eq. 4)."""
        self._validate_params()
        X = check_features(X)
        S = check_label_matrix(Y, what="candidate labels", n_rows=X.shape[0])
        conf = candidate_confidence(X, S, int(self.k), float(self.alpha))
        self.confidence_ = conf
        self.n_labels_ = S.shape[1]
        self.models_: list[LogisticRegression | float] = []
        for j in range(S.shape[1]):
            cand = np.flatnonzero((S[:, j] == 1) & (conf[:, j] < 1.0))  # soft candidates
            X_aug = (
                sp.vstack([X, X[cand]], format="csr") if sp.issparse(X) else np.vstack([X, X[cand]])
            )
            y_aug = np.concatenate([S[:, j], np.zeros(len(cand), dtype=np.uint8)])
            weight = np.concatenate([np.where(S[:, j] == 1, conf[:, j], 1.0), 1.0 - conf[cand, j]])
            keep = weight > 0
            X_aug, y_aug, weight = X_aug[keep], y_aug[keep], weight[keep]
            positive = weight[y_aug == 1].sum()
            if positive <= 0 or weight[y_aug == 0].sum() <= 0:
                # one class only: the score is the label's (weighted) rate, 0 or 1
                self.models_.append(float(positive > 0))
                continue
            model = LogisticRegression(C=float(self.C), max_iter=int(self.max_iter))
            self.models_.append(model.fit(X_aug, y_aug, sample_weight=weight))
        self.diagnostics_ = {"mean_candidate_confidence": float(conf[S == 1].mean())}
        return self

    def decision_function(self, X) -> np.ndarray:
        """Probability that each label is relevant (n x l)."""
        X = check_features(X)
        columns = [
            np.full(X.shape[0], m) if isinstance(m, float) else m.predict_proba(X)[:, 1]
            for m in self.models_
        ]
        return np.column_stack(columns)

    def predict(self, X) -> np.ndarray:
        """Labels whose probability is at least 0.5."""
        return (self.decision_function(X) >= 0.5).astype(np.uint8)
