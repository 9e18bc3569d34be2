"""PML-DDA's first stage: the dual decomposition that disambiguates the candidates (NumPy).

What the authors' ``DDA_PML.m`` computes, in the paper's orientation (columns are
instances): X (h x n) the kernel features (:mod:`.features`), Y (q x n) the 0/1 candidates,
``m = ⌈ratio·h⌉``. Unknowns: Q (q x q, orthogonal), U (h x m, orthonormal columns), V (m x
n), O (m x q), the instance self-representation Z (n x n, columns on the simplex), the soft
assignments F (n x q, rows on the simplex) and the disambiguated labels P (q x n). The loss
the code evaluates after each iteration::

    ‖X − UVZ‖² + ‖X − XZ‖² + ‖Y − QP‖² + α‖P − PZ‖² + β Σ_ic F_ic ‖v_i − o_c‖²
        + γ‖Ψᵀ − F‖²

(v_i the columns of V, o_c those of O, Ψ the column softmax of the starting P = Y; the code's
``dis`` is the n x q matrix of the squared distances). The features are decomposed as
``UVZ`` and reconstructed by their own instances (XZ), the labels as ``QP`` and by the same
instances (PZ); the representations V are pulled to label prototypes O by the assignments F
(hence "dual decomposition alignment").

Start: ``P = Y``, ``Q = I``, ``Z`` the row softmax of the identity, ``F = S`` the row softmax
of ``Pᵀ``, V uniform on [0, 1) and O standard normal (random, given); the code's random
start of U is never read before the first U step overwrites it. Each iteration, in the
code's order and with each step using the latest values:

1. ``Q = AB'`` from the SVD ``YPᵀ = A Σ B'`` (orthogonal Procrustes);
2. ``U = AB'`` from the thin SVD ``XZᵀVᵀ = A Σ B'``;
3. ``V ← V ∘ (UᵀXZᵀ + βOFᵀ) / (VZZᵀ + βV·diag(F1) + ε)``;
4. ``O = V(F∘F) / 1ᵀ(F∘F)`` column by column;
5. ``Z ← Z ∘ ((VᵀUᵀX + XᵀX + αPᵀP) / (VᵀVZ + XᵀXZ + αPᵀPZ) + ε)``, then each column of Z
   projected onto the simplex (``EProjSimplex_new.m``);
6. ``F`` row by row the simplex projection of ``γS / (β·dis + γ)``, with S the row softmax of
   Pᵀ as it was *before the previous iteration's* P step (the code recomputes S after using
   it), then ``S`` is recomputed from the current P;
7. ``P ← (P ∘ (QᵀY + αPZ + αPZᵀ + γ SᵀFᵀ) − max(P − Y, 0) ∘ Y) / (P + αP + αPZZᵀ + γ SᵀSᵀ
   + ε)`` (element-wise; Sᵀ∘Sᵀ for ``SᵀSᵀ``).

ε is MATLAB's ``eps`` (2⁻⁵²). At most ``max_iter`` (40) iterations; from the third on, the
code stops when the loss decreased by less than ``tol`` (1e-3) of its value *between the two
iterations before* (its ``(loss(ii-1) − loss(ii)) / loss(ii-1)`` with ``loss(ii+1)`` the loss
after iteration ii). The result is U and P: the network's inputs are ``(UᵀX)ᵀ`` and its
targets ``Pᵀ``.

**Where the code leaves a choice to rounding.** The polar factors of steps 1 and 2 are
unique when the matrices have full rank. When ``XZᵀVᵀ`` is (numerically) rank deficient, the
code's U has columns that LAPACK picks from rounding noise; here the singular values at most
``rtol`` times the largest count as zero and their columns of U are 0 (U is then the partial
isometry, the same on every machine), and ``diagnostics_`` counts such steps. Step 1 needs
no choice: ``QᵀY`` and ``‖Y − QP‖²`` are the same for every orthogonal Q of the SVD when
``rank(YPᵀ) = rank(Y)``, and are computed that way (:func:`procrustes_terms`).

**Arithmetic.** ``XᵀX`` is formed once; ``XᵀXZ`` is ``Xᵀ(XZ)`` with ``XZ`` from the previous
loss; ``VZ`` (new V, new Z) serves the loss and the next iteration's steps 2 and 3. The
squared distances ``dis`` are sums of squared differences (as MATLAB's ``pdist2``), not a
BLAS product, so no near-zero distance is lost to cancellation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pmlbench.errors import PmlbenchError
from pmlbench.numerics.linalg import thin_svd
from pmlbench.numerics.matlab import MATLAB_EPS
from pmlbench.numerics.simplex import project_rows_to_simplex


def embedding_size(ratio: float, h: int) -> int:
    """``k = ceil(ratio*d)`` of ``DDA_PML.m``: the rows of V, the columns of U."""
    return max(1, math.ceil(ratio * h))


def row_softmax(A: np.ndarray) -> np.ndarray:
    """``exp(A − max(A, [], 2)) ./ sum(exp(A − max(A, [], 2)), 2)`` (the code's
    ``row_softmax``; MATLAB's ``softmax`` is the same down the columns)."""
    E = np.exp(A - A.max(axis=1, keepdims=True))
    return E / E.sum(axis=1, keepdims=True)


def squared_distances(V: np.ndarray, prototypes: np.ndarray) -> np.ndarray:
    """``pdist2(V', O', 'squaredeuclidean')`` (n x q): sums of squared differences between
    the columns of V (m x n) and those of O, the prototypes (m x q)."""
    D = np.empty((V.shape[1], prototypes.shape[1]))
    for c in range(prototypes.shape[1]):
        D[:, c] = ((V - prototypes[:, c : c + 1]) ** 2).sum(axis=0)
    return D


def polar_factor(M: np.ndarray, rtol: float) -> tuple[np.ndarray, int]:
    """``AB'`` from the thin SVD ``M = AΣB'``, over the singular values above ``rtol`` times
    the largest (the others' columns are 0); also how many were dropped."""
    A, s, Bt = thin_svd(M)
    keep = s > rtol * s[0] if s.size and s[0] > 0 else np.zeros(s.shape, dtype=bool)
    return A[:, keep] @ Bt[keep], int((~keep).sum())


def procrustes_terms(
    Y: np.ndarray, P: np.ndarray, rtol: float
) -> tuple[np.ndarray, np.ndarray, int]:
    """Step 1 of the iteration, without the part of Q that is not unique.

    With ``YPᵀ = AΣBᵀ`` and ``Q = ABᵀ`` completed arbitrarily where Σ is 0, ``QᵀY = BAᵀY``
    over the kept singular values (the other columns of A are orthogonal to
    ``range(YPᵀ) = range(Y)``), and for any later P', ``‖Y − QP'‖² = ‖Y‖² − 2⟨QᵀY, P'⟩ +
    ‖P'‖²`` for every orthogonal Q. Returns ``QᵀY``, Q over the kept values (the full Q when
    ``YPᵀ`` has full rank) and how many singular values were dropped.
    """
    A, s, Bt = thin_svd(Y @ P.T)
    keep = s > rtol * s[0] if s.size and s[0] > 0 else np.zeros(s.shape, dtype=bool)
    Q = A[:, keep] @ Bt[keep]
    return Q.T @ Y, Q, int((~keep).sum())


@dataclass
class Decomposition:
    """The result of :func:`decompose`, in the code's orientation."""

    U: np.ndarray  # h x m
    P: np.ndarray  # q x n, the disambiguated labels
    losses: list[float]  # the loss after each iteration (the code's loss(2:end))
    rank_deficient_u: int = 0  # U steps with singular values treated as zero
    rank_deficient_q: int = 0  # Q steps likewise (labels that are never a candidate)
    stages: list[dict[str, Any]] = field(default_factory=list)  # variables, then "loss"

    @property
    def iterations(self) -> int:
        return len(self.losses)


def decompose(
    X: np.ndarray,
    Y: np.ndarray,
    V: np.ndarray,
    prototypes: np.ndarray,
    *,
    alpha: float,
    beta: float,
    gamma: float,
    max_iter: int = 40,
    tol: float = 1e-3,
    rtol: float = 1e-10,
    keep_stages: int = 0,
) -> Decomposition:
    """The iterations of ``DDA_PML.m`` (module docstring) from the random start V (m x n,
    uniform) and O (``prototypes``, m x q, normal).

    ``X`` (h x n) kernel features, ``Y`` (q x n) 0/1 candidates. ``keep_stages`` keeps every
    variable after each of the first so many iterations (for comparison with the authors'
    code).
    """
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    V = np.array(V, dtype=np.float64)
    O = np.array(prototypes, dtype=np.float64)  # noqa: E741 (the code's name)
    n = X.shape[1]
    P = Y.copy()
    Z = row_softmax(np.eye(n))
    S = row_softmax(P.T)
    F = S.copy()
    Psi_t = F.copy()  # Ψᵀ: the softmax of the start, which the loss keeps reading
    XtX = X.T @ X
    XZ = X @ Z
    VZ = V @ Z
    Y_norm = float(np.sum(Y * Y))
    result = Decomposition(U=np.zeros((X.shape[0], V.shape[0])), P=P, losses=[])
    for iteration in range(1, max_iter + 1):
        row_sums = F.sum(axis=1)  # the code's Dn = diag(sum(F, 2))
        # 1. Q (only QᵀY and ‖Y − QP‖² are read)
        QtY, Q, dropped = procrustes_terms(Y, P, rtol)
        result.rank_deficient_q += int(dropped > 0)
        # 2. U
        U, dropped = polar_factor(X @ VZ.T, rtol)
        result.rank_deficient_u += int(dropped > 0)
        # 3. V
        UtX = U.T @ X
        Va = UtX @ Z.T + beta * (O @ F.T)
        Vb = VZ @ Z.T + beta * (V * row_sums[None, :])
        V = V * Va / (Vb + MATLAB_EPS)
        # 4. O
        F2 = F * F
        O = (V @ F2) / F2.sum(axis=0)[None, :]  # noqa: E741
        # 5. Z
        PZ = P @ Z
        Za = V.T @ UtX + XtX + alpha * (P.T @ P)
        Zb = V.T @ (V @ Z) + X.T @ XZ + alpha * (P.T @ PZ)
        Z = project_rows_to_simplex(np.ascontiguousarray((Z * (Za / Zb + MATLAB_EPS)).T)).T
        # 6. F, with the S of the iteration before, then S anew
        dis = squared_distances(V, O)
        F = project_rows_to_simplex(gamma * S / (beta * dis + gamma))
        S = row_softmax(P.T)
        # 7. P
        St = S.T
        PZ = P @ Z
        Pa = QtY + alpha * PZ + alpha * (P @ Z.T) + gamma * (St * F.T)
        Pb = P + alpha * P + alpha * (PZ @ Z.T) + gamma * (St * St) + MATLAB_EPS
        P = P * Pa / Pb - np.maximum(P - Y, 0.0) * Y / Pb
        if not (np.isfinite(P).all() and np.isfinite(Z).all() and np.isfinite(V).all()):
            raise PmlbenchError(
                f"pml_dda: the decomposition's iterates are no longer finite after iteration "
                f"{iteration} (a zero denominator in a multiplicative update); try other "
                "values of method.alpha, method.beta or method.gamma"
            )
        # the loss, and the products the next iteration reuses
        VZ = V @ Z
        XZ = X @ Z
        loss = (
            float(np.sum((X - U @ VZ) ** 2))
            + float(np.sum((X - XZ) ** 2))
            + (Y_norm - 2.0 * float(np.sum(QtY * P)) + float(np.sum(P * P)))
            + alpha * float(np.sum((P - P @ Z) ** 2))
            + beta * float(np.sum(F * dis))
            + gamma * float(np.sum((Psi_t - F) ** 2))
        )
        result.losses.append(loss)
        result.U, result.P = U, P
        if iteration <= keep_stages:
            result.stages.append(
                {"Q": Q, "U": U, "V": V, "O": O, "Z": Z, "F": F, "S": S, "P": P, "loss": loss}
            )
        if iteration > 2:
            before, last = result.losses[-3], result.losses[-2]
            if (before - last) / before < tol:
                break
    return result
