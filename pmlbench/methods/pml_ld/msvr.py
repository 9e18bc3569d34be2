"""PML-LD, stage 2: the multi-output support vector regressor of ``PL-LEAF/plmsvr.m``.

The regressor (the MSVR of Sanchez-Fernandez et al., 2004, with PL-LEAF's extra term) fits
``f(x) = Σ_i β_i k(x_i, x) + b`` to the enhanced label distributions ``D`` (n x l) by
minimising::

    L_p(β, b) = ½ tr(βᵀ H β) + (C1/2) Σ_i L(u_i) − C2 Σ_ij Z_ij f_ij,
    u_i = ‖D_i − f(x_i)‖,   L(u) = (u − ε)² if u ≥ ε else 0,

with ``Z_ij = 1/(l − |Ȳ_i|)`` on candidate labels and ``−1/|Ȳ_i|`` off them (``|Ȳ_i|`` the
instance's non-candidate count): the last term rewards outputs that rank the candidates
above the other labels. The solver is the code's iteratively re-weighted least squares:
with weights ``a_i = 2 C1 (u_i − ε)/u_i`` on the instances outside the ε-tube (``u_i ≥ ε``),
solve for their β rows and b, keep the other rows of β, back off by ``η ← η/10`` towards the
previous iterate while ``L_p`` went up (giving up below η = 1e-16), re-weight, and stop when
``L_p`` falls by less than ``tol`` relatively (or no instance is left outside the tube, where
the code zeroes β).

**The linear system.** ``plmsvr.m`` inverts the (m+1) x (m+1) bordered matrix
``[[H_SS + diag(1/a_S), 1], [a_Sᵀ H_SS, Σa_S]] + 1e-11 I`` (S the m instances outside the
tube). Its last row minus ``a_Sᵀ`` times the first block row reads ``1ᵀβ_S = −C2 Σ_{i∉S} Z_i``,
(with the 1e-11 ridge carried along exactly, see :func:`_solve`), so the same solution comes
from one Cholesky factorisation of the symmetric positive definite ``H_SS + diag(1/a_S)``
(its diagonal exceeds 1/(2 C1)) and a scalar per label: a third of the work of an LU
factorisation and a sixth of the explicit inverse. When no instance lies outside the tube
(S empty: label distributions spread over more than about 100 labels all have norm below
ε = 0.1) the code's system is ``1e-11 · b = C2 Σ_i Z_i``; that step is reproduced too, and
the step search then shortens it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

RIDGE = 1e-11  # the code adds 1e-11 I to its bordered matrix


@dataclass
class MSVRResult:
    """Coefficients (n x l), intercepts (l,) and the loss trace of :func:`plmsvr`."""

    beta: np.ndarray
    b: np.ndarray
    losses: list[float]
    iterations: int
    converged: bool  # False when the step search gave up or no instance was left outside ε


def candidate_weights(C: np.ndarray) -> np.ndarray:
    """``Z_ij = 1 / (l C_ij − |Ȳ_i|)``: ``1/(l − |Ȳ_i|)`` on candidates, ``−1/|Ȳ_i|`` off."""
    q = C.shape[1]
    non_candidates = (C == 0).sum(axis=1, keepdims=True)
    return 1.0 / (C * q - non_candidates)


def _solve(
    H: np.ndarray, S: np.ndarray, a: np.ndarray, D: np.ndarray, Z: np.ndarray, C2: float
) -> tuple[np.ndarray, np.ndarray]:
    """The β rows of S and b from ``plmsvr.m``'s bordered system (see the module docstring).

    With ``A_δ = H_SS + diag(1/a_S) + δI``, ``y = A_δ⁻¹ r`` and ``e = A_δ⁻¹ 1``:
    ``b = ((1 + δa)ᵀy + C2 s) / ((1 + δa)ᵀe + δ)`` and ``β_S = y − e bᵀ``, where r is the
    code's right-hand side and ``s = Σ_{i∉S} Z_i``. With S empty this is the code's
    ``b = C2 Σ_i Z_i / δ``.
    """
    outside = np.ones(Z.shape[0], dtype=bool)
    outside[S] = False
    s = Z[outside].sum(axis=0)
    if S.size == 0:
        return np.zeros((0, Z.shape[1])), C2 * s / RIDGE
    A = H[np.ix_(S, S)]
    A[np.diag_indices_from(A)] += 1.0 / a[S] + RIDGE
    factor = scipy.linalg.cho_factor(A, lower=True, overwrite_a=True, check_finite=False)
    rhs = D[S] + C2 * Z[S] / a[S][:, None]
    x = scipy.linalg.cho_solve(factor, np.column_stack([rhs, np.ones(S.size)]), check_finite=False)
    y, e = x[:, :-1], x[:, -1]
    weights = 1.0 + RIDGE * a[S]
    b = (weights @ y + C2 * s) / (weights @ e + RIDGE)
    return y - np.outer(e, b), b


def plmsvr(
    H: np.ndarray,
    D: np.ndarray,
    C: np.ndarray,
    *,
    C1: float = 1.0,
    C2: float = 50.0,
    epsilon: float = 0.1,
    tol: float = 1e-10,
    max_iter: int = 1000,
) -> MSVRResult:
    """``plmsvr.m``: IRWLS for the loss of the module docstring.

    Args:
        H: n x n training kernel.
        D: n x l regression targets (the softmax of the enhanced labels).
        C: n x l 0/1 candidate labels.
        C1, C2, epsilon, tol: the code's ``C1``, ``C2``, ``epsi`` and ``tol`` (demo: 1, 50,
            0.1, 1e-10).
        max_iter: a safety cap the code does not have (it stops on ``tol``).
    """
    n, q = D.shape
    Z = candidate_weights(np.asarray(C, dtype=np.float64))

    def state(beta: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, float]:
        f = H @ beta + b[None, :]
        u = np.sqrt(np.sum((D - f) ** 2, axis=1))
        over = np.clip(u - epsilon, 0.0, None)
        loss = (
            0.5 * float(np.sum(beta * (H @ beta)))
            + 0.5 * C1 * float(np.sum(over[u >= epsilon] ** 2))
            - C2 * float(np.sum(Z * f))
        )
        return u, loss

    beta = np.zeros((n, q))
    b = np.zeros(q)
    u, loss = state(beta, b)
    losses = [loss]
    with np.errstate(divide="ignore", invalid="ignore"):
        a = 2.0 * C1 * (u - epsilon) / u
    S = np.flatnonzero(u >= epsilon)
    converged = True
    iterations = 0
    while True:
        iterations += 1
        beta_prev, b_prev, u_prev, S_prev = beta.copy(), b.copy(), u, S
        beta_S, b_new = _solve(H, S, a, D, Z, C2)
        beta[S] = beta_S
        b = b_new
        u, loss = state(beta, b)
        stop = False
        eta = 1.0
        while loss > losses[-1]:
            eta /= 10.0
            beta = beta_prev.copy()
            beta[S_prev] = eta * beta_S + (1.0 - eta) * beta_prev[S_prev]
            b = eta * b_new + (1.0 - eta) * b_prev
            u, loss = state(beta, b)
            if eta < 1e-16:  # the code's stopping criterion #1: keep the previous iterate
                loss = losses[-1] - 1e-15
                beta, b, u = beta_prev, b_prev, u_prev
                stop, converged = True, False
        S = np.flatnonzero(u >= epsilon)
        if stop:
            S = S_prev
        with np.errstate(divide="ignore", invalid="ignore"):
            a = 2.0 * C1 * (u - epsilon) / u
        with np.errstate(divide="ignore", invalid="ignore"):  # MATLAB: x/0 is ±Inf or NaN
            if np.float64(losses[-1] - loss) / np.float64(losses[-1]) < tol:
                stop = True
        losses.append(loss)
        if S.size == 0:  # criterion #3: the code returns zero coefficients
            beta = np.zeros_like(beta)
            stop, converged = True, False
        if stop or iterations >= max_iter:
            break
    return MSVRResult(beta=beta, b=b, losses=losses, iterations=iterations, converged=converged)
