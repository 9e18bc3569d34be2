"""The PML3ER paper's candidate-label generator, and the no-noise model.

For every instance i with ground-truth set y*_i, ``m_i`` irrelevant labels are drawn
uniformly without replacement from the labels not in y*_i, where

    m_i = min(round(rate * |y*_i|), l - 1 - |y*_i|),  never below 0

(rate = a / 100, a in {50, 100, 150, 200} in the paper). The rounding rule is not stated in
the paper; ``rounding`` selects it (half-up by default).
"""

from __future__ import annotations

import numpy as np

from pmlbench.core.checks import check_label_matrix
from pmlbench.core.parameters import Constraint, Interval, Options, validate_parameters

ROUNDING = ("half_up", "half_even", "floor", "ceil")
UNIFORM_CONSTRAINTS: dict[str, list[Constraint]] = {
    "rate": [Interval(float, 0, None)],
    "rounding": [Options(ROUNDING)],
}


def noise_counts(cardinality: np.ndarray, n_labels: int, rate: float, rounding: str) -> np.ndarray:
    """m_i for each instance: how many irrelevant labels the generator adds."""
    raw = rate * cardinality.astype(np.float64)
    if rounding == "half_up":
        # floor(x + 0.5) with a tolerance so that e.g. 0.5 * 3 = 1.5 rounds up despite float error
        m = np.floor(raw + 0.5 + 1e-9)
    elif rounding == "half_even":
        m = np.round(raw)
    elif rounding == "floor":
        m = np.floor(raw + 1e-9)
    else:
        m = np.ceil(raw - 1e-9)
    cap = n_labels - 1 - cardinality
    return np.clip(np.minimum(m, cap), 0, None).astype(np.int64)


def uniform_noise(
    Y_true: np.ndarray, rng: np.random.Generator, rate: float = 1.0, rounding: str = "half_up"
) -> np.ndarray:
    """Uniform candidate noise of the PML3ER paper: add round(rate*|y|) random wrong labels.

    Args:
        Y_true: n x l ground truth (0/1).
        rng: the generator that draws the wrong labels.
        rate: a / 100; the paper uses 0.5, 1.0, 1.5, 2.0.
        rounding: how rate * |y| becomes a count: half_up (default), half_even, floor, ceil.
    """
    validate_parameters({"rate": rate, "rounding": rounding}, UNIFORM_CONSTRAINTS, prefix="noise")
    Y_true = check_label_matrix(Y_true, what="ground-truth labels")
    n, n_labels = Y_true.shape
    counts = noise_counts(Y_true.sum(axis=1), n_labels, float(rate), rounding)
    candidates = Y_true.copy()
    # A uniformly random subset of size m of the irrelevant labels: the m irrelevant labels
    # with the smallest i.i.d. uniform keys (one vectorised draw for all instances).
    keys = rng.random((n, n_labels))
    keys[Y_true == 1] = np.inf
    order = np.argsort(keys, axis=1, kind="stable")
    take = np.arange(n_labels)[None, :] < counts[:, None]
    rows = np.repeat(np.arange(n), take.sum(axis=1))
    candidates[rows, order[take]] = 1
    return candidates


uniform_noise.parameter_constraints = UNIFORM_CONSTRAINTS  # type: ignore[attr-defined]


def no_noise(Y_true: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """No noise: candidates equal the ground truth (plain multi-label learning)."""
    return check_label_matrix(Y_true, what="ground-truth labels").copy()
