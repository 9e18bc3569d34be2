"""k-means whose assignments do not depend on the BLAS kernel (used by PML-LD's groups).

Lloyd's algorithm (Lloyd 1982) from k-means++ seeding (Arthur & Vassilvitskii 2007), one run.
scikit-learn's ``KMeans`` assigns a point that is equidistant from two centres (frequent with
binary features and duplicate rows) by the last bits of a BLAS product, so its groups changed
with the CPU. Here every decision has a rule:

- seeding: the first centre is a uniformly drawn row; each next one is drawn with probability
  proportional to the squared distance to the nearest chosen centre (no greedy trials),
  distances computed without BLAS; when every row coincides with a centre, seeding stops
  with fewer centres;
- assignment: each row joins the nearest centre; centres within a rounding margin of the
  nearest are measured again without BLAS and equal distances go to the lower centre index;
- update: a centre is the mean of its rows (a fixed summation order); a centre that loses
  all its rows is dropped (MATLAB's ``'EmptyAction', 'drop'``);
- stop when no assignment changes, or after ``max_iter`` rounds.
"""

from __future__ import annotations

import numpy as np

from pmlbench.numerics.exact import squared_distances
from pmlbench.numerics.neighbors import kneighbors


def _nearest_centres(X: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """Index of the nearest centre of every row, ties to the lower index: the nearest
    neighbour among the centres, by :func:`pmlbench.numerics.neighbors.kneighbors`' rule."""
    return kneighbors(X, centres, 1)[:, 0]


def _seed(X: np.ndarray, n_clusters: int, rng: np.random.Generator) -> np.ndarray:
    n = X.shape[0]
    chosen = [int(rng.integers(n))]
    closest = squared_distances(X, X, np.arange(n), np.full(n, chosen[0]))
    while len(chosen) < n_clusters:
        total = float(closest.sum())
        if not total > 0:
            break  # every row coincides with a chosen centre
        cumulative = np.cumsum(closest)
        pick = int(np.searchsorted(cumulative, rng.random() * total, side="right"))
        pick = min(pick, n - 1)  # closest[pick] > 0: a row already chosen has weight 0
        chosen.append(pick)
        new = squared_distances(X, X, np.arange(n), np.full(n, pick))
        closest = np.minimum(closest, new)
    return X[chosen].copy()


def kmeans_labels(X: np.ndarray, n_clusters: int, seed: int, max_iter: int = 100) -> np.ndarray:
    """Group labels 0..g-1 of the rows of dense ``X`` (g <= ``n_clusters``), see module doc."""
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    if n_clusters <= 1 or n <= 1:
        return np.zeros(n, dtype=np.int64)
    rng = np.random.default_rng(seed)
    centres = _seed(X, min(n_clusters, n), rng)
    labels = _nearest_centres(X, centres)
    for _ in range(max_iter):
        used = np.unique(labels)
        centres = np.stack([X[labels == c].mean(axis=0) for c in used])
        relabelled = _nearest_centres(X, centres)
        if np.array_equal(used[relabelled], labels):
            break
        labels = used[relabelled]
    _, compact = np.unique(labels, return_inverse=True)
    return compact.astype(np.int64)
