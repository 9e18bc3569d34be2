"""The methods' SVDs: gesdd, with gesvd where gesdd reports no convergence.

LAPACK's divide-and-conquer SVD (gesdd) fails on rare finite matrices: it stopped PML3ER on
one yeastbp split of the benchmark suite and PML-LRS on delicious. Every SVD of the methods
goes through pmlbench.numerics.linalg, which then takes the QR-iteration driver (gesvd).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from pmlbench.methods.pml3er import PML3ER
from pmlbench.methods.pml_lrs import PMLLRS
from pmlbench.methods.pml_ni import PMLNI
from pmlbench.numerics import linalg
from pmlbench.numerics.linalg import nuclear_norm, svt, thin_svd

real_svd = scipy.linalg.svd


@pytest.fixture
def gesdd_fails(monkeypatch):
    """scipy's SVD as it behaves on such a matrix: gesdd raises, gesvd works."""
    drivers = []

    def svd(*args, lapack_driver="gesdd", **kwargs):
        drivers.append(lapack_driver)
        if lapack_driver == "gesdd":
            raise np.linalg.LinAlgError("SVD did not converge")
        return real_svd(*args, lapack_driver=lapack_driver, **kwargs)

    monkeypatch.setattr(linalg.scipy.linalg, "svd", svd)
    return drivers


def test_thin_svd_is_scipys_default_where_gesdd_converges():
    A = np.random.default_rng(0).normal(size=(40, 15))
    for ours, theirs in zip(thin_svd(A), real_svd(A, full_matrices=False), strict=True):
        np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(thin_svd(A, compute_uv=False), scipy.linalg.svdvals(A))
    assert nuclear_norm(A) == pytest.approx(np.linalg.norm(A, "nuc"), rel=1e-13)


def test_svd_falls_back_to_gesvd(gesdd_fails):
    A = np.random.default_rng(1).normal(size=(60, 20))
    U, s, Vt = thin_svd(A)
    assert gesdd_fails == ["gesdd", "gesvd"]
    np.testing.assert_allclose((U * s) @ Vt, A, atol=1e-12)
    np.testing.assert_allclose(s, np.linalg.svd(A, compute_uv=False), rtol=1e-12)
    assert nuclear_norm(A) == pytest.approx(np.linalg.norm(A, "nuc"), rel=1e-12)
    # the proximal operator: shrunk singular values, same singular vectors
    Z = svt(A, 3.0)
    U0, s0, Vt0 = np.linalg.svd(A, full_matrices=False)
    expected = (U0 * np.maximum(s0 - 3.0, 0.0)) @ Vt0
    np.testing.assert_allclose(Z, expected, atol=1e-12)


def test_both_drivers_failing_raises(monkeypatch):
    def svd(*args, **kwargs):
        raise np.linalg.LinAlgError("SVD did not converge")

    monkeypatch.setattr(linalg.scipy.linalg, "svd", svd)
    with pytest.raises(np.linalg.LinAlgError):
        thin_svd(np.eye(3))


@pytest.mark.parametrize("method", [PML3ER, PMLLRS, PMLNI])
def test_methods_fit_where_gesdd_fails(method, gesdd_fails, monkeypatch):
    """The same fit, to round-off, when every SVD needs the second driver."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 8))
    Y = (X @ rng.normal(size=(8, 5)) + rng.normal(size=(120, 5)) > 0.3).astype(np.uint8)
    S = np.maximum(Y, rng.random(Y.shape) < 0.2).astype(np.uint8)
    with_gesvd = method().fit(X, S).decision_function(X)
    assert "gesvd" in gesdd_fails
    gesdd_fails.clear()
    monkeypatch.setattr(linalg.scipy.linalg, "svd", real_svd)
    reference = method().fit(X, S).decision_function(X)
    np.testing.assert_allclose(with_gesvd, reference, rtol=1e-6, atol=1e-8)
