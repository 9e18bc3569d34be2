"""What the two PARTICLE estimators share: the stage-1 parameters, their checks and the seed."""

from __future__ import annotations

import math

import numpy as np
from sklearn.utils import check_random_state

from pmlbench.core.checks import check_features, check_label_matrix
from pmlbench.core.parameters import Constraint, Type, ValidatedParameters
from pmlbench.methods._constraints import SEED, check_folds, check_neighbours
from pmlbench.methods.particle.credible import Stage1Params, credible_labels

# sklearn's check_random_state also takes a RandomState (library use; a config holds an int)
PARTICLE_SEED: list[Constraint] = [*SEED, Type(np.random.RandomState)]


class ParticleStage1Mixin(ValidatedParameters):
    """Builds the credible labels of a training set from the estimator's parameters."""

    # set by the estimators' constructors
    k: int
    alpha: float
    max_iter: int
    tol: float
    threshold: float
    include_self: bool
    zero_weight_rows: str
    credible: str
    n_folds: int
    oof_fallback: str
    random_state: int | np.random.RandomState | None

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

    def _check_data(self, n: int) -> None:
        """The checks of the stage-1 parameters that need the number of training instances."""
        exclude_self = not self.include_self
        if self.credible != "out_of_fold":
            check_neighbours(self.k, n, exclude_self=exclude_self)
            return
        check_folds(self.n_folds, n)
        # KFold's largest held-out fold has ceil(n / n_folds) instances: stage 1 then runs on
        # the rest, and the held-out instances look for their k neighbours there too
        rest = n - math.ceil(n / self.n_folds)
        check_neighbours(
            self.k,
            rest,
            exclude_self=exclude_self,
            data=f"the smallest out-of-fold training part ({self.n_folds}-fold split)",
        )

    def _credible(self, X, Y, seed: int):
        """Validated X, candidate matrix S and credible labels with stage-1 diagnostics."""
        X = check_features(X)
        S = check_label_matrix(Y, what="candidate labels", n_rows=X.shape[0])
        self._check_data(X.shape[0])
        params = self._stage1_params()
        credible, info = credible_labels(X, S, params, random_state=seed)
        return X, S, credible, info
