"""ML-kNN (Zhang & Zhou, Pattern Recognition 2007), trained on candidate labels.

Faithful to the authors' MLKNN_train.m / MLKNN_test.m: Laplace-smoothed priors and
neighbour-count likelihoods, an instance is never its own neighbour, ties between equal
distances go to the lower training index, posteriors are the scores and a label is
predicted when its posterior is >= 0.5. The model itself (Eqs. 1-2 and the posteriors) is
pmlbench.numerics.mlknn_model, which PARTICLE-MAP fits too; this module is the estimator:
its parameters, their checks and the scikit-learn interface.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator

from pmlbench.core.checks import check_features, check_label_matrix
from pmlbench.core.parameters import ValidatedParameters
from pmlbench.methods._constraints import NON_NEGATIVE, POSITIVE_INT, check_neighbours
from pmlbench.numerics.mlknn_model import MLkNNModel


class MLkNN(ValidatedParameters, BaseEstimator):
    """ML-kNN: k-nearest-neighbour MAP estimation per label (Zhang & Zhou 2007).

    Args:
        k: number of neighbours, an integer >= 1 (paper: 10); at most the training
            instances minus one.
        s: smoothing of the priors and likelihoods (Eqs. 1-2), a number >= 0 (paper: 1,
            Laplace smoothing; 0 gives the unsmoothed frequencies).
    """

    default_bipartition = {"rule": "method"}
    parameter_constraints = {"k": POSITIVE_INT, "s": NON_NEGATIVE}

    def __init__(self, k: int = 10, s: float = 1.0):
        self.k = k
        self.s = s

    def fit(self, X, Y) -> MLkNN:
        """Estimate priors and likelihoods from the training set (Eqs. 1-2 of the paper)."""
        self._validate_params()
        X = check_features(X)
        Y = check_label_matrix(Y, what="candidate labels", n_rows=X.shape[0])
        check_neighbours(self.k, Y.shape[0])
        model = MLkNNModel.fit(X, Y, self.k, self.s)
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
