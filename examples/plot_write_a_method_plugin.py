"""
Write a method plugin and check it
==================================

A method plugin is a scikit-learn style estimator: constructor arguments are its
hyper-parameters, ``fit`` learns from features and **candidate** labels,
``decision_function`` gives scores and ``predict`` label sets. :mod:`pmlbench.testing` runs
it through the contract a benchmark run relies on, as ``pmlbench check-plugin`` does for an
installed one (docs/plugins.md explains each part).
"""

# %%
# The method
# ----------
# A kNN vote over the candidates: a label's score is the share of an instance's ``k``
# nearest training neighbours that have it among their candidates. Declared
# ``parameter_constraints`` are checked before any work, with one-line errors naming the
# config key (``method.k``); a ``default_tuning_grid`` is what the protocol tunes.
import numpy as np
from sklearn.base import BaseEstimator

from pmlbench.plugin import (
    Interval,
    ValidatedParameters,
    check_features,
    check_label_matrix,
    kneighbors,
)
from pmlbench.testing import run_checks, tiny_task


class CandidateVote(ValidatedParameters, BaseEstimator):
    """Scores: the share of the k nearest training neighbours with the label as a candidate.

    Args:
        k: neighbours, an integer >= 1.
        threshold: predict the labels scored at least this, in [0, 1].
    """

    default_tuning_grid = {"k": [5, 10]}
    parameter_constraints = {"k": [Interval(int, 1, None)], "threshold": [Interval(float, 0, 1)]}

    def __init__(self, k: int = 10, threshold: float = 0.5):
        self.k = k
        self.threshold = threshold

    def fit(self, X, Y):
        self._validate_params()
        self.X_ = check_features(X)
        self.Y_ = check_label_matrix(Y, what="candidate labels", n_rows=self.X_.shape[0])
        return self

    def decision_function(self, X):
        X = check_features(X)
        k = min(self.k, self.X_.shape[0])
        neighbours = kneighbors(X, self.X_, k)
        return self.Y_[neighbours].mean(axis=1)

    def predict(self, X):
        return (self.decision_function(X) >= self.threshold).astype(np.uint8)


# %%
# Check it
# --------
# :func:`pmlbench.testing.run_checks` returns every check's result;
# :func:`pmlbench.testing.check_method` raises one error naming each violation instead,
# which is what a plugin's own test calls.
report = run_checks("method", CandidateVote)
for result in report.results:
    print(f"{result.id:32s} {'passed' if result.passed else result.detail}")
assert not report.failed

# %%
# A broken variant is caught
# --------------------------
# Scores that are not finite break the contract; the check names the problem in one line.


class NaNScores(CandidateVote):
    def decision_function(self, X):
        scores = super().decision_function(X)
        scores[0, 0] = np.nan
        return scores


broken = run_checks("method", NaNScores)
print(*(f"{r.id}: {r.detail}" for r in broken.failed), sep="\n")

# %%
# Use it
# ------
# On the seeded toy task the checks use: precision of the labels it predicts on the test
# part. Registered through an entry point (docs/plugins.md), it runs as
# ``python -m pmlbench method=<name>`` like any built-in method.
task = tiny_task()
predicted = CandidateVote(k=5).fit(task.X_train, task.Y_candidates).predict(task.X_test)
print("precision:", round(float((predicted & task.Y_test).sum() / predicted.sum()), 3))
