"""LIFT: multi-label learning with label-specific features (Zhang, IJCAI 2011; Zhang & Wu,
TPAMI 2015), trained on candidate labels.

Follows the authors' ``LIFT.m``: for every label j the positive and negative training
instances are clustered separately into ``m_j = min(ceil(r|P_j|), ceil(r|N_j|))`` clusters
each (the paper's clustering-ratio rule), every instance is re-described by its Euclidean
distances to the ``2 m_j`` centres (the label-specific mapping φ_j, positive centres first),
and a linear SVM with Platt probabilities is trained on that representation. The score of
label j is the SVM's probability of the positive class; a label is predicted when that
probability exceeds 0.5.

Degenerate labels, as in ``LIFT.m``: when one side is empty (``m_j = 0``) there are no
positive centres and the negative centres are ``min(50, n)`` k-means centres of all training
data; the SVM then sees a single class and the label gets a constant prediction, the class of
the first training instance, with probability 1 or 0.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics.pairwise import euclidean_distances
from sklearn.svm import SVC

from pmlbench.core.checks import check_feature_count, check_features, check_label_matrix
from pmlbench.core.parallel import worker_budget
from pmlbench.core.parameters import Interval, ValidatedParameters
from pmlbench.errors import PmlbenchError
from pmlbench.methods._constraints import N_JOBS, POSITIVE, SEED

# LIFT.m clusters all training data into this many centres for a label with an empty side.
FALLBACK_CLUSTERS = 50


def cluster_count(n_positive: int, n_negative: int, ratio: float) -> int:
    """``m_j = min(ceil(r * |P_j|), ceil(r * |N_j|))``, in floating point as LIFT.m does."""
    return min(math.ceil(ratio * n_positive), math.ceil(ratio * n_negative))


def kmeans_centres(X, n_clusters: int, seed: int) -> np.ndarray:
    """k-means++ seeding, one run, at most 100 iterations (MATLAB kmeans defaults in LIFT.m).

    A single instance is its own centre. sklearn relocates empty clusters to far points, the
    counterpart of MATLAB's ``'EmptyAction','singleton'``.
    """
    if X.shape[0] == 1:
        return X.toarray() if sp.issparse(X) else np.array(X, dtype=np.float64)
    with warnings.catch_warnings():
        # duplicate rows can leave fewer distinct points than clusters; that is expected here
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = KMeans(n_clusters=n_clusters, n_init=1, max_iter=100, random_state=seed).fit(X)
    return np.asarray(model.cluster_centers_, dtype=np.float64)


@dataclass
class LabelModel:
    """One label's centres (positive first) and its SVM, or a constant for a degenerate label."""

    centres: np.ndarray
    n_positive_centres: int
    svm: SVC | None = None
    constant: int | None = None


def fit_label(
    X, y: np.ndarray, ratio: float, C: float, seeds: np.ndarray, fallback_centres: np.ndarray | None
) -> LabelModel:
    """Clusters, distance features and a Platt-scaled linear SVM for one label (LIFT's steps)."""
    positive, negative = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    m = cluster_count(len(positive), len(negative), ratio)
    if m == 0:
        return LabelModel(centres=fallback_centres, n_positive_centres=0, constant=int(y[0]))
    centres = np.vstack(
        [
            kmeans_centres(X[positive], m, int(seeds[0])),
            kmeans_centres(X[negative], m, int(seeds[1])),
        ]
    )
    features = euclidean_distances(X, centres)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # probability=True, deprecated in 1.9
        svm = SVC(kernel="linear", C=C, probability=True, random_state=int(seeds[2]))
        svm.fit(features, y)
    return LabelModel(centres=centres, n_positive_centres=m, svm=svm)


def positive_probability(svm: SVC, features: np.ndarray) -> np.ndarray:
    """libsvm's Platt probability (``-b 1``) of the positive class."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return svm.predict_proba(features)[:, list(svm.classes_).index(1)]


class LIFT(ValidatedParameters, BaseEstimator):
    """LIFT with a linear SVM per label (Zhang & Wu 2015), trained on candidate labels.

    Args:
        ratio: the clustering ratio r, in (0, 1] (authors' default 0.1); r > 1 would ask
            for more clusters than the smaller side of a label has instances.
        C: the SVM's cost, > 0 (libsvm default 1, as ``LIFT.m`` uses).
        n_jobs: processes training labels in parallel (joblib; -1 = all cores; None = the
            job's thread budget, which parallel sweeps lower). Results do not depend on it.
        random_state: seeds k-means and Platt scaling, an integer in [0, 2**32) or None;
            each label gets its own derived seeds.
    """

    default_bipartition = {"rule": "method"}
    parameter_constraints = {
        "ratio": [Interval(float, 0, 1, closed="right")],
        "C": POSITIVE,
        "n_jobs": N_JOBS,
        "random_state": SEED,
    }

    def __init__(
        self,
        ratio: float = 0.1,
        C: float = 1.0,
        n_jobs: int | None = None,
        random_state: int | None = None,
    ):
        self.ratio = ratio
        self.C = C
        self.n_jobs = n_jobs
        self.random_state = random_state

    def fit(self, X, Y) -> LIFT:
        """Train one clustering + SVM per label on the candidate labels ``Y``."""
        self._validate_params()
        start = time.perf_counter()
        X = check_features(X)
        Y = check_label_matrix(Y, what="candidate labels", n_rows=X.shape[0])
        n, q = Y.shape
        if n < 2:
            raise PmlbenchError(f"LIFT needs at least 2 training instances, got {n}")
        # per label: seeds for positive k-means, negative k-means and Platt scaling
        seeds = np.random.SeedSequence(self.random_state).generate_state(3 * q + 1).reshape(-1)
        label_seeds = seeds[: 3 * q].reshape(q, 3)
        counts = Y.sum(axis=0)
        fallback = None
        if np.any((counts == 0) | (counts == n)):
            fallback = kmeans_centres(X, min(FALLBACK_CLUSTERS, n), int(seeds[-1]))
        models = Parallel(n_jobs=worker_budget(self.n_jobs, "method.n_jobs"))(
            delayed(fit_label)(
                X, Y[:, j], float(self.ratio), float(self.C), label_seeds[j], fallback
            )
            for j in range(q)
        )
        self.models_: list[LabelModel] = list(models)
        self.n_features_in_ = X.shape[1]
        centres = [len(mdl.centres) for mdl in self.models_ if mdl.constant is None]
        self.diagnostics_ = {
            "n_constant_labels": int(sum(mdl.constant is not None for mdl in self.models_)),
            "centres_per_label_min": int(min(centres, default=0)),
            "centres_per_label_max": int(max(centres, default=0)),
            "centres_total": int(sum(centres)),
            "fit_seconds": round(time.perf_counter() - start, 3),
        }
        return self

    def decision_function(self, X) -> np.ndarray:
        """Platt probability of the positive class for every label (n x q)."""
        X = check_features(X)
        check_feature_count(X, self.n_features_in_, method="LIFT")
        trained = [mdl for mdl in self.models_ if mdl.constant is None]
        # one distance computation against the centres of all labels at once
        distances = (
            euclidean_distances(X, np.vstack([mdl.centres for mdl in trained]))
            if trained
            else np.zeros((X.shape[0], 0))
        )
        scores = np.empty((X.shape[0], len(self.models_)))
        offset = 0
        for j, mdl in enumerate(self.models_):
            if mdl.constant is not None:
                scores[:, j] = float(mdl.constant)
                continue
            block = distances[:, offset : offset + len(mdl.centres)]
            offset += len(mdl.centres)
            scores[:, j] = positive_probability(mdl.svm, block)
        return scores

    def predict(self, X) -> np.ndarray:
        """Labels whose positive-class probability exceeds 0.5 (libsvm's ``-b 1`` label)."""
        return (self.decision_function(X) > 0.5).astype(np.uint8)
