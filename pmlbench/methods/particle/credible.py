"""PARTICLE stage 1: credible labels by label propagation (Fang & Zhang, AAAI 2019).

Section 3.1 of the paper (Eqs. 1-5) in the form of the authors' ``PAR_train.m``:

1. kNN graph over the training instances (k = 10, Euclidean, self excluded);
2. non-negative least-squares reconstruction weights W, row-normalised: H = D^-1 W (Eq. 1-2);
3. F(0) = S, then F(t) = alpha H F(t-1) + (1 - alpha) S, non-candidates zeroed and rows
   normalised to sum 1 after every step, until the spectral norm of the change is below
   ``tol`` (Eq. 3-4);
4. class-mass rescaling of every label column, then per-instance min-max (Eq. 5);
5. credible labels: candidates whose rescaled confidence is at least the threshold.

The graph, the weights and the propagation loop are the shared components of
``pmlbench.numerics.enrichment``; only PARTICLE-specific steps live here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.model_selection import KFold

from pmlbench.core.parameters import Constraint, Interval, Options, validate_parameters
from pmlbench.methods._constraints import FLAG, POSITIVE, POSITIVE_INT, RATE
from pmlbench.numerics.enrichment import particle_normalize, propagate, shared_nnls_weights
from pmlbench.numerics.neighbors import kneighbors, shared_knn_graph

ZERO_WEIGHT_ROWS = ("zero", "uniform")
CREDIBLE_MODES = ("in_sample", "out_of_fold")
OOF_FALLBACKS = ("candidate", "authors")

# What each stage-1 parameter may hold; both PARTICLE estimators declare these.
STAGE1_CONSTRAINTS: dict[str, list[Constraint]] = {
    "k": POSITIVE_INT,
    "alpha": RATE,  # Eqs. 3-4: F(t) = alpha H F(t-1) + (1 - alpha) S converges for alpha < 1
    "max_iter": POSITIVE_INT,
    "tol": POSITIVE,
    "threshold": [Interval(float, 0, 1)],  # rescaled confidences (Eq. 5) lie in [0, 1]
    "include_self": FLAG,
    "zero_weight_rows": [Options(ZERO_WEIGHT_ROWS)],
    "credible": [Options(CREDIBLE_MODES)],
    "n_folds": [Interval(int, 2, None)],
    "oof_fallback": [Options(OOF_FALLBACKS)],
}


@dataclass(frozen=True)
class Stage1Params:
    """The hyper-parameters of PARTICLE's first stage (defaults: the authors' demos)."""

    k: int = 10
    alpha: float = 0.95
    max_iter: int = 1000
    tol: float = 1e-5
    threshold: float = 0.9
    include_self: bool = False
    zero_weight_rows: str = "zero"
    credible: str = "in_sample"
    n_folds: int = 5
    oof_fallback: str = "candidate"

    def check(self) -> None:
        """Refuse values outside :data:`STAGE1_CONSTRAINTS` with a one-line message."""
        validate_parameters(dataclasses.asdict(self), STAGE1_CONSTRAINTS)


def _rowwise_dots(X, neighbors: np.ndarray) -> np.ndarray:
    """x_i . x_a for every instance i and each of its neighbours a (n x k)."""
    if sp.issparse(X):
        return np.column_stack(
            [
                np.asarray(X.multiply(X[neighbors[:, a]]).sum(axis=1)).ravel()
                for a in range(neighbors.shape[1])
            ]
        )
    return np.einsum("id,ikd->ik", X, X[neighbors])


def zero_weight_mask(X, neighbors: np.ndarray) -> np.ndarray:
    """Instances whose NNLS reconstruction weights are all zero.

    By the KKT conditions of min_{w>=0} ||x_i - A w||^2, w = 0 is the optimum exactly when
    A^T x_i <= 0, i.e. no neighbour has a positive inner product with x_i (for non-negative
    features: no shared feature). Deciding this from inner products rather than from solver
    output avoids a tolerance.
    """
    return np.all(_rowwise_dots(X, neighbors) <= 0, axis=1)


def propagation_matrix(X, params: Stage1Params) -> tuple[sp.csr_matrix, int]:
    """H = D^-1 W over the kNN graph (Eqs. 1-2) and the number of all-zero weight rows.

    The authors replace a zero row sum of W by 1, so such an instance receives nothing from
    its neighbours (``zero_weight_rows="zero"``); ``"uniform"`` gives it weight 1/k on each
    neighbour instead. The shared ``nnls_weights`` has its own fallback for these rows, so
    they are set here explicitly in both cases.
    """
    # the graph and weights PML3ER and ML-kNN use too: shared through the cache
    neighbors = shared_knn_graph(X, params.k, exclude_self=not params.include_self)
    H = sp.csr_matrix(shared_nnls_weights(X, neighbors))
    zero = zero_weight_mask(X, neighbors)
    if zero.any():
        H = sp.csr_matrix(sp.diags((~zero).astype(np.float64)) @ H)
        if params.zero_weight_rows == "uniform":
            rows = np.flatnonzero(zero)
            k = neighbors.shape[1]
            U = sp.csr_matrix(
                (np.full(rows.size * k, 1.0 / k), (np.repeat(rows, k), neighbors[rows].ravel())),
                shape=H.shape,
            )
            H = sp.csr_matrix(H + U)
    return H, int(zero.sum())


def rescale_class_mass(F: np.ndarray, S: np.ndarray) -> np.ndarray:
    """Scale each label column to the candidate mass of that label (Eq. 5, first part)."""
    mass = F.sum(axis=0)
    factor = np.divide(S.sum(axis=0), mass, out=np.zeros_like(mass), where=mass > 0)
    return F * factor[None, :]


def minmax_rows(F: np.ndarray, S: np.ndarray) -> np.ndarray:
    """Per-instance min-max over all labels (Eq. 5, second part).

    A row with zero range (every label a candidate with the same confidence, or no
    candidate at all) becomes its candidate indicator: all its candidates are equally
    credible.
    """
    low = F.min(axis=1, keepdims=True)
    span = F.max(axis=1, keepdims=True) - low
    flat = span[:, 0] <= 0
    out = np.divide(F - low, span, out=np.zeros_like(F), where=span > 0)
    out[flat] = S[flat]
    return out


def label_confidence(X, S: np.ndarray, params: Stage1Params) -> tuple[np.ndarray, dict]:
    """Rescaled label confidences F-hat in [0, 1] (n x l) and propagation diagnostics."""
    H, n_zero = propagation_matrix(X, params)
    Sf = S.astype(np.float64)
    F, n_iter = propagate(
        H,
        Sf,
        float(params.alpha),
        particle_normalize,
        max_iter=int(params.max_iter),
        tol=float(params.tol),
        stop_norm="spectral",
    )
    F_hat = minmax_rows(rescale_class_mass(np.asarray(F), Sf), Sf)
    return F_hat, {"n_iter": int(n_iter), "n_zero_weight_rows": n_zero}


def threshold_credible(F_hat: np.ndarray, S: np.ndarray, threshold: float) -> np.ndarray:
    """Credible labels: candidates whose confidence is at least ``threshold`` (0/1, n x l)."""
    return ((F_hat >= threshold) & (S == 1)).astype(np.uint8)


def _neighbor_scores(X_query, X_ref, F_ref: np.ndarray, k: int) -> np.ndarray:
    """The demos' ``PAR_predict``: sum_a (1 - d_a / sum_b d_b) F_a over the k nearest, min-max."""
    neighbors, dist = kneighbors(X_query, X_ref, k, return_distance=True)
    total = dist.sum(axis=1, keepdims=True)
    weight = 1.0 - np.divide(dist, total, out=np.zeros_like(dist), where=total > 0)
    g = np.einsum("ik,ikl->il", weight, F_ref[neighbors])
    low = g.min(axis=1, keepdims=True)
    span = g.max(axis=1, keepdims=True) - low
    return np.divide(g - low, span, out=np.ones_like(g), where=span > 0)


def out_of_fold_credible(
    X, S: np.ndarray, params: Stage1Params, random_state: int | None
) -> tuple[np.ndarray, dict]:
    """Credible labels as the authors' demos make them: each fold scored by the others.

    For every fold, stage 1 runs on the remaining folds; a held-out instance's score is the
    distance-weighted sum of the confidences of its k nearest instances there, min-max
    normalised and thresholded, then intersected with its candidates. When the intersection
    is empty, ``oof_fallback="candidate"`` keeps the best-scored candidate, ``"authors"``
    keeps the thresholded set as the demos do (it may then hold non-candidates).
    """
    n = S.shape[0]
    credible = np.zeros_like(S, dtype=np.uint8)
    folds = KFold(int(params.n_folds), shuffle=True, random_state=random_state)
    iterations, n_fallback = [], 0
    for rest, held in folds.split(np.zeros((n, 1))):
        F_rest, info = label_confidence(X[rest], S[rest], params)
        iterations.append(info["n_iter"])
        g = _neighbor_scores(X[held], X[rest], F_rest, int(params.k))
        above = g >= params.threshold
        chosen = above & (S[held] == 1)
        empty = ~chosen.any(axis=1) & (S[held].sum(axis=1) > 0)
        if empty.any():
            n_fallback += int(empty.sum())
            if params.oof_fallback == "authors":
                chosen[empty] = above[empty]
            else:
                masked = np.where(S[held][empty] == 1, g[empty], -np.inf)
                chosen[np.flatnonzero(empty), np.argmax(masked, axis=1)] = True
        credible[held] = chosen
    return credible, {"n_iter": iterations, "n_empty_fallback": n_fallback}


def credible_labels(
    X, S: np.ndarray, params: Stage1Params, random_state: int | None = None
) -> tuple[np.ndarray, dict]:
    """Credible label matrix (0/1, n x l) by the configured mode, with diagnostics."""
    params.check()
    if params.credible == "out_of_fold":
        credible, info = out_of_fold_credible(X, S, params, random_state)
    else:
        F_hat, info = label_confidence(X, S, params)
        credible = threshold_credible(F_hat, S, float(params.threshold))
    n_cand = int(S.sum())
    info["credible_per_instance"] = float(credible.sum(axis=1).mean()) if S.shape[0] else 0.0
    info["credible_share_of_candidates"] = float(credible.sum() / n_cand) if n_cand else 0.0
    return credible, info
