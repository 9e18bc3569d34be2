"""ML-kNN (Zhang & Zhou, Pattern Recognition 2007), trained on candidate labels.

Faithful to the authors' MLKNN_train.m / MLKNN_test.m: Laplace-smoothed priors and
neighbour-count likelihoods, an instance is never its own neighbour, ties between equal
distances go to the lower training index, posteriors are the scores and a label is
predicted when its posterior is >= 0.5. The model itself (Eqs. 1-2 and the posteriors) is
pmlbench.numerics.mlknn_model, which PARTICLE-MAP fits too; this module is the estimator:
its parameters, their checks and the scikit-learn interface.

``fit_grid`` fits a grid of k on one training set from one kNN search of the training set
and one of each query set, both at the grid's largest k (pmlbench.numerics.mlknn_model):
the same models, bit for bit, as fitting each k alone.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, clone

from pmlbench.core.checks import check_features, check_label_matrix
from pmlbench.core.parameters import ValidatedParameters
from pmlbench.methods._constraints import NON_NEGATIVE, POSITIVE_INT, check_neighbours
from pmlbench.numerics.mlknn_model import MLkNNModel, QueryNeighbours, widest_graph


class MLkNN(ValidatedParameters, BaseEstimator):
    """ML-kNN: k-nearest-neighbour MAP estimation per label (Zhang & Zhou 2007).

    Args:
        k: number of neighbours, an integer >= 1 (paper: 10); at most the training
            instances minus one.
        s: smoothing of the priors and likelihoods (Eqs. 1-2), a number >= 0 (paper: 1,
            Laplace smoothing; 0 gives the unsmoothed frequencies).
    """

    default_bipartition = {"rule": "method"}
    # half to twice the paper's k = 10 (docs/methods/mlknn.md, "Tuning grid")
    default_tuning_grid = {"k": [5, 10, 15, 20]}
    parameter_constraints = {"k": POSITIVE_INT, "s": NON_NEGATIVE}

    def __init__(self, k: int = 10, s: float = 1.0):
        self.k = k
        self.s = s

    def fit(self, X, Y) -> MLkNN:
        """Estimate priors and likelihoods from the training set (Eqs. 1-2 of the paper)."""
        self._validate_params()
        X, Y = _checked_data(X, Y)
        check_neighbours(self.k, Y.shape[0])
        return self._fit_model(X, Y)

    def fit_grid(self, X, Y, points: Sequence[Mapping[str, Any]]) -> Iterator[tuple[int, MLkNN]]:
        """Fit every grid point from one kNN search at the grid's largest k (pmlbench.plugin).

        The training graph and the neighbours of each query set are searched once at the
        largest k and sliced for each point: identical to ``fit`` point by point.
        """
        estimators = []
        for index, point in enumerate(points):
            estimator = clone(self).set_params(**point)
            estimator._validate_params()
            estimators.append((index, estimator))
        if not estimators:
            return
        X, Y = _checked_data(X, Y)
        for _, estimator in estimators:
            check_neighbours(estimator.k, Y.shape[0])
        ks = [int(estimator.k) for _, estimator in estimators]
        graph = widest_graph(X, ks)
        query = QueryNeighbours(X, max(ks))
        for index, estimator in estimators:
            yield index, estimator._fit_model(X, Y, neighbors=graph, query=query)

    def _fit_model(self, X, Y: np.ndarray, **shared) -> MLkNN:
        """Fit on checked data; ``shared``: work shared with other grid points (MLkNNModel.fit)."""
        model = MLkNNModel.fit(X, Y, self.k, self.s, **shared)
        self.model_ = model
        self.prior1_, self.cond1_, self.cond0_ = model.prior1, model.cond1, model.cond0
        self.X_train_, self.Y_train_ = X, Y
        return self

    def decision_function(self, X) -> np.ndarray:
        """Posterior probability that each label is relevant (n x l)."""
        return self.model_.posteriors(check_features(X))

    def predict(self, X) -> np.ndarray:
        """Labels whose posterior is at least 0.5 (exact ties go to the positive side)."""
        return (self.decision_function(X) >= 0.5).astype(np.uint8)


def _checked_data(X, Y) -> tuple[Any, np.ndarray]:
    X = check_features(X)
    return X, check_label_matrix(Y, what="candidate labels", n_rows=X.shape[0])
