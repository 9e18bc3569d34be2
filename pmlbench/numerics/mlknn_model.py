"""The ML-kNN model (Zhang & Zhou, Pattern Recognition 2007): priors, neighbour-count
likelihoods and MAP posteriors, shared by the ``mlknn`` method and PARTICLE-MAP's second
stage (which fits it on the credible labels).

Faithful to the authors' MLKNN_train.m / MLKNN_test.m: Laplace-smoothed priors (Eq. 1) and
likelihoods (Eq. 2), an instance is never its own neighbour, ties between equal distances
go to the lower training index (pmlbench.numerics.neighbors), and the posteriors are the
scores. Vectorised over instances and labels. Inputs are checked by the estimators.

For a grid of k (and of models on one training set), :func:`widest_graph` and
:class:`QueryNeighbours` search the training graph and each query set once, at the largest
k, and every model takes the first k columns. This equals a search at k: neighbours come
in the exact order of (distance, training index), measured the same way whatever k, so the
k nearest are the first k of the k' >= k nearest, ties included.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pmlbench.core.digest import content_digest
from pmlbench.numerics.neighbors import kneighbors, neighbor_counts, shared_knn_graph


class QueryNeighbours:
    """The ``k_max`` nearest training rows of the last query set, for models sharing them.

    ML-kNN models fitted on one training set with k <= ``k_max`` (a grid) ask here for the
    neighbours of a query set; it is searched once and each model reads its first k columns.
    The last query set is recognised by its content digest.
    """

    def __init__(self, X_train, k_max: int):
        self.X_train = X_train
        self.k_max = int(k_max)
        self._key: str | None = None
        self._neighbors: np.ndarray | None = None

    def __call__(self, X, k: int) -> np.ndarray:
        """The k nearest training rows of every row of checked ``X`` (n x k), nearest first."""
        if not 1 <= k <= self.k_max:
            raise ValueError(f"k = {k} outside the searched range 1..{self.k_max}")
        key = content_digest(X)
        if key != self._key or self._neighbors is None:
            self._neighbors = kneighbors(X, self.X_train, self.k_max)
            self._key = key
        return self._neighbors[:, :k]


def widest_graph(X, ks) -> np.ndarray:
    """The training kNN graph at the largest of ``ks`` (self excluded), through the cache;
    ``graph[:, :k]`` is the graph at each k (module docstring)."""
    return shared_knn_graph(X, max(int(k) for k in ks))


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
    query: QueryNeighbours | None = None

    @classmethod
    def fit(
        cls,
        X,
        Y: np.ndarray,
        k: int,
        s: float,
        *,
        neighbors: np.ndarray | None = None,
        query: QueryNeighbours | None = None,
    ) -> MLkNNModel:
        """Estimate priors and likelihoods from checked training data (Eqs. 1-2).

        ``neighbors``: the training kNN graph (n x k', k' >= k, self excluded) when the
        caller has it; ``query``: neighbours of query sets shared with other models on X.
        """
        n, q = Y.shape
        k, s = int(k), float(s)  # plain Python numbers for the cache key
        prior1 = (s + Y.sum(axis=0)) / (2 * s + n)
        if neighbors is None:
            # the training kNN graph is the one PML3ER and PARTICLE use: shared through the cache
            neighbors = shared_knn_graph(X, k)
        counts = neighbor_counts(neighbors[:, :k], Y)
        # histograms c1[j, r] / c0[j, r]: instances with / without label j and r neighbours with it
        flat = np.arange(q)[None, :] * (k + 1) + counts
        c1 = np.bincount(flat[Y == 1], minlength=q * (k + 1)).reshape(q, k + 1)
        c0 = np.bincount(flat[Y == 0], minlength=q * (k + 1)).reshape(q, k + 1)
        cond1 = (s + c1) / (s * (k + 1) + c1.sum(axis=1, keepdims=True))
        cond0 = (s + c0) / (s * (k + 1) + c0.sum(axis=1, keepdims=True))
        return cls(k, prior1, cond1, cond0, X, Y, query)

    def posteriors(self, X) -> np.ndarray:
        """Posterior probability that each label is relevant (n x l), for checked X."""
        if self.query is None:
            neighbors = kneighbors(X, self.X_train, self.k)
        else:
            neighbors = self.query(X, self.k)
        counts = neighbor_counts(neighbors, self.Y_train)
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
