"""ML-kNN (Zhang & Zhou, Pattern Recognition 2007), trained on candidate labels.

Faithful to the authors' MLKNN_train.m / MLKNN_test.m: Laplace-smoothed priors and
neighbour-count likelihoods, an instance is never its own neighbour, ties between equal
distances go to the lower training index, posteriors are the scores and a label is
predicted when its posterior is >= 0.5. Vectorised over instances and labels.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator

from pmlbench.core.checks import check_features, check_label_matrix
from pmlbench.core.parameters import ValidatedParameters
from pmlbench.methods._constraints import NON_NEGATIVE, POSITIVE_INT, check_neighbours
from pmlbench.numerics.neighbors import kneighbors, neighbor_counts, shared_knn_graph


class MLkNN(ValidatedParameters, BaseEstimator):
    """ML-kNN: k-nearest-neighbour MAP estimation per label (Zhang & Zhou 2007).

    Args:
        k: number of neighbours, an integer >= 1 (paper: 10); at most the training
            instances minus one.
        s: smoothing of the priors and likelihoods (Eqs. 1-2), a number >= 0 (paper: 1,
            Laplace smoothing; 0 gives the unsmoothed frequencies).
    """

    default_bipartition = {"rule": "method"}
    parameter_constraints = {"k": POSITIVE_INT, "s": NON_NEGATIVE}

    def __init__(self, k: int = 10, s: float = 1.0):
        self.k = k
        self.s = s

    def fit(self, X, Y) -> MLkNN:
        """Estimate priors and likelihoods from the training set (Eqs. 1-2 of the paper)."""
        self._validate_params()
        X = check_features(X)
        Y = check_label_matrix(Y, what="candidate labels", n_rows=X.shape[0])
        n, q = Y.shape
        check_neighbours(self.k, n)
        k, s = int(self.k), float(self.s)  # plain Python numbers for the cache key
        self.prior1_ = (s + Y.sum(axis=0)) / (2 * s + n)
        # the training kNN graph is the one PML3ER and PARTICLE use: shared through the cache
        neighbors = shared_knn_graph(X, k)
        counts = neighbor_counts(neighbors, Y)
        # histograms c1[j, r] / c0[j, r]: instances with / without label j and r neighbours with it
        flat = np.arange(q)[None, :] * (k + 1) + counts
        c1 = np.bincount(flat[Y == 1], minlength=q * (k + 1)).reshape(q, k + 1)
        c0 = np.bincount(flat[Y == 0], minlength=q * (k + 1)).reshape(q, k + 1)
        self.cond1_ = (s + c1) / (s * (k + 1) + c1.sum(axis=1, keepdims=True))
        self.cond0_ = (s + c0) / (s * (k + 1) + c0.sum(axis=1, keepdims=True))
        self.X_train_, self.Y_train_ = X, Y
        return self

    def decision_function(self, X) -> np.ndarray:
        """Posterior probability that each label is relevant (n x l)."""
        X = check_features(X)
        counts = neighbor_counts(kneighbors(X, self.X_train_, int(self.k)), self.Y_train_)
        labels = np.arange(counts.shape[1])[None, :]
        p1 = self.prior1_ * self.cond1_[labels, counts]
        p0 = (1 - self.prior1_) * self.cond0_[labels, counts]
        denominator = p1 + p0
        return np.divide(
            p1,
            denominator,
            out=np.broadcast_to(self.prior1_, p1.shape).copy(),
            where=denominator > 0,
        )

    def predict(self, X) -> np.ndarray:
        """Labels whose posterior is at least 0.5 (exact ties go to the positive side)."""
        return (self.decision_function(X) >= 0.5).astype(np.uint8)
