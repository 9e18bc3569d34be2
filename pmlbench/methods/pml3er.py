"""PML3ER (Li & Wang, IJCAI 2020): label enrichment, then joint recovery and learning.

Stage 1 (Algorithm 1, pmlbench.numerics.enrichment): kNN graph, NNLS reconstruction weights V
(Eq. 2), propagation ``F = alpha V^T F + (1 - alpha) Y`` with the Eq. 5 normalisation, and the
enriched labels Yhat (Eq. 6). Stage 2 (Algorithm 2) minimises Eq. 9,

    ||Yhat - C B||_F^2 + ||C - X W||_F^2 + lambda1 ||B||_* + lambda2 ||W||_F^2,  0 <= C <= Y,

alternating the C-step (Eq. 11, then clipped into [0, Y]), the B-step (ADMM, Eqs. 13-15,
with singular value thresholding) and the W-step (Eq. 17, factored once per fit). Scores are
``X W``. ``fit_grid`` fits a whole grid on one training set: Stage 1 once per distinct
Stage 1 setting, the Gram matrix of Eq. 17 once, Stage 2 per grid point.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from sklearn.base import BaseEstimator, clone
from threadpoolctl import threadpool_limits

from pmlbench.core.checks import as_dense, check_features, check_label_matrix
from pmlbench.core.parameters import Options, ValidatedParameters
from pmlbench.methods._constraints import (
    BLAS_THREADS,
    FLAG,
    NON_NEGATIVE,
    POSITIVE,
    POSITIVE_INT,
    RATE,
    REAL,
    check_neighbours,
)
from pmlbench.numerics.enrichment import label_enrichment
from pmlbench.numerics.linalg import gram, nuclear_norm, svt
from pmlbench.numerics.ridge_system import SOLVERS, RidgeGram
from pmlbench.numerics.scores import LinearScores

INITS = ("candidates", "enrichment")
# the parameters Stage 1 depends on: grid points that agree on them share one enrichment
STAGE1_PARAMETERS = ("k", "alpha", "propagation_max_iter", "propagation_tol", "propagate_transpose")


_SPARSE_C_DENSITY = 0.25  # below this fraction of non-zeros, products with C go sparse


def _compact(C: np.ndarray):
    """C as CSR when it is sparse enough (C is zero off the candidates) for cheaper products."""
    return sp.csr_matrix(C) if np.count_nonzero(C) < _SPARSE_C_DENSITY * C.size else C


def c_step(Yhat: np.ndarray, B: np.ndarray, XW: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Eq. 11, ``(Yhat Bᵀ + X W)(B Bᵀ + I)^{-1}``, clipped into [0, Y].

    Only the candidate entries survive the clipping, so when candidates are sparse the
    product is evaluated at those entries alone, label by label.
    """
    eye = np.eye(B.shape[0])
    # (B Bᵀ + I) is l x l with eigenvalues >= 1: invert it once
    inverse = scipy.linalg.cho_solve(
        scipy.linalg.cho_factor(B @ B.T + eye, check_finite=False), eye, check_finite=False
    )
    candidates = Y > 0
    if np.count_nonzero(candidates) >= _SPARSE_C_DENSITY * Y.size:
        return np.clip((Yhat @ B.T + XW) @ inverse, 0.0, 1.0) * candidates
    projected = B.T @ inverse
    C = np.zeros(Y.shape)
    for j in np.flatnonzero(candidates.any(axis=0)):
        rows = np.flatnonzero(candidates[:, j])
        C[rows, j] = Yhat[rows] @ projected[:, j] + XW[rows] @ inverse[:, j]
    return np.clip(C, 0.0, 1.0)


def b_step(
    C: np.ndarray,
    Yhat: np.ndarray,
    B: np.ndarray,
    Bhat: np.ndarray,
    Theta: np.ndarray,
    lambda1: float,
    tau: float,
    n_iter: int,
    *,
    return_norm: bool = False,
):
    """ADMM for ``min_B ||Yhat - C B||² + lambda1 ||B||_*`` (Eqs. 13-15).

    Bhat carries the quadratic term, B the nuclear norm, Theta the multiplier of B = Bhat.
    Returns (B, Bhat, Theta), and the nuclear norm of B with ``return_norm``.
    """
    Cc = _compact(C)
    factor = scipy.linalg.cho_factor(
        2.0 * gram(Cc) + tau * np.eye(C.shape[1]), lower=True, check_finite=False
    )
    CtY2 = 2.0 * as_dense(Cc.T @ Yhat)
    nuclear = None
    for _ in range(n_iter):
        Bhat = scipy.linalg.cho_solve(factor, CtY2 + tau * B + Theta, check_finite=False)
        B, nuclear = svt(Bhat - Theta / tau, lambda1 / tau, return_norm=True)
        Theta = Theta + tau * (B - Bhat)
    if not return_norm:
        return B, Bhat, Theta
    return B, Bhat, Theta, (nuclear_norm(B) if nuclear is None else nuclear)


def objective(
    Yhat, C, B, XW, W, lambda1: float, lambda2: float, nuclear: float | None = None
) -> float:
    """Eq. 9 at (C, B, W), with ``XW = X @ W`` (and optionally ``||B||_*``) precomputed."""
    if nuclear is None:
        nuclear = nuclear_norm(B)
    return float(
        np.sum((Yhat - as_dense(_compact(C) @ B)) ** 2)
        + np.sum((C - XW) ** 2)
        + lambda1 * nuclear
        + lambda2 * np.sum(W**2)
    )


class PML3ER(LinearScores, ValidatedParameters, BaseEstimator):
    """PML3ER: label enrichment (Stage 1) and joint confidence/predictor learning (Stage 2).

    Args:
        k: neighbours of the kNN graph, an integer >= 1 (paper: 10).
        alpha: propagation rate of Eq. 4, in [0, 1) (paper: 0.05 in the text, 0.5 in
            Algorithm 3; the default follows the experiment in docs/methods/pml3er.md).
        lambda1: nuclear-norm weight on B in Eq. 9, >= 0 (paper: 1).
        lambda2: ridge weight on W in Eq. 9, > 0 (paper: tuned over {10, 100}; tuned here over
            the wider :attr:`default_tuning_grid`, docs/methods/pml3er.md).
        tau: ADMM penalty of Eqs. 13-15, > 0 (paper: 1).
        max_iter: outer alternations, an integer >= 1 (paper: 5).
        admm_iter: ADMM iterations per B-step, an integer >= 1 (paper: 5).
        tol: stop the outer loop early when the Eq. 9 objective changes by less than
            ``tol`` (>= 0) relative to its previous value.
        propagation_max_iter, propagation_tol: stopping rule of Stage 1 (max-abs change;
            an integer >= 1 and a number >= 0).
        propagate_transpose: propagate with Vᵀ as Eq. 4 is written (True) or with V.
        init: initial C, "candidates" (C = Y) or "enrichment" (C = the Stage 1 confidences on
            the candidates); B = Bhat = I and Theta = 0 in both; W from the W-step on C.
        w_solver: "cholesky" (factor XᵀX + lambda2 I once per fit) or "eigh" (one
            eigendecomposition of XᵀX, shared by every lambda2 of a ``fit_grid``).
        threshold, allow_empty: the rule of ``predict``: score >= threshold, and the top label
            for an instance with none unless allow_empty.
        blas_threads: BLAS threads during fit (None: the library default). Most of the work
            is on l x l matrices, where threads only add overhead, and a shared machine makes
            multi-threaded BLAS many times slower; 1 is the fastest setting measured.
    """

    # the paper's {10, 100} widened by a decade each way (sources: docs/methods/pml3er.md)
    default_tuning_grid = {"lambda2": [1, 10, 100, 1000]}
    default_bipartition = {"rule": "threshold", "threshold": 0.5, "allow_empty": False}
    parameter_constraints = {
        "k": POSITIVE_INT,
        "alpha": RATE,
        "lambda1": NON_NEGATIVE,
        "lambda2": POSITIVE,
        "tau": POSITIVE,
        "max_iter": POSITIVE_INT,
        "admm_iter": POSITIVE_INT,
        "tol": NON_NEGATIVE,
        "propagation_max_iter": POSITIVE_INT,
        "propagation_tol": NON_NEGATIVE,
        "propagate_transpose": FLAG,
        "init": [Options(INITS)],
        "w_solver": [Options(SOLVERS)],
        "threshold": REAL,
        "allow_empty": FLAG,
        "blas_threads": BLAS_THREADS,
    }

    def __init__(
        self,
        k: int = 10,
        alpha: float = 0.5,
        lambda1: float = 1.0,
        lambda2: float = 10.0,
        tau: float = 1.0,
        max_iter: int = 5,
        admm_iter: int = 5,
        tol: float = 1e-6,
        propagation_max_iter: int = 1000,
        propagation_tol: float = 1e-6,
        propagate_transpose: bool = True,
        init: str = "candidates",
        w_solver: str = "cholesky",
        threshold: float = 0.5,
        allow_empty: bool = False,
        blas_threads: int | None = 1,
    ):
        self.k = k
        self.alpha = alpha
        self.lambda1 = lambda1
        self.lambda2 = lambda2
        self.tau = tau
        self.max_iter = max_iter
        self.admm_iter = admm_iter
        self.tol = tol
        self.propagation_max_iter = propagation_max_iter
        self.propagation_tol = propagation_tol
        self.propagate_transpose = propagate_transpose
        self.init = init
        self.w_solver = w_solver
        self.threshold = threshold
        self.allow_empty = allow_empty
        self.blas_threads = blas_threads

    def fit(self, X, Y) -> PML3ER:
        """Run Stage 1 and Stage 2 on training features X and candidate labels Y."""
        self._validate_params()
        X, Y = _checked(X, Y)
        check_neighbours(self.k, X.shape[0])
        with threadpool_limits(self.blas_threads, user_api="blas"):
            self._fit_stage2(X, Y, Enrichment.compute(X, Y, self), None)
        return self

    def fit_grid(self, X, Y, points: Sequence[Mapping[str, Any]]) -> Iterator[tuple[int, PML3ER]]:
        """Fit every grid point on (X, Y), sharing the work that does not depend on it.

        Stage 1 is computed once for all points that agree on :data:`STAGE1_PARAMETERS`
        (usually all of them), the Gram matrix of Eq. 17 once (and its eigendecomposition
        once, for ``w_solver="eigh"``); Stage 2 runs per point, with ``XᵀX + lambda2 I``
        factored as ``fit`` factors it. Each point is a fresh estimator equal to
        ``clone(self).set_params(**point).fit(X, Y)`` bit for bit (pmlbench.plugin's hook).
        Its diagnostics count the shared work's seconds on the first point that used it and
        0 on the others (``stage1_shared``, ``gram_shared``).
        """
        self._validate_params()
        models = [clone(self).set_params(**point) for point in points]
        for model in models:
            model._validate_params()
        X, Y = _checked(X, Y)
        for model in models:  # every k against the training size before any work
            check_neighbours(model.k, X.shape[0])
        enrichments: dict[tuple, Enrichment] = {}
        shared: RidgeGram | None = None
        for index in range(len(models)):
            # the caller scores each point before asking for the next: hold no fitted model
            model, models[index] = models[index], None
            key = tuple(model.get_params()[name] for name in STAGE1_PARAMETERS)
            with threadpool_limits(model.blas_threads, user_api="blas"):
                if key in enrichments:
                    stage1 = enrichments[key].reused()
                else:
                    stage1 = enrichments[key] = Enrichment.compute(X, Y, model)
                shared = model._fit_stage2(X, Y, stage1, shared)
            yield index, model

    def _fit_stage2(self, X, Y, stage1: Enrichment, shared: RidgeGram | None) -> RidgeGram:
        """Stage 2 on Stage 1's enrichment: sets the fitted attributes and the diagnostics.

        ``shared`` is the Gram matrix of X when another grid point computed it (None: compute
        it here); returns the one used.
        """
        start = time.perf_counter()
        shared_gram = shared is not None
        if shared is None:
            shared = RidgeGram(X)
        W, C, B, history = self._stage2(X, Y.astype(np.float64), stage1.Yhat, shared)
        stage2_seconds = time.perf_counter() - start
        self.W_, self.C_, self.B_ = W, C, B
        self.n_features_in_ = X.shape[1]
        # timings as every method reports them: <part>_seconds, fit_seconds the whole fit
        self.diagnostics_ = {
            "objective": history,
            "outer_iterations": len(history) - 1,
            "propagation_iterations": stage1.info["propagation_iterations"],
            "rank_B": int(np.linalg.matrix_rank(B)) if B.size else 0,
            **stage1.step_seconds,
            "stage1_seconds": stage1.seconds,
            "stage2_seconds": stage2_seconds,
            "fit_seconds": stage1.seconds + stage2_seconds,
            "stage1_shared": stage1.shared,
            "gram_shared": shared_gram,
            "w_form": "dual" if shared.dual else "primal",
        }
        # the enriched labels (Eq. 6) as confidences per training candidate (pmlbench.plugin)
        self.disambiguation_scores_ = np.asarray(as_dense(stage1.Yhat), dtype=np.float64)
        return shared

    def _stage2(self, X, Y: np.ndarray, Yhat: np.ndarray, shared: RidgeGram):
        """Algorithm 2: alternate the C-, B- and W-steps; objective history of Eq. 9."""
        lambda1, lambda2, tau = float(self.lambda1), float(self.lambda2), float(self.tau)
        system = shared.system(lambda2, self.w_solver)
        n_labels = Y.shape[1]
        C = Y.copy() if self.init == "candidates" else np.clip(Yhat, 0.0, 1.0) * Y
        B, Bhat, Theta = np.eye(n_labels), np.eye(n_labels), np.zeros((n_labels, n_labels))
        W = system.solve(C)
        XW = np.asarray(X @ W)
        history = [objective(Yhat, C, B, XW, W, lambda1, lambda2, nuclear=float(n_labels))]
        for _ in range(int(self.max_iter)):
            C = c_step(Yhat, B, XW, Y)
            B, Bhat, Theta, nuclear = b_step(
                C, Yhat, B, Bhat, Theta, lambda1, tau, int(self.admm_iter), return_norm=True
            )
            W = system.solve(C)
            XW = np.asarray(X @ W)
            history.append(objective(Yhat, C, B, XW, W, lambda1, lambda2, nuclear=nuclear))
            if abs(history[-2] - history[-1]) <= self.tol * max(abs(history[-2]), 1e-12):
                break
        return W, C, B, history


def _checked(X, Y):
    X = check_features(X)
    return X, check_label_matrix(Y, what="candidate labels", n_rows=X.shape[0])


@dataclass(frozen=True)
class Enrichment:
    """Stage 1 (Algorithm 1) of one fit: the enriched labels Yhat (Eq. 6) and its timings.

    ``shared``: computed for another grid point and reused, its seconds counted there.
    """

    Yhat: np.ndarray
    info: dict[str, Any]
    seconds: float
    step_seconds: dict[str, float]
    shared: bool = False

    @classmethod
    def compute(cls, X, Y: np.ndarray, model: PML3ER) -> Enrichment:
        """Stage 1 with the model's :data:`STAGE1_PARAMETERS`."""
        start = time.perf_counter()
        Yhat, info = label_enrichment(
            X,
            Y,
            k=int(model.k),
            alpha=float(model.alpha),
            max_iter=int(model.propagation_max_iter),
            tol=float(model.propagation_tol),
            transpose=bool(model.propagate_transpose),
        )
        steps = {f"{name}_seconds": value for name, value in info["seconds"].items()}
        return cls(Yhat, info, time.perf_counter() - start, steps)

    def reused(self) -> Enrichment:
        """The same enrichment for another grid point, its work counted as 0 seconds."""
        return replace(
            self, seconds=0.0, step_seconds=dict.fromkeys(self.step_seconds, 0.0), shared=True
        )
