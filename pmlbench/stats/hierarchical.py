"""The hierarchical Bayesian comparison of two methods over datasets from split-level results
(Corani, Benavoli, Demšar, Mangili & Zaffalon, Machine Learning 2017; Benavoli, Corani,
Demšar & Zaffalon, JMLR 2017, Sec. 5).

Per dataset i the J per-split differences x_i are multivariate normal with mean delta_i,
variance sigma_i^2 and correlation rho between any two splits, the correlation the
overlapping training sets of resampled splits cause (rho = n_test / (n_test + n_train),
Nadeau & Bengio's heuristic: 0.5 for the protocol's 50/50 splits). The delta_i are drawn
from a Student t with location delta_0, scale sigma_0 and nu degrees of freedom, so datasets
share strength and an extreme one is shrunk towards the others. The posterior of the
difference on a **new** dataset, t(nu, delta_0, sigma_0), is split at +-rope:
P(a better by more than the rope), P(practically equivalent), P(b better).

The model is the Stan program that ships with ``baycomp`` (``hierarchical-t-test.stan``,
read from the installed package), sampled by ``pystan`` with a fixed seed, so the same
inputs give the same posterior on the same machine and Stan build. Both are optional:
``pip install 'pmlbench[hierarchical]'``. The data are scaled, as baycomp scales them, by
the mean within-dataset standard deviation of the differences (the ROPE with them), and the
model's bounds are baycomp's defaults: delta_0 in [-max|x|, max|x|], sigma_i up to 1000
times the mean within-dataset sd, sigma_0 up to 1000 times the sd of the dataset means, a
Gamma(alpha, beta) prior on nu - 1 with alpha in [1, 2], beta in [0.01, 0.1]. Unlike
baycomp, which replaces the differences of a dataset with zero variance by random numbers,
such a dataset is kept as it is and every sigma_i is bounded below by 1e-3 of the common
scale (a deterministic rule). As in baycomp, a posterior sample votes for the region of
largest probability and the reported probabilities are the shares of the votes.
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from importlib import resources

import numpy as np
from scipy import stats

from pmlbench.errors import PmlbenchError

MISSING = (
    "the hierarchical Bayesian test needs pystan and baycomp: pip install "
    "'pmlbench[hierarchical]' (pystan builds its model with a C++ compiler on first use)"
)
STAN_FILE = "hierarchical-t-test.stan"
SIGMA_FLOOR = 1e-3


@dataclass(frozen=True)
class HierarchicalResult:
    """Posterior probabilities for a new dataset, in the metric's direction.

    Attributes:
        n_datasets, n_splits: the shape of the differences.
        rope: half-width of the region of practical equivalence, on the metric's scale.
        rho: the correlation between splits the model assumed.
        mean_difference: posterior mean of delta_0 (a - b, direction-aware), metric scale.
        p_a_better / p_equivalent / p_b_better: shares of posterior samples in which each
            region is the most probable one for a new dataset.
    """

    n_datasets: int
    n_splits: int
    rope: float
    rho: float
    mean_difference: float
    p_a_better: float
    p_equivalent: float
    p_b_better: float


def have_stan() -> bool:
    """Whether pystan and baycomp can be imported (the ``hierarchical`` extra)."""
    from importlib.util import find_spec

    return find_spec("stan") is not None and find_spec("baycomp") is not None


def _model_code() -> str:
    try:
        return resources.files("baycomp").joinpath(STAN_FILE).read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError):
        raise PmlbenchError(MISSING) from None


def model_data(d: np.ndarray, rho: float) -> tuple[dict, float]:
    """The Stan program's data for differences ``d`` (datasets x splits) and the scale the
    differences were divided by."""
    within = float(np.mean(np.std(d, axis=1)))
    scale = within if within > 0 else float(np.max(np.abs(d))) or 1.0
    x = d / scale
    within_scaled = float(np.mean(np.std(x, axis=1))) or 1.0
    among = float(np.std(np.mean(x, axis=1))) if len(x) > 1 else within_scaled
    largest = float(np.max(np.abs(x))) or 1.0
    data = {
        "x": x,
        "Nsamples": int(x.shape[1]),
        "q": int(x.shape[0]),
        "rho": float(rho),
        "deltaLow": -largest,
        "deltaHi": largest,
        "lowerAlpha": 1.0,
        "upperAlpha": 2.0,
        "lowerBeta": 0.01,
        "upperBeta": 0.1,
        "stdLow": SIGMA_FLOOR,
        "stdHi": within_scaled * 1000.0,
        "std0Low": 0.0,
        "std0Hi": (among or within_scaled) * 1000.0,
    }
    return data, scale


def hierarchical_bayesian(
    a,
    b,
    *,
    rope: float,
    rho: float,
    higher_is_better: bool = True,
    seed: int = 0,
    chains: int = 4,
    samples: int = 2000,
) -> HierarchicalResult:
    """The hierarchical model on ``a`` and ``b`` (datasets x matched splits).

    ``rho`` is the correlation between splits (n_test / (n_test + n_train)); ``seed`` fixes
    Stan's sampler.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.ndim != 2 or a.shape != b.shape or a.shape[1] < 2 or a.shape[0] < 1:
        raise PmlbenchError(
            f"the hierarchical test needs two datasets x splits arrays of one shape with "
            f">= 2 splits, got {a.shape} and {b.shape}"
        )
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise PmlbenchError("the hierarchical test got NaN or infinite values")
    if not (0 <= rho < 1) or not (np.isfinite(rope) and rope >= 0):
        raise PmlbenchError(f"need 0 <= rho < 1 and a finite rope >= 0, got {rho} and {rope}")
    if not have_stan():
        raise PmlbenchError(MISSING)
    import stan

    d = a - b if higher_is_better else b - a
    data, scale = model_data(d, rho)
    # pystan reports its progress on stderr and needs an event loop of its own
    with contextlib.redirect_stderr(io.StringIO()), _quiet_stan():
        model = stan.build(_model_code(), data=data, random_seed=int(seed))
        fit = model.sample(num_chains=int(chains), num_samples=int(samples))
    mu = np.asarray(fit["delta0"]).ravel()
    sd = np.asarray(fit["std0"]).ravel()
    nu = np.asarray(fit["nu"]).ravel()
    r = rope / scale
    left = stats.t.cdf(-r, nu, mu, sd)
    right = stats.t.sf(r, nu, mu, sd)
    votes = np.argmax(np.column_stack([right, 1.0 - left - right, left]), axis=1)
    shares = np.bincount(votes, minlength=3) / len(votes)
    return HierarchicalResult(
        int(d.shape[0]),
        int(d.shape[1]),
        float(rope),
        float(rho),
        float(mu.mean() * scale),
        float(shares[0]),
        float(shares[1]),
        float(shares[2]),
    )


@contextlib.contextmanager
def _quiet_stan():
    """httpstan logs every build at INFO level; keep the report's output clean."""
    import logging

    logger = logging.getLogger("httpstan")
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)
