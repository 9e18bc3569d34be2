"""PARTICLE-MAP: ML-kNN trained on PARTICLE's credible labels (Fang & Zhang 2019, Sec. 3.2).

The paper's MAP stage reasons "as ML-kNN does" over the credible labels; pmlbench trains
the ``mlknn`` plugin (k = 10, s = 1) with the credible label matrix in place of the
candidates. The authors' released ``PAR_MAP.m`` estimates its likelihoods from the test
fold's ground-truth labels; pmlbench never looks at test labels.
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.base import BaseEstimator

from pmlbench.core.checks import check_features, check_label_matrix
from pmlbench.methods._constraints import NON_NEGATIVE, POSITIVE_INT, check_neighbours
from pmlbench.methods.particle.base import PARTICLE_SEED, ParticleStage1Mixin
from pmlbench.methods.particle.credible import STAGE1_CONSTRAINTS
from pmlbench.numerics.mlknn_model import MLkNNModel


class ParticleMAP(ParticleStage1Mixin, BaseEstimator):
    """PARTICLE-MAP: credible labels by propagation, then ML-kNN on them.

    Args:
        k: neighbours of the propagation graph, an integer >= 1 (paper: 10).
        alpha: propagation rate of Eqs. 3-4, in [0, 1) (paper: 0.95).
        max_iter, tol: propagation stops after max_iter (>= 1) steps or when the spectral
            norm of the change is below tol (> 0) (code: 1000, 1e-5).
        threshold: a candidate is credible when its rescaled confidence (Eq. 5, in [0, 1])
            is >= threshold, in [0, 1] (0.9).
        include_self: the authors' code lists every instance among its own neighbours,
            which makes propagation trivial (see docs/methods/particle.md); off by default.
        zero_weight_rows: an instance whose reconstruction weights are all zero receives
            nothing ("zero", the authors' D^-1 with zero sums replaced by 1) or 1/k from
            each neighbour ("uniform").
        credible: "in_sample" (stage 1 on the training set) or "out_of_fold" (the demos:
            each of n_folds folds scored from the others).
        n_folds, oof_fallback: out-of-fold folds (an integer >= 2) and the rule for an
            instance none of whose candidates passes ("candidate": its best candidate;
            "authors": the demos' set).
        mlknn_k, mlknn_s: ML-kNN's neighbours and smoothing (10, 1), constrained as
            ``mlknn``'s k (an integer >= 1) and s (>= 0).
        random_state: seed of the out-of-fold split.
    """

    default_bipartition = {"rule": "method"}
    parameter_constraints = {
        **STAGE1_CONSTRAINTS,
        "mlknn_k": POSITIVE_INT,
        "mlknn_s": NON_NEGATIVE,
        "random_state": PARTICLE_SEED,
    }

    def __init__(
        self,
        k: int = 10,
        alpha: float = 0.95,
        max_iter: int = 1000,
        tol: float = 1e-5,
        threshold: float = 0.9,
        include_self: bool = False,
        zero_weight_rows: str = "zero",
        credible: str = "in_sample",
        n_folds: int = 5,
        oof_fallback: str = "candidate",
        mlknn_k: int = 10,
        mlknn_s: float = 1.0,
        random_state: int | None = None,
    ):
        self.k = k
        self.alpha = alpha
        self.max_iter = max_iter
        self.tol = tol
        self.threshold = threshold
        self.include_self = include_self
        self.zero_weight_rows = zero_weight_rows
        self.credible = credible
        self.n_folds = n_folds
        self.oof_fallback = oof_fallback
        self.mlknn_k = mlknn_k
        self.mlknn_s = mlknn_s
        self.random_state = random_state

    def fit(self, X, Y) -> ParticleMAP:
        """Credible labels (stage 1), then ML-kNN's priors and likelihoods on them."""
        self._validate_params()
        start = time.perf_counter()
        X, _, credible, info = self._credible(X, Y, self._seed())
        stage1 = time.perf_counter() - start
        self.credible_labels_ = credible
        labels = check_label_matrix(credible, what="candidate labels", n_rows=X.shape[0])
        self.mlknn_ = MLkNNModel.fit(X, labels, self.mlknn_k, self.mlknn_s)
        self.diagnostics_ = {
            **info,
            "stage1_seconds": stage1,
            "stage2_seconds": time.perf_counter() - start - stage1,  # ML-kNN
            "fit_seconds": time.perf_counter() - start,
        }
        # the credible labels (0/1) as confidences per training candidate (pmlbench.plugin)
        self.disambiguation_scores_ = credible.astype(np.float64)
        return self

    def _check_data(self, n: int) -> None:
        super()._check_data(n)
        check_neighbours(self.mlknn_k, n, key="method.mlknn_k")

    def decision_function(self, X) -> np.ndarray:
        """ML-kNN posteriors of the credible-label model (n x l)."""
        return self.mlknn_.posteriors(check_features(X))

    def predict(self, X) -> np.ndarray:
        """Labels whose posterior is at least 0.5."""
        return (self.decision_function(X) >= 0.5).astype(np.uint8)
