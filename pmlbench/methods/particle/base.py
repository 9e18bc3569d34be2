"""What the two PARTICLE estimators share: the stage-1 parameters and the seed."""

from __future__ import annotations

import numpy as np
from sklearn.utils import check_random_state

from pmlbench.core.checks import check_features, check_label_matrix
from pmlbench.methods.particle.credible import Stage1Params, credible_labels


class ParticleStage1Mixin:
    """Builds the credible labels of a training set from the estimator's parameters."""

    def _stage1_params(self) -> Stage1Params:
        return Stage1Params(
            k=int(self.k),
            alpha=float(self.alpha),
            max_iter=int(self.max_iter),
            tol=float(self.tol),
            threshold=float(self.threshold),
            include_self=bool(self.include_self),
            zero_weight_rows=self.zero_weight_rows,
            credible=self.credible,
            n_folds=int(self.n_folds),
            oof_fallback=self.oof_fallback,
        )

    def _seed(self) -> int:
        return int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))

    def _credible(self, X, Y, seed: int):
        """Validated X, candidate matrix S and credible labels with stage-1 diagnostics."""
        X = check_features(X)
        S = check_label_matrix(Y, what="candidate labels", n_rows=X.shape[0])
        params = self._stage1_params()
        credible, info = credible_labels(X, S, params, random_state=seed)
        return X, S, credible, info
