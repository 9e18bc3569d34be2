"""What the two PARTICLE estimators share: the stage-1 parameters, their checks, the seed
and the set-up of a grid fit."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.utils import check_random_state

from pmlbench.core.checks import check_features, check_label_matrix
from pmlbench.core.parameters import Constraint, Type, ValidatedParameters
from pmlbench.methods._constraints import SEED, check_folds, check_neighbours
from pmlbench.methods.particle.credible import Stage1Memo, Stage1Params, elicit_credible

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

    def _check_before_work(self, Y) -> None:
        """Checks a fit makes from the label matrix's shape alone, before any work."""

    def _checked_data(self, X, Y) -> tuple[Any, np.ndarray]:
        """Validated X and candidate matrix S, and the checks that need their size."""
        X = check_features(X)
        S = check_label_matrix(Y, what="candidate labels", n_rows=X.shape[0])
        self._check_data(X.shape[0])
        return X, S

    def _credible(self, X, S: np.ndarray, seed: int, memo: Stage1Memo | None = None):
        """Credible labels, the graded confidences they threshold and stage-1 diagnostics."""
        return elicit_credible(X, S, self._stage1_params(), random_state=seed, memo=memo)

    def _graph_widths(self) -> dict[bool, int]:
        """The kNN graphs this estimator's fit searches: their k by ``exclude_self``."""
        if self.credible == "out_of_fold":
            return {}
        return {not self.include_self: int(self.k)}

    def _grid_setup(
        self, X, Y, points: Sequence[Mapping[str, Any]]
    ) -> tuple[list[tuple[int, Any]], Any, np.ndarray, Stage1Memo]:
        """One validated estimator per grid point, the checked data and a stage-1 memo.

        Every point is validated before any work, as its own ``fit`` would; the memo
        searches each kNN graph once, at the largest k any point asks for.
        """
        estimators = []
        for index, point in enumerate(points):
            estimator = clone(self).set_params(**point)
            estimator._validate_params()
            estimator._check_before_work(Y)
            estimators.append((index, estimator))
        X = check_features(X)
        S = check_label_matrix(Y, what="candidate labels", n_rows=X.shape[0])
        widths: dict[bool, int] = {}
        for _, estimator in estimators:
            estimator._check_data(X.shape[0])
            for exclude_self, k in estimator._graph_widths().items():
                widths[exclude_self] = max(widths.get(exclude_self, 0), k)
        return estimators, X, S, Stage1Memo(X, S, widths)
