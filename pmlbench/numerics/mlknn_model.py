"""The ML-kNN model (Zhang & Zhou, Pattern Recognition 2007): priors, neighbour-count
likelihoods and MAP posteriors, shared by the ``mlknn`` method and PARTICLE-MAP's second
stage (which fits it on the credible labels).

Faithful to the authors' MLKNN_train.m / MLKNN_test.m: Laplace-smoothed priors (Eq. 1) and
likelihoods (Eq. 2), an instance is never its own neighbour, ties between equal distances
go to the lower training index (pmlbench.numerics.neighbors), and the posteriors are the
scores. Vectorised over instances and labels. Inputs are checked by the estimators.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pmlbench.numerics.neighbors import kneighbors, neighbor_counts, shared_knn_graph


@dataclass(frozen=True)
class MLkNNModel:
    """A fitted ML-kNN: ``prior1`` (l), ``cond1`` / ``cond0`` (l x (k+1)): the probability
    that r of an instance's k neighbours have label j when it has (does not have) label j."""

    k: int
    prior1: np.ndarray
    cond1: np.ndarray
    cond0: np.ndarray
    X_train: object
    Y_train: np.ndarray

    @classmethod
    def fit(cls, X, Y: np.ndarray, k: int, s: float) -> MLkNNModel:
        """Estimate priors and likelihoods from checked training data (Eqs. 1-2)."""
        n, q = Y.shape
        k, s = int(k), float(s)  # plain Python numbers for the cache key
        prior1 = (s + Y.sum(axis=0)) / (2 * s + n)
        # the training kNN graph is the one PML3ER and PARTICLE use: shared through the cache
        neighbors = shared_knn_graph(X, k)
        counts = neighbor_counts(neighbors, Y)
        # histograms c1[j, r] / c0[j, r]: instances with / without label j and r neighbours with it
        flat = np.arange(q)[None, :] * (k + 1) + counts
        c1 = np.bincount(flat[Y == 1], minlength=q * (k + 1)).reshape(q, k + 1)
        c0 = np.bincount(flat[Y == 0], minlength=q * (k + 1)).reshape(q, k + 1)
        cond1 = (s + c1) / (s * (k + 1) + c1.sum(axis=1, keepdims=True))
        cond0 = (s + c0) / (s * (k + 1) + c0.sum(axis=1, keepdims=True))
        return cls(k, prior1, cond1, cond0, X, Y)

    def posteriors(self, X) -> np.ndarray:
        """Posterior probability that each label is relevant (n x l), for checked X."""
        counts = neighbor_counts(kneighbors(X, self.X_train, self.k), self.Y_train)
        labels = np.arange(counts.shape[1])[None, :]
        p1 = self.prior1 * self.cond1[labels, counts]
        p0 = (1 - self.prior1) * self.cond0[labels, counts]
        denominator = p1 + p0
        return np.divide(
            p1,
            denominator,
            out=np.broadcast_to(self.prior1, p1.shape).copy(),
            where=denominator > 0,
        )

    def predict(self, X) -> np.ndarray:
        """Labels whose posterior is at least 0.5 (exact ties go to the positive side)."""
        return (self.posteriors(X) >= 0.5).astype(np.uint8)
