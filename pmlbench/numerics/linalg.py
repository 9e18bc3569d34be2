"""Proximal operators and small linear-algebra helpers shared by the linear PML methods.

- :func:`soft_threshold`: the proximal operator of ``tau * ||A||_1`` (entry-wise shrinkage).
- :func:`svt`: the proximal operator of the trace norm (singular value thresholding).
- :func:`thin_svd` and :func:`nuclear_norm`: LAPACK's divide-and-conquer SVD (gesdd), with
  the QR-iteration SVD (gesvd) where gesdd reports no convergence, which it does on rare
  finite matrices (PML3ER on yeastbp, PML-LRS on delicious). Every SVD of the methods goes
  through them, so no method fails where a slower driver succeeds.
- :class:`SymmetricSolver`: solves ``(G + c I) Z = B`` for many shifts ``c`` from one
  eigendecomposition of the symmetric PSD matrix ``G``, as the ALM solvers need when the
  penalty grows.
- :func:`with_bias`: append a column of ones, keeping sparse input sparse.
- :func:`gram`: the Gram matrix ``AᵀA`` (or ``AAᵀ``), dense, for dense or sparse ``A``; every
  method that needs one computes it here.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp


def soft_threshold(A: np.ndarray, tau: float) -> np.ndarray:
    """``sign(A) * max(|A| - tau, 0)``, the minimiser of ``tau*||Z||_1 + 0.5*||Z - A||_F^2``."""
    return np.sign(A) * np.maximum(np.abs(A) - tau, 0.0)


def thin_svd(A: np.ndarray, *, compute_uv: bool = True):
    """``U, s, Vt`` of the thin SVD of a finite ``A`` (or ``s`` alone), by gesdd, else gesvd.

    Where gesdd converges the result is exactly scipy's default ``scipy.linalg.svd``.
    """
    options = {"full_matrices": False, "compute_uv": compute_uv, "check_finite": False}
    try:
        return scipy.linalg.svd(A, lapack_driver="gesdd", **options)
    except np.linalg.LinAlgError:  # gesvd converges where gesdd does not
        return scipy.linalg.svd(A, lapack_driver="gesvd", **options)


def nuclear_norm(A: np.ndarray) -> float:
    """``||A||_*``, the sum of the singular values (:func:`thin_svd`)."""
    return float(thin_svd(A, compute_uv=False).sum())


def svt(A: np.ndarray, threshold: float, *, return_norm: bool = False):
    """Singular value soft-thresholding: the minimiser of ``threshold ||Z||_* + ½||Z - A||²``.

    With ``return_norm`` also the nuclear norm of the result (the sum of the shrunk values).
    """
    U, s, Vt = thin_svd(A)
    shrunk = np.maximum(s - threshold, 0.0)
    keep = shrunk > 0
    Z = (U[:, keep] * shrunk[keep]) @ Vt[keep]
    return (Z, float(shrunk.sum())) if return_norm else Z


class SymmetricSolver:
    """Solve ``(G + c I) Z = B`` for any shift ``c > -min eig(G)`` with one eigendecomposition."""

    def __init__(self, G: np.ndarray):
        eigenvalues, self.Q = scipy.linalg.eigh(G, check_finite=False)
        self.eigenvalues = np.clip(eigenvalues, 0.0, None)  # G is PSD; clip round-off

    def solve(self, B: np.ndarray, shift: float) -> np.ndarray:
        """``(G + shift I)^{-1} B`` for a matrix ``B`` with ``G``'s row count."""
        return self.Q @ ((self.Q.T @ B) / (self.eigenvalues + shift)[:, None])


def with_bias(X) -> np.ndarray | sp.csr_matrix:
    """``[X, 1]``: X with a trailing column of ones (CSR stays CSR)."""
    ones = np.ones((X.shape[0], 1))
    if sp.issparse(X):
        return sp.hstack([X, sp.csr_matrix(ones)], format="csr")
    return np.hstack([X, ones])


def gram(A, *, rows: bool = False) -> np.ndarray:
    """``AᵀA`` (``AAᵀ`` with ``rows``) as a dense array, for dense or sparse ``A``."""
    G = A @ A.T if rows else A.T @ A
    return G.toarray() if sp.issparse(G) else np.asarray(G)
