"""The paper's uniform candidate noise, checked against the rule of protocol.md."""

from __future__ import annotations

import numpy as np
import pytest

from pmlbench.datasets.bundled import medical
from pmlbench.errors import PmlbenchError
from pmlbench.noise.uniform import no_noise, noise_counts, uniform_noise


def expected_count(cardinality, n_labels, rate):
    """m_i = min(round_half_up(rate |y|), l - 1 - |y|), never below 0, written out per instance."""
    from decimal import ROUND_HALF_UP, Decimal

    rounded = int((Decimal(str(rate)) * cardinality).quantize(Decimal(1), rounding=ROUND_HALF_UP))
    return max(0, min(rounded, n_labels - 1 - cardinality))


@pytest.mark.parametrize("rate", [0.5, 1.0, 1.5, 2.0])
def test_uniform_noise_follows_the_rule_on_real_labels(rate):
    Y = medical().Y
    C = uniform_noise(Y, np.random.default_rng(1), rate=rate)
    assert np.all(C >= Y)
    added = (C - Y).sum(axis=1)
    expected = [expected_count(int(c), Y.shape[1], rate) for c in Y.sum(axis=1)]
    np.testing.assert_array_equal(added, expected)


def test_half_up_rounding_and_cap():
    assert noise_counts(np.array([1, 3, 5]), 10, 0.5, "half_up").tolist() == [1, 2, 3]
    assert noise_counts(np.array([1, 3, 5]), 10, 0.5, "half_even").tolist() == [0, 2, 2]
    assert noise_counts(np.array([1, 3, 5]), 10, 0.5, "floor").tolist() == [0, 1, 2]
    # capped at l - 1 labels; full or nearly full rows get nothing
    assert noise_counts(np.array([3, 4, 5]), 5, 2.0, "half_up").tolist() == [1, 0, 0]


def test_wrong_labels_are_uniform(rng):
    Y = np.zeros((20000, 5), dtype=np.uint8)
    Y[:, 0] = 1
    C = uniform_noise(Y, rng, rate=1.0)
    frequencies = C[:, 1:].mean(axis=0)
    np.testing.assert_allclose(frequencies, 0.25, atol=0.015)


def test_same_seed_same_candidates():
    Y = medical().Y
    a = uniform_noise(Y, np.random.default_rng(7), rate=1.5)
    b = uniform_noise(Y, np.random.default_rng(7), rate=1.5)
    np.testing.assert_array_equal(a, b)


def test_bad_input():
    Y = np.eye(3, dtype=int)
    with pytest.raises(PmlbenchError, match=r"noise.rate must be a number in \[0, inf\), got -1"):
        uniform_noise(Y, np.random.default_rng(0), rate=-1)
    for rate in (float("nan"), float("inf"), "abc", True):
        with pytest.raises(PmlbenchError, match="noise.rate must be"):
            uniform_noise(Y, np.random.default_rng(0), rate=rate)
    with pytest.raises(PmlbenchError, match="noise.rounding must be one of 'half_up'"):
        uniform_noise(Y, np.random.default_rng(0), rounding="up")
    with pytest.raises(PmlbenchError, match="0/1"):
        uniform_noise(Y * 2, np.random.default_rng(0))
    np.testing.assert_array_equal(no_noise(Y, np.random.default_rng(0)), Y)
