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
``pmlbench.numerics.enrichment``; only PARTICLE-specific steps live here. Steps 1-4 give
graded confidences (:meth:`Stage1Memo.confidence`), step 5 thresholds them
(:func:`select_credible`); the memo keeps the work of steps 1-4 of one training set for
every grid point that shares it (the threshold never enters it).
"""

from __future__ import annotations

import copy
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


def propagation_matrix(
    X, params: Stage1Params, neighbors: np.ndarray | None = None
) -> tuple[sp.csr_matrix, int]:
    """H = D^-1 W over the kNN graph (Eqs. 1-2) and the number of all-zero weight rows.

    The authors replace a zero row sum of W by 1, so such an instance receives nothing from
    its neighbours (``zero_weight_rows="zero"``); ``"uniform"`` gives it weight 1/k on each
    neighbour instead. The shared ``nnls_weights`` has its own fallback for these rows, so
    they are set here explicitly in both cases. ``neighbors``: the graph (n x k, self
    excluded unless ``include_self``), when the caller has it already.
    """
    if neighbors is None:
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


def label_confidence(
    X, S: np.ndarray, params: Stage1Params, H: tuple[sp.csr_matrix, int] | None = None
) -> tuple[np.ndarray, dict]:
    """Rescaled label confidences F-hat in [0, 1] (n x l) and propagation diagnostics.

    ``H``: :func:`propagation_matrix`'s result for ``X`` and ``params``, when the caller has
    it already (it does not depend on ``alpha``, ``max_iter``, ``tol`` or ``threshold``).
    """
    H, n_zero = propagation_matrix(X, params) if H is None else H
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


def out_of_fold_confidence(
    X, S: np.ndarray, params: Stage1Params, random_state: int | None
) -> tuple[np.ndarray, dict]:
    """Graded confidences as the authors' demos score their training labels: out of fold.

    For every fold, stage 1 runs on the remaining folds; a held-out instance's score is the
    distance-weighted sum of the confidences of its k nearest instances there, min-max
    normalised (``PAR_predict.m``). Returns the n x l scores of every instance, each from the
    fold that held it out.
    """
    n = S.shape[0]
    scores = np.zeros(S.shape)
    folds = KFold(int(params.n_folds), shuffle=True, random_state=random_state)
    iterations = []
    for rest, held in folds.split(np.zeros((n, 1))):
        F_rest, info = label_confidence(X[rest], S[rest], params)
        iterations.append(info["n_iter"])
        scores[held] = _neighbor_scores(X[held], X[rest], F_rest, int(params.k))
    return scores, {"n_iter": iterations}


def out_of_fold_credible(
    g: np.ndarray, S: np.ndarray, threshold: float, fallback: str
) -> tuple[np.ndarray, int]:
    """Credible labels from out-of-fold scores ``g`` and the number of fallback instances.

    A candidate is credible when its score is at least ``threshold``. When no candidate of an
    instance (with candidates) passes, ``fallback="candidate"`` keeps its best-scored
    candidate, ``"authors"`` keeps the thresholded set as the demos do (it may then hold
    non-candidates).
    """
    above = g >= threshold
    chosen = above & (S == 1)
    empty = ~chosen.any(axis=1) & (S.sum(axis=1) > 0)
    if empty.any():
        if fallback == "authors":
            chosen[empty] = above[empty]
        else:
            masked = np.where(S[empty] == 1, g[empty], -np.inf)
            chosen[np.flatnonzero(empty), np.argmax(masked, axis=1)] = True
    return chosen.astype(np.uint8), int(empty.sum())


class Stage1Memo:
    """The stage-1 work of one training set (X, S), kept for every fit that can reuse it.

    A fit asks for graphs and confidences here; the grid fits of ``fit_grid`` share one memo,
    so work that a grid point's parameters do not change is done once:

    - kNN graphs, searched once at the largest k of the grid (``widths``) and sliced: the
      first k columns of a search at k' >= k are the search at k, because neighbours come in
      the exact (distance, training index) order (pmlbench.numerics.neighbors);
    - propagation matrices H (Eqs. 1-2), by graph and ``zero_weight_rows``;
    - graded confidences (Eqs. 3-5, or out of fold), by every stage-1 parameter except the
      threshold and the out-of-fold fallback, which only act on them afterwards.
    """

    def __init__(self, X, S: np.ndarray, widths: dict[bool, int] | None = None):
        """``widths``: the largest k any fit will ask for, by ``exclude_self``."""
        self.X, self.S = X, S
        self._widths = dict(widths or {})
        self._graphs: dict[bool, np.ndarray] = {}
        self._propagation: dict[tuple, tuple[sp.csr_matrix, int]] = {}
        self._confidence: dict[tuple, tuple[np.ndarray, dict]] = {}

    def graph(self, k: int, exclude_self: bool = True) -> np.ndarray:
        """The training kNN graph (n x k), nearest first."""
        widest = self._graphs.get(exclude_self)
        if widest is None or widest.shape[1] < k:
            width = max(int(k), self._widths.get(exclude_self, 0))
            # the graph PML3ER and ML-kNN use too: shared through the cache
            widest = shared_knn_graph(self.X, width, exclude_self=exclude_self)
            self._graphs[exclude_self] = widest
        return np.ascontiguousarray(widest[:, :k])

    def _propagation_matrix(self, params: Stage1Params) -> tuple[sp.csr_matrix, int]:
        key = (params.k, params.include_self, params.zero_weight_rows)
        if key not in self._propagation:
            neighbors = self.graph(params.k, exclude_self=not params.include_self)
            self._propagation[key] = propagation_matrix(self.X, params, neighbors)
        return self._propagation[key]

    def confidence(
        self, params: Stage1Params, random_state: int | None = None
    ) -> tuple[np.ndarray, dict]:
        """The graded confidences (n x l, in [0, 1]) that credible labels threshold, with
        diagnostics (propagation steps, all-zero weight rows); shared: do not modify.

        ``in_sample``: F-hat of Eq. 5; ``out_of_fold``: each instance's neighbour score from
        the fold that held it out.
        """
        shared = dataclasses.replace(params, threshold=0.0, oof_fallback="candidate")
        out_of_fold = params.credible == "out_of_fold"
        key = (shared, random_state if out_of_fold else None)
        if key not in self._confidence:
            if out_of_fold:
                result = out_of_fold_confidence(self.X, self.S, params, random_state)
            else:
                H = self._propagation_matrix(params)
                result = label_confidence(self.X, self.S, params, H)
            self._confidence[key] = result
        return self._confidence[key]


def select_credible(
    confidence: np.ndarray, S: np.ndarray, params: Stage1Params
) -> tuple[np.ndarray, dict]:
    """Credible labels (0/1, n x l) from graded confidences, with diagnostics.

    ``in_sample``: the candidates whose confidence is at least the threshold; ``out_of_fold``:
    the same, with ``oof_fallback`` for an instance none of whose candidates passes.
    """
    threshold = float(params.threshold)
    if params.credible != "out_of_fold":
        credible = threshold_credible(confidence, S, threshold)
        info: dict[str, float] = {}
    else:
        credible, n_fallback = out_of_fold_credible(confidence, S, threshold, params.oof_fallback)
        info = {"n_empty_fallback": float(n_fallback)}
    n_cand = int(S.sum())
    info["credible_per_instance"] = float(credible.sum(axis=1).mean()) if S.shape[0] else 0.0
    info["credible_share_of_candidates"] = float(credible.sum() / n_cand) if n_cand else 0.0
    return credible, info


def elicit_credible(
    X,
    S: np.ndarray,
    params: Stage1Params,
    random_state: int | None = None,
    memo: Stage1Memo | None = None,
) -> tuple[np.ndarray, np.ndarray, dict]:
    """Stage 1: credible labels (0/1), the graded confidences they threshold (a new array)
    and diagnostics. ``memo``: work shared with other fits on the same (X, S)."""
    params.check()
    memo = Stage1Memo(X, S) if memo is None else memo
    confidence, info = memo.confidence(params, random_state)
    credible, selection = select_credible(confidence, S, params)
    return credible, confidence.copy(), {**copy.deepcopy(info), **selection}


def credible_labels(
    X, S: np.ndarray, params: Stage1Params, random_state: int | None = None
) -> tuple[np.ndarray, dict]:
    """Credible label matrix (0/1, n x l) by the configured mode, with diagnostics."""
    credible, _, info = elicit_credible(X, S, params, random_state)
    return credible, info
