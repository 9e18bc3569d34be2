"""Schirn (Si, Cui, Yang, Yang & Shen, "Revisiting Sparsity Constraint Under High-Rank Property
in Partial Multi-Label Learning", arXiv 2505.20938, 2025), trained on candidate labels.

The model: a linear predictor W whose predicted label matrix XW fits the candidates Y minus a
sparse noisy-label matrix P, with a *negative* nuclear norm that pushes XW towards high rank::

    min ‖XW − (Y − P)‖²_F − λ‖XW‖_* + α‖P‖_1 + β‖W‖²_F

The authors' ``DiscrementalMLC_train.m`` (github cuiyidan0514/Schirn) solves it by the
augmented Lagrangian with the split C = XW, multiplier Φ and penalty ρ (from ρ = 1e-4, times
1.1 per iteration, at most 10), 100 iterations, no stopping test, from C = Φ = 1:

1. ``W ← (2βI + ρXᵀX)⁻¹ Xᵀ(ρC − Φ)``  (exact minimiser in W)
2. ``P ← Y ∘ [soft(Y − C, α/2) > ½]``  (``optimizeP.m``: soft-thresholding, clipped to
   [0, Y], rounded at ½: a candidate is noisy iff ``C_ij < ½ − α/2``)
3. ``C ← t + (λ/ω) · correction(t)`` with ω = 1 + ρ/2 and ``t = (2Y − 2P + Φ + ρXW) / 2ω``
   (``optimizeC.m``; see below)
4. ``Φ ← Φ + ρ(XW − C)``, ``ρ ← min(1.1ρ, 10)``

Scores are ``XW`` (no scaling, no bias, no feature preprocessing: ``run_arts.m``); a label
is predicted where the score is strictly above 0.8 (``evalt.m``: ``sign(F − 0.8)``).

**Step 3, the code's formula.** ``optimizeC.m`` takes the *full* SVD ``t = U S Vᵀ`` (U n x n,
S n x c) and adds λ/ω to every entry of S, zeros included, so that
``C = t + (λ/ω) (U 1ₙ)(V 1_c)ᵀ``: t plus a rank-one matrix built from the sums of all left
and all right singular vectors. That matrix is not a function of t alone: it changes with the
sign the SVD routine gives each singular pair and, when n ≠ c, with the basis it picks for
the complement of t's column (row) space. LAPACK's ``dgesvd`` (behind Octave's ``svd``)
makes these choices by rounding-level events: a 1e-15 relative perturbation of t flips some
sign in a few percent of calls, and over 100 iterations such a flip changes the fitted W by
tens of percent. pmlbench therefore fixes the choices by an explicit rule
(:func:`canonical_vector_sums`; ``c_update="code"``, the default, as the formula the
published numbers came from): each pair oriented so that its right singular vector has a
non-negative entry sum, the complement taken from the Householder QR of t (what ``dgesvd``
itself uses when n >= 1.6c). ``c_update="lapack"`` uses ``dgesvd``'s own choices instead,
reproducing an Octave run of the unmodified code where those choices are stable (not
kernel-independent: for checks only). ``c_update="singular_values"`` adds λ/ω to the
singular values only, the proximal step of the negative nuclear norm:
``C = t + (λ/ω) U_c V_cᵀ`` from the thin SVD, free of sign choices and unique whenever t
has full rank.

**Solver.** Step 1 is solved through one thin SVD of X, X = U_x s V_xᵀ:
``XW = U_x diag(s²/(2β + ρs²)) U_xᵀ(ρC − Φ)``, so an iteration costs two n x r x c products
(r = min(n, d)) besides step 3's QR of an n x c matrix; for sparse X with many more
instances than features the same product goes through X itself,
``X V_x diag(1/(2β + ρs²)) V_xᵀ Xᵀ(ρC − Φ)`` (:func:`schirn_system`). Products of the form
U_x D U_xᵀ (V_x D V_xᵀ) do not depend on the signs of X's singular vectors. The SVD does
not depend on λ, α or β, and the iterates of settings that differ in λ or α stay equal for a
while (:func:`schirn_paths`): tuning fits a grid with one SVD, sharing those iterations.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from sklearn.base import BaseEstimator, clone
from threadpoolctl import threadpool_limits

from pmlbench.core.checks import check_features, check_label_matrix
from pmlbench.core.parameters import Interval, Options, ValidatedParameters
from pmlbench.errors import NotApplicable, PmlbenchError
from pmlbench.methods._constraints import BUDGET_NOTE

C_UPDATES = ("code", "lapack", "singular_values")
# parameters that leave the iterates equal for a while (lam, alpha) or alone (threshold):
# fit_grid runs grid points differing only in these together
_PER_PATH = ("lam", "alpha", "threshold")


def dgesvd_crossover(c: int) -> int:
    """``dgesvd``'s ``MNTHR`` for an n x c matrix with n >= c: at ``n >= ⌊1.6c⌋`` it factors
    QR first (reference LAPACK ``ILAENV(6, 'DGESVD')``: ``INT(REAL(MIN(M, N)) * 1.6E0)``)."""
    return int(np.float32(c) * np.float32(1.6))


def _householder(A: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """LAPACK ``dgeqrf`` of a tall A: the packed reflectors, their factors and R (upper)."""
    (qr, tau), _ = scipy.linalg.qr(A, mode="raw", check_finite=False)
    return qr, tau, np.triu(qr[: A.shape[1]])


def _apply_q(qr: np.ndarray, tau: np.ndarray, z: np.ndarray, trans: str = "N") -> np.ndarray:
    """``Q z`` (or ``Qᵀ z``) for the full orthogonal Q of a ``dgeqrf`` factorisation."""
    (ormqr,) = scipy.linalg.get_lapack_funcs(("ormqr",), (qr,))
    z = np.asfortranarray(z, dtype=np.float64)
    lwork = max(1, int(ormqr("L", trans, qr, tau, z, lwork=-1)[1][0].real))
    out, _, info = ormqr("L", trans, qr, tau, z, lwork=lwork, overwrite_c=False)
    if info != 0:
        raise PmlbenchError(f"LAPACK ormqr failed (info={info}) in Schirn's C update")
    return out


def qr_block_size(c: int) -> int:
    """Block size of :func:`_householder_blocked` for a matrix of c columns: 32 below 512
    columns, 128 from there (the fastest measured with one BLAS thread for 153 to 983
    columns: ``python benchmarks/bench_schirn.py --qr-blocks``). It changes the rounding
    only."""
    return min(c, 32 if c < 512 else 128)


def _householder_blocked(
    A: np.ndarray, overwrite: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """LAPACK ``dgeqrt`` of a tall A: the packed reflectors, the block factors T and R.

    The same Householder reflectors as ``dgeqrf`` (``dlarfg``'s sign convention, so the same
    Q and R up to rounding), with recursive panels (``dgeqrt3``): about 0.8 of ``dgeqrf``'s
    CPU time on delicious's 8052 x 983 and on 2500 x 374, 0.5 on 150 labels.
    ``overwrite``: factor a Fortran-ordered float64 A in place.
    """
    (geqrt,) = scipy.linalg.get_lapack_funcs(("geqrt",), (A,))
    packed, T, info = geqrt(qr_block_size(A.shape[1]), A, overwrite_a=overwrite)
    if info != 0:
        raise PmlbenchError(f"LAPACK geqrt failed (info={info}) in Schirn's C update")
    return packed, T, np.triu(packed[: A.shape[1]])


def _apply_q_blocked(
    packed: np.ndarray, T: np.ndarray, z: np.ndarray, trans: str = "N"
) -> np.ndarray:
    """``Q z`` (or ``Qᵀ z``) for the full orthogonal Q of a ``dgeqrt`` factorisation."""
    (gemqrt,) = scipy.linalg.get_lapack_funcs(("gemqrt",), (packed,))
    out, info = gemqrt(packed, T, np.asfortranarray(z, dtype=np.float64), side="L", trans=trans)
    if info != 0:
        raise PmlbenchError(f"LAPACK gemqrt failed (info={info}) in Schirn's C update")
    return out


def _orientation(sums: np.ndarray) -> np.ndarray:
    """±1 per singular pair: the sign of its right singular vector's entry sum (0: +1)."""
    return np.where(sums < 0, -1.0, 1.0)


def canonical_vector_sums(
    t: np.ndarray, work: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``(U 1ₙ, V 1_c)`` for a full SVD ``t = U S Vᵀ`` whose free choices are fixed by rule.

    Rule (pmlbench's, so that the result does not depend on the SVD routine or on rounding):
    each singular pair is oriented so that its right singular vector (in ℝ^c) has a
    non-negative entry sum; the basis of the complement of t's column space (n > c), or of
    its row space (n < c), is the trailing columns of the Householder Q of t (resp. tᵀ) with
    LAPACK's reflectors (``dlarfg``'s signs), as ``dgeqrf``/``dorgqr`` form it (``dgesvd``'s
    own choice when n >= 1.6c); computed by the blocked ``dgeqrt``, which forms the same
    reflectors, never the n x n Q.

    ``work``: where n >= c, an n x c Fortran-ordered float64 array the QR may overwrite
    instead of allocating a copy of t (the iterations reuse one).
    """
    n, c = t.shape
    if n >= c:
        if work is not None:
            np.copyto(work, t)
        packed, T, R = _householder_blocked(t if work is None else work, overwrite=work is not None)
        U_R, _, Vt = scipy.linalg.svd(R, lapack_driver="gesdd", check_finite=False)
        sign = _orientation(Vt.sum(axis=1))
        z = np.ones((n, 1))
        z[:c, 0] = U_R @ sign
        return _apply_q_blocked(packed, T, z)[:, 0], Vt.T @ sign
    # n < c: t = B S (Q_n A)ᵀ from tᵀ = Q R and R = A S Bᵀ
    packed, T, R = _householder_blocked(t.T)
    A, _, Bt = scipy.linalg.svd(R, lapack_driver="gesdd", check_finite=False)
    ones_q = _apply_q_blocked(packed, T, np.ones((c, 1)), trans="T")[:n, 0]  # 1ᵀ Q_n
    sign = _orientation(ones_q @ A)
    z = np.ones((c, 1))
    z[:n, 0] = A @ sign
    return Bt.T @ sign, _apply_q_blocked(packed, T, z)[:, 0]


def singular_vector_sums(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(U 1ₙ, V 1_c)`` for the full SVD ``t = U S Vᵀ`` as LAPACK's ``dgesvd`` returns it.

    Only ``dgesvd``'s choices of signs and of the complement basis make these sums defined
    (see the module docstring). Where n >= ⌊1.6c⌋ ``dgesvd`` runs the Householder QR of t,
    the SVD of R and keeps Q's trailing columns; this reproduces that without the n x n U.
    """
    n, c = t.shape
    if n < c or n < dgesvd_crossover(c):
        U, _, Vt = scipy.linalg.svd(
            t, full_matrices=True, lapack_driver="gesvd", check_finite=False
        )
        return U.sum(axis=1), Vt.sum(axis=0)
    qr, tau, R = _householder(t)
    U_R, _, Vt = scipy.linalg.svd(R, lapack_driver="gesvd", check_finite=False)
    z = np.ones((n, 1))
    z[:c, 0] = U_R.sum(axis=1)
    return _apply_q(qr, tau, z)[:, 0], Vt.sum(axis=0)


def update_c(t: np.ndarray, shift: float, c_update: str) -> np.ndarray:
    """Step 3: ``C`` from ``t`` and the shift λ/ω.

    ``code``: λ/ω added to every entry of the full S (``optimizeC.m``), i.e.
    ``t + shift (U 1)(V 1)ᵀ`` with the SVD's free choices fixed by
    :func:`canonical_vector_sums`; ``lapack``: the same with LAPACK ``dgesvd``'s own choices
    (:func:`singular_vector_sums`); ``singular_values``: added to the singular values only,
    ``t + shift U_c V_cᵀ`` (thin SVD). With shift >= 0 no entry of S + shift is negative,
    so the code's clipping at 0 never acts.
    """
    return t + shift * c_direction(t, c_update)


def c_direction(
    t: np.ndarray,
    c_update: str,
    *,
    work: np.ndarray | None = None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """The matrix that step 3 adds to ``t`` times λ/ω: ``(U 1)(V 1)ᵀ`` or ``U_c V_cᵀ``
    (:func:`update_c`). It does not depend on λ.

    ``work`` (n x c, Fortran order) may be overwritten by the factorisation of t, and ``out``
    (n x c) receives the result: buffers the iterations reuse, the same numbers.
    """
    if c_update == "code":
        u, v = canonical_vector_sums(t, work)
    elif c_update == "lapack":
        u, v = singular_vector_sums(t)
    else:
        if work is not None:
            np.copyto(work, t)
        U, _, Vt = scipy.linalg.svd(
            t if work is None else work,
            full_matrices=False,
            lapack_driver="gesdd",
            check_finite=False,
            overwrite_a=work is not None,
        )
        return np.matmul(U, Vt, out=out)
    return np.multiply(u[:, None], v[None, :], out=out)  # np.outer(u, v)


def update_p(Y: np.ndarray, C: np.ndarray, alpha: float) -> np.ndarray:
    """Step 2 (``optimizeP.m``): soft-threshold Y − C at α/2, clip to [0, Y], round at ½.

    A positive value above ½ needs Y − C − α/2 > ½ on a candidate; elsewhere the clipping
    gives 0. Returns a boolean n x c matrix.
    """
    return (Y == 1) & ((Y - C) - alpha / 2 > 0.5)


def w_coefficients(
    Ux: np.ndarray,
    s: np.ndarray,
    C: np.ndarray,
    phi: np.ndarray,
    rho: float,
    beta: float,
    scratch: np.ndarray | None = None,
) -> np.ndarray:
    """Step 1 in the basis of X's thin SVD X = U_x diag(s) V_xᵀ: the coefficients Z with
    ``W = V_x Z = (2βI + ρXᵀX)⁻¹ Xᵀ(ρC − Φ)``, i.e. ``Z = diag(s / (2β + ρs²)) U_xᵀ(ρC − Φ)``.
    ``scratch`` (n x c) receives ρC − Φ instead of a new array.
    """
    return (s / (2.0 * beta + rho * s * s))[:, None] * (
        Ux.T @ _rho_c_minus_phi(C, phi, rho, scratch)
    )


def _rho_c_minus_phi(
    C: np.ndarray, phi: np.ndarray, rho: float, scratch: np.ndarray | None
) -> np.ndarray:
    """``ρC − Φ``, in ``scratch`` where given (the same two roundings)."""
    M = np.multiply(C, rho, out=scratch)
    M -= phi
    return M


@dataclass
class SchirnSolution:
    """Output of :func:`schirn_solve`."""

    W: np.ndarray  # d x c
    P: np.ndarray  # n x c uint8, the candidate labels marked noisy
    C: np.ndarray  # n x c, the recovered label matrix (the split variable)
    n_changed: list[int]  # entries of P that changed in each iteration
    w_change: list[float]  # ‖W_k − W_{k−1}‖_F from the second iteration on
    residual: float  # ‖XW − C‖_F at the end


@dataclass
class SchirnSystem:
    """What Schirn's iterations share for any λ, α and β (:func:`schirn_system`): the thin
    SVD of X, the candidates, and which way step 1 multiplies."""

    X: np.ndarray | sp.csr_matrix | None  # the sparse features, where step 1 goes through them
    Ux: np.ndarray | None  # left singular vectors, where step 1 goes through them
    s: np.ndarray
    Vxt: np.ndarray
    two_y: np.ndarray  # 2Y, n x c
    candidates: np.ndarray  # flat indices of the candidate labels


def schirn_system(X, Y: np.ndarray) -> SchirnSystem:
    """The thin SVD of ``X`` (n x d, dense or sparse) and the candidates of ``Y`` (n x c).

    Step 1's ``XW = U_x diag(s²/(2β + ρs²)) U_xᵀ M`` (M = ρC − Φ) equals
    ``X V_x diag(1/(2β + ρs²)) V_xᵀ Xᵀ M``, since ``X V_x = U_x diag(s)``. For sparse X that
    costs 2(nnz(X) + d r) c multiplications instead of 2 n r c (r = min(n, d)): 2, 5 and 10
    times fewer on bibtex, corel5k and delicious. The two agree to rounding (about 1e-15
    relative per step).
    """
    n, d = X.shape
    dense = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    Ux, s, Vxt = scipy.linalg.svd(
        dense, full_matrices=False, lapack_driver="gesdd", check_finite=False
    )
    r = s.size
    through_features = sp.issparse(X) and 2 * X.nnz + d * r < n * r
    return SchirnSystem(
        X=sp.csr_matrix(X) if through_features else None,
        Ux=None if through_features else Ux,
        s=s,
        Vxt=Vxt,
        two_y=2.0 * Y.astype(np.float64),
        candidates=np.flatnonzero(Y),
    )


def w_step(
    system: SchirnSystem,
    C: np.ndarray,
    phi: np.ndarray,
    rho: float,
    beta: float,
    scratch: np.ndarray | None = None,
):
    """Step 1: the coefficients Z of ``W = V_x Z`` (:func:`w_coefficients`) and ``XW``;
    ``scratch`` (n x c) holds ρC − Φ instead of a new array."""
    s, Vxt = system.s, system.Vxt
    if system.X is None:
        assert system.Ux is not None  # kept exactly when the features are not
        coef = w_coefficients(system.Ux, s, C, phi, rho, beta, scratch)
        return coef, system.Ux @ (s[:, None] * coef)
    X = system.X
    M = _rho_c_minus_phi(C, phi, rho, scratch)
    coef = (1.0 / (2.0 * beta + rho * s * s))[:, None] * (Vxt @ np.asarray(X.T @ M))
    return coef, np.asarray(X @ (Vxt.T @ coef))


@dataclass
class _Branch:
    """Iterates shared by the settings ``members`` (indices into the (λ, α) list)."""

    members: list[int]
    C: np.ndarray
    phi: np.ndarray
    P: np.ndarray  # bool, on the candidates
    rho: float
    done: int = 0
    coef: np.ndarray | None = None
    XW: np.ndarray | None = None
    n_changed: list[int] = field(default_factory=list)
    w_change: list[float] = field(default_factory=list)


@dataclass
class _Workspace:
    """The n x c buffers one run of the iterations reuses instead of allocating new arrays
    (a new array of delicious's 8052 x 983 costs about as much system time, for its pages,
    as an arithmetic pass over it). Results do not depend on them: the same operations
    write into them."""

    scratch: np.ndarray  # ρC − Φ in step 1, ρXW in t, ρ(XW − C) in step 4
    t: np.ndarray
    factor: np.ndarray | None  # Fortran order: the input step 3's QR (or SVD) overwrites

    @classmethod
    def for_shape(cls, shape: tuple[int, int], c_update: str) -> _Workspace:
        factored = c_update == "singular_values" or (c_update == "code" and shape[0] >= shape[1])
        return cls(
            scratch=np.empty(shape),
            t=np.empty(shape),
            factor=np.empty(shape, order="F") if factored else None,
        )


def schirn_paths(
    system: SchirnSystem,
    settings: list[tuple[float, float]],
    beta: float,
    *,
    max_iter: int = 100,
    rho: float = 1e-4,
    rho_growth: float = 1.1,
    rho_max: float = 10.0,
    c_update: str = "code",
) -> Iterator[tuple[int, SchirnSolution]]:
    """Run the augmented Lagrangian for every (λ, α) of ``settings`` at once; yields
    ``(index, solution)`` as each finishes.

    Settings share their iterates for as long as they are equal: all of them share step 1
    of the first iteration; α only enters step 2 (a candidate is noisy iff C < ½ − α/2), so
    settings that differ only in α share every iteration until their noisy labels first
    differ; λ only scales the matrix that step 3 adds, so the factorisation of t is shared
    by every λ. Each setting's numbers are exactly those of :func:`schirn_solve` for it.
    """
    if c_update not in C_UPDATES:
        raise PmlbenchError(f"unknown Schirn c_update {c_update!r}; use one of {list(C_UPDATES)}")
    shape = system.two_y.shape
    cand = system.candidates
    stack = [
        _Branch(
            members=list(range(len(settings))),
            C=np.ones(shape),
            phi=np.ones(shape),
            P=np.zeros(cand.size, dtype=bool),
            rho=rho,
        )
    ]
    work = _Workspace.for_shape(shape, c_update)
    while stack:
        branch = stack.pop()
        while branch.done < max_iter:
            children = _iteration(
                system, branch, settings, beta, rho_growth, rho_max, c_update, work
            )
            if len(children) > 1:
                stack.extend(reversed(children))
                break
            branch = children[0]
        else:
            assert branch.coef is not None and branch.XW is not None
            W = system.Vxt.T @ branch.coef
            P = np.zeros(branch.C.size, dtype=np.uint8)
            P[cand[branch.P]] = 1
            solution = SchirnSolution(
                W=W,
                P=P.reshape(shape),
                C=branch.C,
                n_changed=branch.n_changed,
                w_change=branch.w_change,
                residual=float(np.linalg.norm(branch.XW - branch.C)),
            )
            for index in branch.members:
                yield index, solution


def _iteration(
    system: SchirnSystem,
    branch: _Branch,
    settings: list[tuple[float, float]],
    beta: float,
    rho_growth: float,
    rho_max: float,
    c_update: str,
    work: _Workspace,
) -> list[_Branch]:
    """Steps 1-4 of one iteration for a branch: one child per distinct outcome.

    The branch's own C and Φ are read no more by anyone after this (the paths drop it): the
    first child's C and the last child's Φ take over their memory.
    """
    rho, cand = branch.rho, system.candidates
    coef, XW = w_step(system, branch.C, branch.phi, rho, beta, work.scratch)
    w_change = list(branch.w_change)
    if branch.coef is not None:
        w_change.append(float(np.linalg.norm(coef - branch.coef)))
    # step 2 (update_p) on the candidates, the only entries it can mark; settings whose
    # noisy labels come out equal stay together
    C_c = branch.C.reshape(-1)[cand]
    groups: list[tuple[np.ndarray, list[int]]] = []
    for alpha, members in _by(branch.members, settings, 1).items():
        P = (1.0 - C_c) - alpha / 2 > 0.5
        same = next((group for group in groups if np.array_equal(group[0], P)), None)
        if same is None:
            groups.append((P, members))
        else:
            same[1].extend(members)
    omega = 1.0 + 0.5 * rho
    next_rho = min(rho_growth * rho, rho_max)
    children: list[_Branch] = []
    spare_c = [branch.C]
    n_children = sum(len(_by(members, settings, 0)) for _, members in groups)
    for P, members in groups:
        n_changed = [*branch.n_changed, int(np.count_nonzero(P != branch.P))]
        # t = (2Y − 2P + Φ + ρXW) / 2ω, in place, the same operations in the same order
        t = work.t
        np.copyto(t, system.two_y)
        t.reshape(-1)[cand[P]] = 0.0
        t += branch.phi
        t += np.multiply(XW, rho, out=work.scratch)
        t /= 2.0 * omega
        direction = c_direction(
            t, c_update, work=work.factor, out=spare_c.pop() if spare_c else None
        )
        by_lam = _by(members, settings, 0)
        for position, (lam, same_lam) in enumerate(by_lam.items()):
            C = direction if position == len(by_lam) - 1 else direction.copy()
            C *= lam / omega  # step 3: C = t + (λ/ω) direction
            C += t
            step = np.subtract(XW, C, out=work.scratch)  # step 4: Φ + ρ(XW − C)
            step *= rho
            last = len(children) == n_children - 1
            phi = np.add(branch.phi, step, out=branch.phi if last else None)
            children.append(
                _Branch(
                    members=same_lam,
                    C=C,
                    phi=phi,
                    P=P,
                    rho=next_rho,
                    done=branch.done + 1,
                    coef=coef,
                    XW=XW,
                    n_changed=n_changed,
                    w_change=w_change,
                )
            )
    return children


def _by(members: list[int], settings: list[tuple[float, float]], which: int) -> dict:
    """``members`` grouped by entry ``which`` of their setting, in order of first appearance."""
    groups: dict[float, list[int]] = {}
    for member in members:
        groups.setdefault(settings[member][which], []).append(member)
    return groups


def schirn_solve(
    X,
    Y: np.ndarray,
    lam: float,
    alpha: float,
    beta: float,
    *,
    max_iter: int = 100,
    rho: float = 1e-4,
    rho_growth: float = 1.1,
    rho_max: float = 10.0,
    c_update: str = "code",
) -> SchirnSolution:
    """Run ``max_iter`` iterations of the augmented Lagrangian of ``DiscrementalMLC_train.m``.

    ``X`` is n x d (dense or sparse), ``Y`` the n x c 0/1 candidate matrix, ``beta > 0``.
    """
    if c_update not in C_UPDATES:
        raise PmlbenchError(f"unknown Schirn c_update {c_update!r}; use one of {list(C_UPDATES)}")
    paths = schirn_paths(
        schirn_system(X, Y),
        [(float(lam), float(alpha))],
        beta,
        max_iter=max_iter,
        rho=rho,
        rho_growth=rho_growth,
        rho_max=rho_max,
        c_update=c_update,
    )
    return next(paths)[1]


def _inputs(X, Y) -> tuple:
    """Checked training features and candidate labels."""
    X = check_features(X)
    return X, check_label_matrix(Y, what="candidate labels", n_rows=X.shape[0])


class Schirn(ValidatedParameters, BaseEstimator):
    """Schirn (Si et al. 2025): a linear predictor with a sparse noisy-label matrix and a
    negative nuclear norm that keeps the predicted label matrix high-rank.

    Args:
        lam: λ, weight of the negative nuclear norm −λ‖XW‖_* (``readme.m``: 0.04), >= 0.
        alpha: α, ℓ1 weight on the noisy-label matrix P (0.5), >= 0. A candidate is marked
            noisy when the recovered label C is below ½ − α/2 there.
        beta: β, ridge weight on W (0.1), > 0.
        max_iter: iterations, all of them run (authors: 100).
        threshold: ``predict`` keeps labels whose score XW is strictly above this
            (``evalt.m``: 0.8).
        c_update: "code" (default): λ/ω added to every entry of the full singular-value
            matrix, as ``optimizeC.m`` does, with LAPACK ``dgesvd``'s choice of singular
            vectors; "singular_values": added to the singular values only (the proximal
            step of the negative nuclear norm). docs/methods/schirn.md explains the
            difference.
        max_order: the largest thin SVD of the features Schirn takes on: min(training
            instances, features). Larger inputs are refused before any work with
            :class:`~pmlbench.errors.NotApplicable` (None: no cap). The default 4000 admits
            every bundled dataset (the largest order is the yeast GO sets' 3069).
        max_order_labels: the largest product of that order and the number of labels
            Schirn takes on, the size of its per-iteration products in the SVD's basis;
            larger inputs are refused before any work (None: no cap). The default 600,000
            admits delicious (500 x 983), yeastcc and yeastmf (3069 x 50 and x 39) and
            refuses yeastbp (3069 x 217), where Schirn took 65 times ML-kNN's CPU time
            tuned, over the suite's budget (docs/scaling.md, "The one budget").
        max_labels: the most labels Schirn takes on: each of the ``max_iter`` iterations
            factors an n x labels matrix (O(n · labels²)). Larger label sets are refused
            up front (None: no cap). The default 1000 admits every bundled dataset
            (delicious, 983 labels, took 7.6 times ML-kNN's CPU time per split).
        blas_threads: BLAS threads during fit and predict (None: the library default).
    """

    default_bipartition = {"rule": "method"}
    # readme.m's α range around the demo value (docs/methods/schirn.md, "Tuning grid")
    default_tuning_grid = {"alpha": [0.5, 1.0, 2.0]}
    parameter_constraints = {
        "lam": [Interval(float, 0, None)],
        "alpha": [Interval(float, 0, None)],
        "beta": [Interval(float, 0, None, closed="neither")],
        "max_iter": [Interval(int, 1, None)],
        "threshold": [Interval(float)],
        "c_update": [Options(C_UPDATES)],
        "max_order": [None, Interval(int, 1, None)],
        "max_order_labels": [None, Interval(int, 1, None)],
        "max_labels": [None, Interval(int, 1, None)],
        "blas_threads": [None, Interval(int, 1, None)],
    }

    def __init__(
        self,
        lam: float = 0.04,
        alpha: float = 0.5,
        beta: float = 0.1,
        max_iter: int = 100,
        threshold: float = 0.8,
        c_update: str = "code",
        max_order: int | None = 4000,
        max_order_labels: int | None = 600_000,
        max_labels: int | None = 1000,
        blas_threads: int | None = 1,
    ):
        self.lam = lam
        self.alpha = alpha
        self.beta = beta
        self.max_iter = max_iter
        self.threshold = threshold
        self.c_update = c_update
        self.max_order = max_order
        self.max_order_labels = max_order_labels
        self.max_labels = max_labels
        self.blas_threads = blas_threads

    def fit(self, X, Y) -> Schirn:
        """Run the updates on the candidate labels; keep W (and P, C for inspection)."""
        self._validate_params()
        start = time.perf_counter()
        X, Y = _inputs(X, Y)
        self._refuse_over_caps(X, Y)
        with threadpool_limits(self.blas_threads, user_api="blas"):
            solution = schirn_solve(
                X,
                Y,
                float(self.lam),
                float(self.alpha),
                float(self.beta),
                max_iter=int(self.max_iter),
                c_update=self.c_update,
            )
        return self._adopt(solution, X, Y, start)

    def fit_grid(self, X, Y, points) -> Iterator[tuple[int, Schirn]]:
        """Fit every grid point (tuning's hook, :meth:`pmlbench.plugin.MethodHooks.fit_grid`).

        One thin SVD of X for the whole grid. Points that differ only in ``lam``, ``alpha``
        and ``threshold`` run together through :func:`schirn_paths`, sharing their iterates
        for as long as these are equal; each point's numbers are exactly those of a fit from
        scratch (tests/test_schirn.py).
        """
        start = time.perf_counter()
        models = [clone(self).set_params(**point) for point in points]
        for model in models:
            model._validate_params()
        X, Y = _inputs(X, Y)
        groups: dict[tuple, list[int]] = {}
        for index, model in enumerate(models):
            model._refuse_over_caps(X, Y)
            params = model.get_params(deep=False)
            key = tuple(sorted((k, v) for k, v in params.items() if k not in _PER_PATH))
            groups.setdefault(key, []).append(index)
        system = None
        for indices in groups.values():
            first = models[indices[0]]
            with threadpool_limits(first.blas_threads, user_api="blas"):
                if system is None:
                    system = schirn_system(X, Y)
                paths = schirn_paths(
                    system,
                    [(float(models[i].lam), float(models[i].alpha)) for i in indices],
                    float(first.beta),
                    max_iter=int(first.max_iter),
                    c_update=first.c_update,
                )
            while True:
                # the BLAS limit holds while the paths run, not while the caller scores a fit
                with threadpool_limits(first.blas_threads, user_api="blas"):
                    finished = next(paths, None)
                if finished is None:
                    break
                member, solution = finished
                index = indices[member]
                yield index, models[index]._adopt(solution, X, Y, start)

    def _refuse_over_caps(self, X, Y: np.ndarray) -> None:
        """Refuse inputs over ``max_order``, ``max_order_labels`` or ``max_labels`` before
        any work."""
        n, d = X.shape
        order = min(n, d)
        if self.max_order is not None and order > self.max_order:
            raise NotApplicable(
                f"Schirn on {n} training instances x {d} features needs a thin SVD of order "
                f"{order}, over method.max_order={self.max_order} (set for the suite's budget, "
                f"{BUDGET_NOTE}); set method.max_order=null to run it anyway"
            )
        q = Y.shape[1]
        if self.max_order_labels is not None and order * q > self.max_order_labels:
            raise NotApplicable(
                f"Schirn on {n} training instances x {d} features x {q} labels multiplies "
                f"{order} x {q} matrices in the thin SVD's basis in each of its "
                f"{self.max_iter} iterations, order x labels = {order * q:,}, over "
                f"method.max_order_labels={self.max_order_labels} (set for the suite's "
                f"budget, {BUDGET_NOTE}); set method.max_order_labels=null to run it anyway"
            )
        if self.max_labels is not None and q > self.max_labels:
            raise NotApplicable(
                f"Schirn on {q} labels factors a {n} x {q} matrix in each of its "
                f"{self.max_iter} iterations, over method.max_labels={self.max_labels} (set "
                f"for the suite's budget, {BUDGET_NOTE}); set method.max_labels=null to run it "
                "anyway"
            )

    def _adopt(self, solution: SchirnSolution, X, Y: np.ndarray, start: float) -> Schirn:
        """Keep a solution as the fitted model, with its diagnostics."""
        self.W_, self.noisy_labels_ = solution.W, solution.P
        self.recovered_labels_ = solution.C
        # the recovered label matrix C (the split variable, ≈ XW): a candidate is marked
        # noisy where C < ½ − α/2 (step 2, read in the next iteration)
        self.disambiguation_scores_ = solution.C
        self.n_features_in_ = X.shape[1]
        last_change = next(
            (len(solution.n_changed) - i for i, c in enumerate(reversed(solution.n_changed)) if c),
            0,
        )
        n_candidates = int(Y.sum())
        n_noisy = int(solution.P.sum())
        self.diagnostics_ = {
            "c_update": self.c_update,
            "noisy_labels": n_noisy,
            "noisy_fraction": round(n_noisy / max(n_candidates, 1), 4),
            "last_change": last_change,  # the iteration after which P no longer changed
            "changes_last_iteration": solution.n_changed[-1],
            "w_change_last": (float(f"{solution.w_change[-1]:.4g}") if solution.w_change else None),
            "residual": float(f"{solution.residual:.4g}"),  # ‖XW − C‖_F at the end
            "fit_seconds": round(time.perf_counter() - start, 3),
        }
        return self

    def decision_function(self, X) -> np.ndarray:
        """``X W`` (n x labels), the scores of ``run_arts.m``."""
        X = check_features(X)
        if X.shape[1] != self.n_features_in_:
            raise PmlbenchError(
                f"Schirn was fitted on {self.n_features_in_} features, got {X.shape[1]}; "
                "use the same feature space for test data"
            )
        with threadpool_limits(self.blas_threads, user_api="blas"):
            return np.asarray(X @ self.W_)

    def predict(self, X) -> np.ndarray:
        """Labels whose score is strictly above ``threshold`` (``evalt.m``'s rule)."""
        return (self.decision_function(X) > self.threshold).astype(np.uint8)
