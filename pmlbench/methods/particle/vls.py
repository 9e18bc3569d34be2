"""PARTICLE-VLS: calibrated label ranking on credible labels (Fang & Zhang 2019, Sec. 3.2).

After stage 1, one linear SVM (C = 1) per label pair and per label against a virtual label
(see ``clr``). A test instance's ranking scores are its label votes, min-max normalised per
instance; label j is predicted when its votes exceed the virtual label's (Eq. 8).

``disambiguation_scores_`` are the graded confidences of stage 1 (Eq. 5), which the
threshold turns into credible labels. ``fit_grid`` computes stage 1 once per distinct
stage-1 setting and trains the SVMs once per distinct credible-label matrix: grid points
that differ only in how the models vote share them, and a binary problem with the same two
sides at two thresholds is trained once.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator

from pmlbench.core.checks import check_features
from pmlbench.core.digest import content_digest
from pmlbench.core.parameters import Interval, Options
from pmlbench.errors import NotApplicable
from pmlbench.methods._constraints import N_JOBS, POSITIVE, POSITIVE_INT
from pmlbench.methods.particle.base import PARTICLE_SEED, ParticleStage1Mixin
from pmlbench.methods.particle.clr import LinearModels, SharedProblems, clr_votes, fit_clr
from pmlbench.methods.particle.credible import STAGE1_CONSTRAINTS, Stage1Memo

VOTES = ("unweighted", "accuracy")
LOSSES = ("squared_hinge", "hinge")
# Label pairs above which a tuned split exceeds the suite's budget (docs/protocol.md, "Budget";
# measurements in docs/methods/particle.md): corel16k001's 11,628 pairs run within it;
# bibtex's 12,561 (over it with the four-threshold grid), cal500's 15,051, yeastbp's 23,436,
# corel5k's 69,751 and delicious's 482,653 do not.
MAX_LABEL_PAIRS = 12_000


class ParticleVLS(ParticleStage1Mixin, BaseEstimator):
    """PARTICLE-VLS: credible labels by propagation, then calibrated label ranking.

    Args:
        k, alpha, max_iter, tol, threshold, include_self, zero_weight_rows, credible,
            n_folds, oof_fallback: stage 1, as for ``particle_map``.
        votes: "unweighted" (standard calibrated label ranking) or "accuracy" (each vote
            weighted by its model's training accuracy, vote totals rounded up before the
            comparison with the virtual label, as the authors' ``PAR_VLS.m``).
        C: the SVMs' cost, > 0 (libsvm ``-c 1`` in the authors' code).
        loss: LinearSVC loss, "squared_hinge" (liblinear's default L2-SVM) or "hinge".
        svm_max_iter: liblinear iteration cap per problem, an integer >= 1.
        n_jobs: joblib threads over the label-grouped SVM problems (None: one; -1: all
            cores; never 0); the liblinear calls themselves run one at a time, so every
            value gives the same numbers.
        max_label_pairs: refuse (``NotApplicable``, before any work) a label set with more
            than this many pairs q(q-1)/2, an integer >= 1 or None (no cap): one SVM per
            pair makes the cost grow with q² (see ``MAX_LABEL_PAIRS``).
        random_state: seed of liblinear's coordinate order and of out-of-fold splits.
    """

    default_bipartition = {"rule": "method"}
    # four credible-label thresholds from the paper's 0.9 downwards, where the tuned suite's
    # selections lay, by the two vote rules (paper, authors' code); each threshold trains
    # the SVMs again (but problems it leaves alike), the vote rule is free
    # (docs/methods/particle.md, "Tuning grid")
    default_tuning_grid = {"threshold": [0.9, 0.7, 0.5, 0.3], "votes": ["unweighted", "accuracy"]}
    machine_dependent = (
        "its pairwise linear SVMs (scikit-learn's liblinear, dual coordinate descent stopped "
        "at tol 1e-4) take BLAS dot products, so where a problem stops short of its optimum "
        "the weights move with the kernel (emotions, one split: a metric by 0.004 between "
        "SkylakeX and Haswell; genbase, medical, enron: identical)"
    )
    parameter_constraints = {
        **STAGE1_CONSTRAINTS,
        "votes": [Options(VOTES)],
        "C": POSITIVE,
        "loss": [Options(LOSSES)],
        "svm_max_iter": POSITIVE_INT,
        "n_jobs": N_JOBS,
        "max_label_pairs": [None, Interval(int, 1, None)],
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
        votes: str = "unweighted",
        C: float = 1.0,
        loss: str = "squared_hinge",
        svm_max_iter: int = 1000,
        n_jobs: int | None = None,
        max_label_pairs: int | None = MAX_LABEL_PAIRS,
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
        self.votes = votes
        self.C = C
        self.loss = loss
        self.svm_max_iter = svm_max_iter
        self.n_jobs = n_jobs
        self.max_label_pairs = max_label_pairs
        self.random_state = random_state

    def fit(self, X, Y) -> ParticleVLS:
        """Credible labels (stage 1), then every binary problem with data on both sides."""
        self._validate_params()
        self._check_before_work(Y)
        seed = self._seed()
        start = time.perf_counter()
        X, S = self._checked_data(X, Y)
        return self._fit_checked(X, S, seed, Stage1Memo(X, S), {}, start)

    def fit_grid(
        self, X, Y, points: Sequence[Mapping[str, Any]]
    ) -> Iterator[tuple[int, ParticleVLS]]:
        """Fit every grid point on one training set, sharing the work (pmlbench.plugin).

        Stage 1 is computed once per distinct stage-1 setting (the threshold only selects
        from it), the SVMs once per distinct set of training problems: points that differ
        only in ``votes`` (or ``n_jobs``) share them, and a single problem whose sides two
        credible-label matrices make alike is trained once. Identical to ``fit`` point by
        point.
        """
        start = time.perf_counter()
        estimators, X, S, memo = self._grid_setup(X, Y, points)
        seeds = {index: estimator._seed() for index, estimator in estimators}
        groups: dict[tuple, list[tuple[int, ParticleVLS]]] = {}
        for index, estimator in estimators:
            groups.setdefault(estimator._models_key(seeds[index]), []).append((index, estimator))
        shared = self._shared_problems(X, S, groups, seeds, memo)
        for key, group in groups.items():
            models: dict[tuple, LinearModels] = {}  # this group's SVMs only: memory stays flat
            for index, estimator in group:
                yield (
                    index,
                    estimator._fit_checked(
                        X, S, seeds[index], memo, models, start, shared[key[1:]]
                    ),
                )
                start = time.perf_counter()

    @staticmethod
    def _shared_problems(
        X,
        S: np.ndarray,
        groups: Mapping[tuple, list[tuple[int, ParticleVLS]]],
        seeds: Mapping[int, int],
        memo: Stage1Memo,
    ) -> dict[tuple, SharedProblems]:
        """One :class:`SharedProblems` per SVM setting and seed (``_models_key`` but stage
        1), keeping the problems that two or more groups' credible labels train alike."""
        credible_sets: dict[tuple, list[np.ndarray]] = {}
        for key, group in groups.items():
            index, estimator = group[0]
            credible = estimator._credible(X, S, seeds[index], memo)[0]
            credible_sets.setdefault(key[1:], []).append(credible)
        return {
            setting: SharedProblems.recurring(sets, S) for setting, sets in credible_sets.items()
        }

    def _check_before_work(self, Y) -> None:
        shape = getattr(Y, "shape", None) or np.shape(Y)
        self._check_label_pairs(int(shape[1]) if len(shape) == 2 else 0)

    def _models_key(self, seed: int) -> tuple:
        """What the trained SVMs depend on: stage 1 (threshold included), then the seed and
        the SVM settings (``key[1:]``: what a single problem's model depends on besides its
        rows)."""
        return (self._stage1_params(), seed, float(self.C), self.loss, int(self.svm_max_iter))

    def _fit_checked(
        self,
        X,
        S: np.ndarray,
        seed: int,
        memo: Stage1Memo,
        models: dict[tuple, LinearModels],
        start: float,
        shared: SharedProblems | None = None,
    ) -> ParticleVLS:
        """Stage 1 and the SVMs on checked data; ``memo``, ``models`` and ``shared`` (single
        problems) hold shared work."""
        credible, confidence, info = self._credible(X, S, seed, memo)
        stage1 = time.perf_counter() - start
        self.credible_labels_ = credible
        self.n_labels_ = S.shape[1]
        self._votes_cache: tuple[str, str, np.ndarray, np.ndarray] | None = None
        key = self._models_key(seed)
        if key not in models:
            models[key] = fit_clr(
                X,
                credible,
                S,
                C=float(self.C),
                loss=self.loss,
                max_iter=int(self.svm_max_iter),
                seed=seed,
                n_jobs=self.n_jobs,
                shared=shared,
            )
        self.models_ = models[key]
        q = S.shape[1]
        n_virtual = int(np.sum(self.models_.second < 0))
        self.diagnostics_ = {
            **info,
            "stage1_seconds": stage1,
            "stage2_seconds": time.perf_counter() - start - stage1,  # the SVMs
            "fit_seconds": time.perf_counter() - start,
            "pair_models": int(self.models_.first.size - n_virtual),
            "pair_problems": q * (q - 1) // 2,
            "virtual_models": n_virtual,
            "svm_not_converged": self.models_.n_not_converged,
        }
        # stage 1's graded confidences (Eq. 5): credible labels are the candidates at or
        # above the threshold (pmlbench.plugin)
        self.disambiguation_scores_ = confidence
        return self

    def _check_label_pairs(self, n_labels: int) -> None:
        """Refuse, before any work, more label pairs than ``max_label_pairs``."""
        pairs = n_labels * (n_labels - 1) // 2
        if self.max_label_pairs is not None and pairs > self.max_label_pairs:
            raise NotApplicable(
                f"particle_vls trains one classifier per label pair: {pairs:,} pairs on "
                f"{n_labels} labels exceed method.max_label_pairs={self.max_label_pairs}; "
                "raise it (or set it to null) to run anyway"
            )

    def label_votes(self, X) -> tuple[np.ndarray, np.ndarray]:
        """Label votes (n x l) and virtual-label votes (n,) of the fitted models.

        The last result is kept with a digest of X: a run asks for ``decision_function``
        and then ``predict`` on the same test set, and every model votes on every instance.
        """
        X = check_features(X)
        key = content_digest(X)
        cached = getattr(self, "_votes_cache", None)
        # the vote rule is part of the key: set_params(votes=...) after fit changes the votes
        if cached is not None and cached[:2] == (key, self.votes):
            return cached[2].copy(), cached[3].copy()
        zeta, zeta_v = clr_votes(self.models_, X, self.n_labels_, weighted=self.votes == "accuracy")
        self._votes_cache = (key, self.votes, zeta, zeta_v)
        return zeta.copy(), zeta_v.copy()

    def decision_function(self, X) -> np.ndarray:
        """Label votes min-max normalised per instance (all zero where all votes tie)."""
        zeta, _ = self.label_votes(X)
        low = zeta.min(axis=1, keepdims=True)
        span = zeta.max(axis=1, keepdims=True) - low
        return np.divide(zeta - low, span, out=np.zeros_like(zeta), where=span > 0)

    def predict(self, X) -> np.ndarray:
        """Labels with more votes than the virtual label (Eq. 8; strict)."""
        zeta, zeta_v = self.label_votes(X)
        if self.votes == "accuracy":
            zeta, zeta_v = np.ceil(zeta), np.ceil(zeta_v)
        return (zeta > zeta_v[:, None]).astype(np.uint8)
