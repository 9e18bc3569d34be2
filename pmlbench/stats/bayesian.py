"""Bayesian comparison of two methods with a region of practical equivalence (ROPE).

A p-value says how surprising the data would be if two methods were equal; a test over five
splits that does not reject calls a "tie" what may only be a lack of evidence. The Bayesian
tests recommended by Benavoli, Corani, Demšar and Zaffalon (JMLR 18(77), 2017, "Time for a
change") give instead the posterior probabilities that

- the first method (``a``, the reference) is better by more than ``rope``,
- the two are practically equivalent: the difference lies within [-rope, rope],
- the second method (``b``) is better by more than ``rope``,

in the metric's direction (``higher_is_better``). ``rope`` is on the metric's scale (0.01 is
one point of average precision); the three probabilities sum to 1.

- :func:`correlated_bayesian_ttest`: one PML dataset, over its matched splits (Corani &
  Benavoli, Machine Learning 100, 2015). Closed form, a Student t posterior.
- :func:`bayesian_signed_rank`: across PML datasets, on per-dataset means (Benavoli et al.,
  ICML 2014; JMLR 2017). Dirichlet process posterior, Monte Carlo with a seeded
  generator: the same inputs and seed give the same probabilities.
- :func:`bayesian_outcome`: the Bayesian win/tie/loss. Win when P(a better) >= 0.95, loss
  when P(b better) >= 0.95, tie when P(practically equivalent) >= 0.95, and otherwise
  ``"undecided"``: the data do not support any of the three conclusions. Undecided
  comparisons are counted in a column of their own (:func:`bayesian_win_tie_loss`), never
  folded into ties, so win + tie + loss + undecided is the number of comparisons.

baycomp (Benavoli et al.'s reference implementation) computes the same posteriors; it is not
a dependency because its correlated t-test supports k-fold cross-validation only
(rho = 1/k) while pmlbench's splits are random train/test splits of any ratio, and its
signed-rank test draws from numpy's legacy global generator API. tests/test_bayesian.py
compares both functions with baycomp and with its documentation's published examples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from pmlbench.errors import PmlbenchError
from pmlbench.stats.paired import _rows
from pmlbench.stats.wtl import UNTESTED, count_outcomes, paired_groups

DEFAULT_ROPE = 0.01
DEFAULT_THRESHOLD = 0.95
DEFAULT_PRIOR_STRENGTH = 0.5
DEFAULT_SAMPLES = 50_000
OUTCOMES = ("win", "tie", "loss", "undecided")
COMPARISON_COLUMNS = [
    "baseline",
    "metric",
    "dataset",
    "level",
    "n",
    "reference_mean",
    "baseline_mean",
    "mean_difference",
    "rope",
    "p_reference_better",
    "p_equivalent",
    "p_baseline_better",
    "outcome",
]


@dataclass(frozen=True)
class BayesianComparison:
    """Posterior probabilities of a Bayesian comparison of ``a`` with ``b``.

    Attributes:
        n: number of paired observations (splits, or datasets).
        mean_difference: mean of ``a - b`` (its sign says which side is larger).
        rope: half-width of the region of practical equivalence [-rope, rope].
        p_a_better: P(a better than b by more than rope), in the metric's direction.
        p_equivalent: P(the difference lies within the rope).
        p_b_better: P(b better than a by more than rope).
    """

    n: int
    mean_difference: float
    rope: float
    p_a_better: float
    p_equivalent: float
    p_b_better: float

    def outcome(self, threshold: float = DEFAULT_THRESHOLD) -> str:
        """win/tie/loss/undecided for ``a`` at ``threshold`` (:func:`bayesian_outcome`)."""
        return bayesian_outcome(self.p_a_better, self.p_equivalent, self.p_b_better, threshold)


def _check_rope(rope) -> np.ndarray:
    rope = np.asarray(rope, dtype=np.float64)
    if not (np.all(np.isfinite(rope)) and np.all(rope >= 0)):
        raise PmlbenchError(f"the ROPE must be a finite width >= 0, got {rope}")
    return rope


def _check_threshold(threshold: float) -> None:
    if not 0.5 < threshold <= 1:
        raise PmlbenchError(f"the probability threshold must lie in (0.5, 1], got {threshold}")


def bayesian_outcome(
    p_a_better: float, p_equivalent: float, p_b_better: float, threshold: float = DEFAULT_THRESHOLD
) -> str:
    """The Bayesian win/tie/loss of ``a``: the conclusion whose probability is >= threshold.

    ``"win"`` when P(a better) >= threshold, ``"loss"`` when P(b better) >= threshold,
    ``"tie"`` when P(practically equivalent) >= threshold, else ``"undecided"``. With a
    threshold above 1/2 at most one of the three holds.
    """
    _check_threshold(threshold)
    if p_a_better >= threshold:
        return "win"
    if p_b_better >= threshold:
        return "loss"
    if p_equivalent >= threshold:
        return "tie"
    return "undecided"


def correlated_ttest_many(
    a, b, test_train_ratio, *, rope=DEFAULT_ROPE, higher_is_better=True
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Row-wise correlated Bayesian t-tests (see :func:`correlated_bayesian_ttest`).

    ``test_train_ratio`` (n_test/n_train), ``rope`` and ``higher_is_better`` are scalars or
    one value per row. Returns (mean of a - b, P(a better), P(equivalent), P(b better)).
    """
    a, b = _rows(a, b)
    rows, j = a.shape
    ratio = np.broadcast_to(np.asarray(test_train_ratio, dtype=np.float64), (rows,))
    if not np.all(ratio > 0):
        raise PmlbenchError(
            "the correlated Bayesian t-test needs positive n_train and n_test; check the "
            "n_train/n_test columns of results.csv"
        )
    rope = np.broadcast_to(_check_rope(rope), (rows,))
    sign = np.where(np.broadcast_to(np.asarray(higher_is_better, dtype=bool), (rows,)), 1.0, -1.0)
    d = (a - b) * sign[:, None]  # positive: a is better
    mean = d.mean(axis=1)
    scale = np.sqrt((1.0 / j + ratio) * np.var(d, axis=1, ddof=1))
    constant = np.all(d == d[:, :1], axis=1)
    scale[constant] = 1.0  # placeholder; decided below
    p_a = stats.t.sf((rope - mean) / scale, df=j - 1)
    p_b = stats.t.cdf((-rope - mean) / scale, df=j - 1)
    # zero variance: the posterior is a point mass at the mean difference
    p_a[constant] = (mean[constant] > rope[constant]).astype(np.float64)
    p_b[constant] = (mean[constant] < -rope[constant]).astype(np.float64)
    p_equivalent = np.clip(1.0 - p_a - p_b, 0.0, 1.0)
    return mean * sign, p_a, p_equivalent, p_b


def correlated_bayesian_ttest(
    a,
    b,
    n_train: float,
    n_test: float,
    *,
    rope: float = DEFAULT_ROPE,
    higher_is_better: bool = True,
) -> BayesianComparison:
    """Correlated Bayesian t-test of ``a`` against ``b`` over J matched splits of one dataset.

    Corani & Benavoli (2015); Benavoli et al. (2017), the correlated t-test: with the
    differences d_j = a_j - b_j (oriented so that positive favours ``a``) modelled as
    correlated normals with correlation rho between any two splits, and the matching
    non-informative Normal-Gamma prior, the posterior of the mean difference mu is

        mu ~ Student-t(df = J - 1, loc = mean(d), scale^2 = (1/J + rho/(1-rho)) var(d)),

    var with ddof = 1. rho = n_test / (n_test + n_train), Nadeau and Bengio's heuristic, so
    rho/(1-rho) = n_test/n_train: the same correction as
    :func:`~pmlbench.stats.paired.corrected_resampled_ttest`. The probabilities are
    P(mu > rope), P(-rope <= mu <= rope) and P(mu < -rope). When every split gives the same
    difference the posterior is a point mass there (baycomp does the same).
    """
    if not (n_train > 0 and n_test > 0):
        raise PmlbenchError(
            f"the correlated Bayesian t-test needs positive n_train and n_test, got "
            f"{n_train} and {n_test}; check the n_train/n_test columns"
        )
    mean, p_a, p_eq, p_b = correlated_ttest_many(
        np.ravel(a), np.ravel(b), n_test / n_train, rope=rope, higher_is_better=higher_is_better
    )
    return BayesianComparison(
        np.size(a), float(mean[0]), float(rope), float(p_a[0]), float(p_eq[0]), float(p_b[0])
    )


def signed_rank_posterior(d, rope: float, weights) -> np.ndarray:
    """Samples of (theta_a, theta_equivalent, theta_b) given Dirichlet weight samples.

    The Bayesian signed-rank test of Benavoli et al. (ICML 2014; JMLR 2017): ``d`` are the n
    differences (positive favours ``a``), z = (0, d_1, ..., d_n) prepends the prior's
    pseudo-observation z_0 = 0, and each row w of ``weights`` (shape samples x (n+1)) is a
    draw from Dirichlet(s, 1, ..., 1). Then

        theta_a = sum_ij w_i w_j I(z_i + z_j > 2 rope),
        theta_b = sum_ij w_i w_j I(z_i + z_j < -2 rope),
        theta_equivalent = 1 - theta_a - theta_b  (|z_i + z_j| <= 2 rope, the closed ROPE).

    Returns an array of shape (samples, 3).
    """
    z = np.concatenate([[0.0], np.asarray(d, dtype=np.float64)])
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim != 2 or weights.shape[1] != len(z):
        raise PmlbenchError(f"weights must have shape (samples, {len(z)}), got {weights.shape}")
    sums = z[:, None] + z[None, :]
    above = (sums > 2.0 * rope).astype(np.float64)
    below = (sums < -2.0 * rope).astype(np.float64)
    theta = np.empty((len(weights), 3))
    theta[:, 0] = np.sum((weights @ above) * weights, axis=1)
    theta[:, 2] = np.sum((weights @ below) * weights, axis=1)
    theta[:, 1] = 1.0 - theta[:, 0] - theta[:, 2]
    return theta


def bayesian_signed_rank(
    a,
    b,
    *,
    rope: float = DEFAULT_ROPE,
    higher_is_better: bool = True,
    prior_strength: float = DEFAULT_PRIOR_STRENGTH,
    n_samples: int = DEFAULT_SAMPLES,
    seed: int = 0,
) -> BayesianComparison:
    """Bayesian signed-rank test of ``a`` against ``b`` across datasets (one mean each).

    The Dirichlet process posterior of Benavoli et al. (ICML 2014; JMLR 2017)
    with prior strength s = ``prior_strength`` at the pseudo-observation z_0 = 0 (baycomp's
    default s = 0.5): ``n_samples`` draws of the Dirichlet weights, each giving
    (theta_a, theta_equivalent, theta_b) by :func:`signed_rank_posterior`. P(a better) is
    the fraction of draws where theta_a is the largest of the three (ties go to the first
    in that order, as in baycomp), and likewise for the other two. The Monte Carlo error
    of each probability is at most 0.5/sqrt(n_samples) = 0.0022 for 50,000 draws.
    ``seed`` seeds numpy's default generator.

    On a ROPE boundary (z_i + z_j = +-2 rope exactly) the pair counts as equivalent, the
    closed ROPE of the paper; baycomp counts it half on each side.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape or len(a) < 1:
        raise PmlbenchError(
            f"the Bayesian signed-rank test needs two equal-length samples, got {a.shape} "
            f"and {b.shape}"
        )
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise PmlbenchError("the Bayesian signed-rank test got NaN or infinite values")
    rope = float(_check_rope(rope))
    if not (prior_strength > 0 and math.isfinite(prior_strength)):
        raise PmlbenchError(f"the prior strength must be positive, got {prior_strength}")
    if int(n_samples) < 1:
        raise PmlbenchError(f"n_samples must be at least 1, got {n_samples}")
    d = a - b if higher_is_better else b - a
    alpha = np.concatenate([[prior_strength], np.ones(len(d))])
    rng = np.random.default_rng(seed)
    wins = np.zeros(3, dtype=np.int64)
    remaining = int(n_samples)
    while remaining:  # in chunks: the weights of 50,000 draws over many datasets are large
        size = min(remaining, 10_000)
        theta = signed_rank_posterior(d, rope, rng.dirichlet(alpha, size))
        wins += np.bincount(np.argmax(theta, axis=1), minlength=3)
        remaining -= size
    p = wins / float(n_samples)
    return BayesianComparison(
        len(d), float(np.mean(a - b)), rope, float(p[0]), float(p[1]), float(p[2])
    )


def _rope_per_metric(rope, metric: str) -> float:
    if isinstance(rope, dict):
        if metric not in rope:
            raise PmlbenchError(f"no ROPE width for metric {metric!r}; give one for each metric")
        return float(rope[metric])
    return float(rope)


def bayesian_comparisons(
    records: pd.DataFrame,
    reference: str,
    directions: dict[str, bool],
    *,
    rope: float | dict[str, float] = DEFAULT_ROPE,
    threshold: float = DEFAULT_THRESHOLD,
    baselines: list[str] | None = None,
) -> pd.DataFrame:
    """Correlated Bayesian t-test of the reference against every other method per PML
    dataset and metric, over the matched splits (paired as by
    :func:`~pmlbench.stats.wtl.compare_with_reference`).

    ``records`` is tidy (dataset, level, method, seed, split, metric, value, n_train,
    n_test); ``rope`` is one width or one per metric. Columns: baseline, metric, dataset,
    level, n, reference_mean, baseline_mean, mean_difference (reference - baseline), rope,
    p_reference_better, p_equivalent, p_baseline_better, outcome (win/tie/loss/undecided for
    the reference at ``threshold``; ``"untested"`` with fewer than 2 matched splits, NaN
    probabilities).
    """
    _check_threshold(threshold)
    frames = []
    pairs = paired_groups(
        records,
        reference,
        baselines,
        sizes=True,
        sizes_missing="the correlated Bayesian t-test needs n_train and n_test columns in "
        "results.csv",
    )
    for pair in pairs:
        metrics = pair.groups.get_level_values(0)
        for metric in set(metrics):
            if metric not in directions:
                raise PmlbenchError(f"no direction (higher or lower is better) for {metric!r}")
        group_rope = np.array([_rope_per_metric(rope, m) for m in metrics], dtype=np.float64)
        _check_rope(group_rope)
        higher = np.array([bool(directions[m]) for m in metrics])
        assert pair.ratio is not None  # paired_groups(sizes=True) always gives the ratio
        mean = np.full(len(pair.counts), np.nan)
        p_a, p_eq, p_b = mean.copy(), mean.copy(), mean.copy()
        for n in np.unique(pair.counts[pair.counts >= 2]):
            groups = np.flatnonzero(pair.counts == n)
            rows = pair.starts[groups, None] + np.arange(n)
            mean[groups], p_a[groups], p_eq[groups], p_b[groups] = correlated_ttest_many(
                pair.ref[rows],
                pair.base[rows],
                pair.ratio[groups],
                rope=group_rope[groups],
                higher_is_better=higher[groups],
            )
        frame = pair.frame(
            {
                "mean_difference": mean,
                "rope": group_rope,
                "p_reference_better": p_a,
                "p_equivalent": p_eq,
                "p_baseline_better": p_b,
            }
        )
        frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=COMPARISON_COLUMNS)
    comparisons = pd.concat(frames, ignore_index=True)
    comparisons["outcome"] = [
        bayesian_outcome(a, e, b, threshold) if not np.isnan(a) else UNTESTED
        for a, e, b in zip(
            comparisons["p_reference_better"],
            comparisons["p_equivalent"],
            comparisons["p_baseline_better"],
            strict=True,
        )
    ]
    return comparisons[COMPARISON_COLUMNS]


def bayesian_win_tie_loss(
    comparisons: pd.DataFrame, metrics: list[str] | None = None
) -> pd.DataFrame:
    """Counts per baseline and metric plus a ``metric="total"`` row per baseline.

    Columns exactly: baseline, metric, win, tie, loss, undecided. ``"untested"``
    comparisons are not counted; undecided ones are counted apart from the ties.
    """
    return count_outcomes(comparisons, OUTCOMES, metrics)
