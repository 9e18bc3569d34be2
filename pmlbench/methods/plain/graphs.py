"""PLAIN's two graphs: the instances' kNN graph and the labels' co-occurrence graph.

Both are fixed for a fit (built once from the training part) and computed in float64 with
NumPy, then rounded to float32, the precision the propagation runs in (the authors' code
builds the instance graph from faiss's float32 inner products and the label graph in float64).

**Instances** (the authors' ``build_graph``): rows scaled to unit length, each linked to its
k most similar other rows by cosine similarity s, with weight ``s**3`` (the monomial kernel
of degree 3); ``W = A + Aᵀ`` and ``Ŵ = D^(-1/2) W D^(-1/2)`` with D the row sums of W (a
row summing to 0 gets 1). The authors' faiss search (a GPU inner-product index) is replaced
by an exact search in float64 (:func:`pmlbench.numerics.neighbors.kneighbors` on the unit
rows): neighbours by increasing exact distance between the unit rows, which is decreasing
similarity (up to the rounding of the unit scaling), ties by the lower index, the same on
every machine. faiss drops
the first result of each row as the row itself, which is another row when rows are
duplicated; here a row is never its own neighbour. A negative similarity would make a
negative weight and could make a row sum negative (its D^(-1/2) undefined): weights are
clipped at 0 (``[s]_+**3``), which changes nothing where the k nearest have s >= 0.

**Labels** (the authors' ``estimating_label_correlation_matrix``): for candidate columns
y_a, y_b, ``R_ab = y_aᵀy_b / (|y_a| + |y_b|)`` off the diagonal (10⁻⁵ where both columns
are empty), 0 on it; ``R̂ = D^(-1/2) R D^(-1/2)``, rows and columns with no weight set to 0
(the code's ``nan_to_num`` of 0/0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from pmlbench.numerics.neighbors import kneighbors

KERNEL_DEGREE = 3  # the monomial kernel's power, s**3 in build_graph
EMPTY_PAIR_WEIGHT = 1e-5  # R_ab of two empty label columns ("avoid divide zero error")


@dataclass
class InstanceGraph:
    """The normalised instance graph Ŵ and what building it decided."""

    normalized: sp.csr_matrix  # n x n float32, D^(-1/2) (A + Aᵀ) D^(-1/2)
    neighbors: np.ndarray  # n x k indices, most similar first
    similarities: np.ndarray  # n x k cosine similarities (float64)
    clipped: int  # neighbour links with a negative similarity (weight clipped to 0)
    isolated: int  # rows whose weights sum to 0 (D set to 1)


def unit_rows(X: np.ndarray) -> np.ndarray:
    """Rows scaled to unit Euclidean length; all-zero rows stay zero (faiss's
    ``normalize_L2``)."""
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    return X / np.where(norms > 0, norms, 1.0)[:, None]


def cosine_neighbors(X: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k most similar other rows by cosine similarity (n x k, most similar first, ties by
    the lower index) and their similarities.

    An exact search by Euclidean distance ranks unit rows as their inner products do
    (``|u − v|² = 2 − 2uᵀv``). All-zero rows (similarity 0 to everything) get a unit-length
    extra coordinate, so that they rank, for every unit row, as a similarity of 0 does; the
    similarities returned are inner products of the unit rows themselves.
    """
    U = unit_rows(np.asarray(X, dtype=np.float64))
    zero = ~np.any(U != 0, axis=1)
    ranked = np.hstack([U, zero[:, None].astype(np.float64)]) if zero.any() else U
    neighbors = kneighbors(ranked, ranked, k, exclude_self=True)
    rows = np.repeat(np.arange(U.shape[0]), k)
    similarities = np.einsum("ij,ij->i", U[rows], U[neighbors.ravel()]).reshape(neighbors.shape)
    return neighbors, similarities


def instance_graph(X: np.ndarray, k: int) -> InstanceGraph:
    """``Ŵ = D^(-1/2) (A + Aᵀ) D^(-1/2)``, A the kNN graph with weights ``[s]_+**3``."""
    n = X.shape[0]
    neighbors, similarities = cosine_neighbors(X, k)
    weights = np.maximum(similarities, 0.0) ** KERNEL_DEGREE
    rows = np.repeat(np.arange(n), k)
    A = sp.csr_matrix((weights.ravel(), (rows, neighbors.ravel())), shape=(n, n))
    W = (A + A.T).tocsr()
    sums = np.asarray(W.sum(axis=1)).ravel()
    isolated = sums == 0
    scale = 1.0 / np.sqrt(np.where(isolated, 1.0, sums))
    normalized = sp.diags(scale) @ W @ sp.diags(scale)
    return InstanceGraph(
        normalized=sp.csr_matrix(normalized, dtype=np.float32),
        neighbors=neighbors,
        similarities=similarities,
        clipped=int((similarities < 0).sum()),
        isolated=int(isolated.sum()),
    )


def label_graph(Y: np.ndarray) -> np.ndarray:
    """``R̂ = D^(-1/2) R D^(-1/2)`` (q x q, float32) from the candidate labels (n x q)."""
    C = np.asarray(Y, dtype=np.float64)
    counts = C.sum(axis=0)
    together = C.T @ C  # co-occurrence counts: whole numbers, exact in any order
    pair_counts = counts[:, None] + counts[None, :]
    R = np.where(pair_counts > 0, together / np.where(pair_counts > 0, pair_counts, 1.0), 0.0)
    R[pair_counts == 0] = EMPTY_PAIR_WEIGHT
    np.fill_diagonal(R, 0.0)
    sums = R.sum(axis=1)
    scale = np.where(sums > 0, 1.0 / np.sqrt(np.where(sums > 0, sums, 1.0)), 0.0)
    return (scale[:, None] * R * scale[None, :]).astype(np.float32)
