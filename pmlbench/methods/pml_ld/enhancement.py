"""PML-LD, stage 1: label enhancement (candidate labels -> label distributions).

The model of the authors' ``LE/AMTrain.m``. Training features ``X`` (n x d, z-scored) give

- ``F = [H, 1]``, n x (n+1): the RBF kernel ``H_ij = exp(-‖x_i − x_j‖² / (2 s²))`` with
  ``s`` the mean pairwise distance, and a bias column (``kernelmatrix.m``);
- ``G = D − A``, the Laplacian of the symmetrised kNN graph (each instance and its ``K − 1``
  nearest others, i.e. ``knnsearch`` with ``K`` neighbours, self included) weighted by
  ``A_ij = exp(-‖x_i − x_j‖² / (2σ²))``, σ = 10;
- k-means groups ``g = 1..m`` of the instances, each with a label-correlation factor
  ``Z_g`` (l x l) whose rows have unit norm: ``Z_g Z_gᵀ`` is a correlation matrix (the
  elliptope).

With the candidate matrix ``Y`` (n x l) and ``P = F Wᵀ`` (n x l, the enhanced labels), the
objective the code minimises (``object.m``) is::

    J(W, Z) = ‖P − Y‖²_F + λ1 tr(Pᵀ G P) + λ2 Σ_g ‖P_g Z_g‖²_F            (P = F Wᵀ)

where ``P_g`` are group g's rows of P. ``‖P_g Z_g‖² = tr(Z_gᵀ P_gᵀ P_g Z_g)`` penalises
labels that the correlation ``Z_g Z_gᵀ`` ties together but the group's predictions do not
(the paper's local label correlation). Its steps:

1. ``InitW.m``: W from ``min ‖P − Y‖² + λ1 tr(Pᵀ G P)`` by the authors' quasi-Newton routine
   from a uniform random start, stopped after 300 iterations, far from the minimiser (a
   port of that routine by default, see :func:`init_w` and
   :mod:`~pmlbench.methods.pml_ld.quasi_newton`).
2. ``maxIter`` alternations (``AMTrain.m`` forces one) of
   ``UpdateS.m``, per group: ``min_Z ‖P_g Z‖²`` over unit-norm rows, from a uniform random
   ``Z_g`` (l x l), by manopt's steepest descent on ``elliptopefactory(l, l)``, and
   ``UpdateW.m``: ``min_W J(W, Z)`` by manopt's steepest descent on ``euclideanfactory``,
   both with at most 5 iterations (:func:`manopt_steepest_descent` reproduces manopt's
   solver, line search and stopping rules step for step).
3. The enhanced labels are ``P = F Wᵀ``; ``main.m`` turns each row into a distribution by a
   softmax before the regressor (:mod:`pmlbench.methods.pml_ld.msvr`).

Every quantity depends on W only through ``P = F Wᵀ``, so the n x (n+1) products are
taken once per gradient, never per cost evaluation, and no (n+1) x (n+1) matrix
(``FᵀF``, ``FᵀGF``, the per-group ``F_gᵀF_g`` of the authors' code) is formed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.optimize
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from pmlbench.methods.pml_ld.quasi_newton import fminlbfgs
from pmlbench.numerics.kmeans import kmeans_labels
from pmlbench.numerics.matlab import MATLAB_EPS

# --------------------------------------------------------------------------------------
# Features, graph and groups
# --------------------------------------------------------------------------------------


def zscore_fit(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column means and standard deviations (n − 1 normalisation, 0 replaced by 1), as
    MATLAB's ``zscore``; fitted on the training rows only."""
    mean = X.mean(axis=0)
    std = X.std(axis=0, ddof=1) if X.shape[0] > 1 else np.zeros(X.shape[1])
    std[std == 0] = 1.0
    return mean, std


def squared_distances(A: np.ndarray, B: np.ndarray | None = None) -> np.ndarray:
    """``‖a_i − b_j‖²`` by the expansion ``‖a‖² + ‖b‖² − 2 a·b`` (clipped at 0), as
    ``kernelmatrix.m`` and ``L2_distance.m``; the diagonal is exactly 0 when ``B`` is None."""
    a2 = np.einsum("ij,ij->i", A, A)
    if B is None:
        D = A @ A.T
        D *= -2.0
        D += a2[:, None]
        D += a2[None, :]
        np.fill_diagonal(D, 0.0)
    else:
        D = A @ B.T
        D *= -2.0
        D += a2[:, None]
        D += np.einsum("ij,ij->i", B, B)[None, :]
    np.maximum(D, 0.0, out=D)
    return D


def mean_pairwise_distance(D2: np.ndarray) -> float:
    """``mean(pdist(X))``: the mean Euclidean distance over the pairs i < j."""
    n = D2.shape[0]
    if n < 2:
        return 1.0
    total = 0.0
    for i in range(n - 1):  # row by row: no n x n temporary beside D2
        total += float(np.sqrt(D2[i, i + 1 :]).sum())
    return total / (n * (n - 1) / 2)


def knn_including_self(D2: np.ndarray, k: int) -> np.ndarray:
    """The k nearest rows of every row, the row itself included (``knnsearch(X, X, 'K', k)``);
    ties go to the lower index, as MATLAB's stable sort."""
    n = D2.shape[0]
    k = min(k, n)
    out = np.empty((n, k), dtype=np.int64)
    for start in range(0, n, 1024):
        block = D2[start : start + 1024]
        kth = np.partition(block, k - 1, axis=1)[:, k - 1 : k]
        for r in range(block.shape[0]):
            cols = np.flatnonzero(block[r] <= kth[r])
            cols = cols[np.argsort(block[r, cols], kind="stable")][:k]
            out[start + r] = cols
    return out


def graph_laplacian(D2: np.ndarray, k: int, sigma: float) -> sp.csr_matrix:
    """``G = diag(A1) − A`` of the symmetrised kNN graph with Gaussian weights (``AMTrain.m``):
    ``A_ij = exp(−‖x_i − x_j‖² / (2σ²))`` when i is among j's k nearest or j among i's, 0 on
    the diagonal."""
    n = D2.shape[0]
    neighbours = knn_including_self(D2, k)
    rows = np.repeat(np.arange(n), neighbours.shape[1])
    cols = neighbours.ravel()
    mask = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n))
    mask = ((mask + mask.T) > 0).tocoo()
    keep = mask.row != mask.col
    r, c = mask.row[keep], mask.col[keep]
    A = sp.csr_matrix((np.exp(-D2[r, c] / (2.0 * sigma**2)), (r, c)), shape=(n, n))
    degree = np.asarray(A.sum(axis=1)).ravel()
    return (sp.diags(degree) - A).tocsr()


def kmeans_groups(X: np.ndarray, n_groups: int, seed: int) -> np.ndarray:
    """k-means labels of the instances (``kmeans(X, g, 'emptyaction', 'drop')``): k-means++
    seeding, one run, at most 100 iterations, at most ``min(g, n)`` groups, by
    :func:`pmlbench.numerics.kmeans.kmeans_labels`, whose assignments are the same on every
    machine (scikit-learn's assign equidistant points by BLAS rounding). Like MATLAB's
    'drop', a group that empties disappears and the rest are renumbered."""
    return kmeans_labels(X, min(int(n_groups), X.shape[0]), int(seed))


def group_rows(labels: np.ndarray) -> list[np.ndarray]:
    """Row indices of each group, groups in ascending label order (``InitGroup.m``)."""
    return [np.flatnonzero(labels == g) for g in np.unique(labels)]


@dataclass
class KernelFeatures:
    """``F = [H, 1]`` without storing the ones column."""

    H: np.ndarray  # n x n, symmetric

    @property
    def n(self) -> int:
        return self.H.shape[0]

    def times_wt(self, W: np.ndarray) -> np.ndarray:
        """``F Wᵀ`` (n x l) for W of shape l x (n+1)."""
        return self.H @ W[:, :-1].T + W[:, -1][None, :]

    def t_times(self, R: np.ndarray) -> np.ndarray:
        """``Rᵀ F`` (l x (n+1)) for R of shape n x l."""
        return np.hstack([(self.H @ R).T, R.sum(axis=0)[:, None]])


# --------------------------------------------------------------------------------------
# manopt's steepest descent, as vendored in the authors' repository
# --------------------------------------------------------------------------------------


@dataclass
class DescentInfo:
    """What :func:`manopt_steepest_descent` did."""

    costs: list[float] = field(default_factory=list)
    stepsizes: list[float] = field(default_factory=list)
    reason: str = ""

    @property
    def iterations(self) -> int:
        return len(self.costs) - 1


def manopt_stopfun(costs: list[float], tol: float = 1e-5) -> bool:
    """``mystopfun.m``: stop once the three cost changes before the current iterate are all
    below ``tol`` (never before the fifth iterate)."""
    last = len(costs)  # MATLAB's 1-based index of the current iterate
    if last < 5:
        return False
    return all(abs(costs[last - i - 1] - costs[last - i - 2]) < tol for i in (1, 2, 3))


def manopt_steepest_descent(
    x: Any,
    cost: Callable[[Any], float],
    gradient: Callable[[Any], tuple[Any, float]],
    step: Callable[[Any, Any, float], Any],
    *,
    max_iter: int,
    tol_gradnorm: float = 1e-6,
    min_stepsize: float = 1e-10,
) -> tuple[Any, DescentInfo]:
    """manopt 1.x ``steepestdescent`` with its default backtracking ``linesearch``.

    ``gradient(x)`` returns (the descent-relevant gradient object, its norm); ``step(x, g, t)``
    returns the retraction of ``x − t g``. Stopping tests in manopt's order before every
    iteration: gradient norm < ``tol_gradnorm``, ``max_iter`` iterations, ``mystopfun``, last
    step < ``min_stepsize``. Line search: first trial step ``1/‖g‖``, later
    ``2 · 2(f − f_prev)/(−‖g‖²)`` (manopt's "optimism" 2; back to ``1/‖g‖`` when that is not
    positive), halved until the Armijo condition ``f_new ≤ f + 10⁻⁴ α (−‖g‖²)`` holds or 25
    costs were evaluated; no step when the final trial is still worse than f.
    """
    f = cost(x)
    g, gnorm = gradient(x)
    info = DescentInfo(costs=[f])
    previous_f: float | None = None
    stepsize = float("nan")
    while True:
        if gnorm < tol_gradnorm:
            info.reason = "gradient norm"
            break
        if info.iterations >= max_iter:
            info.reason = "max iterations"
            break
        if manopt_stopfun(info.costs):
            info.reason = "stopfun"
            break
        if stepsize < min_stepsize:  # NaN (first iteration) compares False, as in MATLAB
            info.reason = "min stepsize"
            break
        slope = -(gnorm**2)
        alpha = float("nan")
        if previous_f is not None:
            alpha = 2.0 * (2.0 * (f - previous_f) / slope)
        if np.isnan(alpha) or alpha * gnorm <= MATLAB_EPS:
            alpha = 1.0 / gnorm
        new_x = step(x, g, alpha)
        new_f = cost(new_x)
        evaluations = 1
        while new_f > f + 1e-4 * alpha * slope:
            alpha *= 0.5
            new_x = step(x, g, alpha)
            new_f = cost(new_x)
            evaluations += 1
            if evaluations >= 25:
                break
        if new_f > f:
            alpha, new_x = 0.0, x
        stepsize = alpha * gnorm
        previous_f = f
        x = new_x
        f = cost(x)
        g, gnorm = gradient(x)
        info.costs.append(f)
        info.stepsizes.append(stepsize)
    return x, info


def normalize_rows(Z: np.ndarray) -> np.ndarray:
    """The elliptope retraction's normalisation: every row scaled to unit norm."""
    return Z / np.sqrt(np.einsum("ij,ij->i", Z, Z))[:, None]


def update_s(Z: np.ndarray, Pg: np.ndarray, max_iter: int) -> tuple[np.ndarray, DescentInfo]:
    """``UpdateS.m`` for one group: ``min_Z ‖P_g Z‖²_F = tr(Zᵀ P_gᵀ P_g Z)`` with unit-norm
    rows of Z, from Z as given (the authors' start, uniform random, is not normalised).

    The code hands manopt the Euclidean gradient ``2 P_gᵀ P_g Z`` as the Riemannian one (no
    projection onto the tangent space) and the elliptope's retraction normalises the rows of
    ``Z − t·grad``: a projected gradient method on the unit-norm rows, reproduced as such.
    """
    if Pg.shape[0] < Pg.shape[1]:  # n_g < l: go through P_g, n_g l² per product

        def cost(Zc: np.ndarray) -> float:
            return float(np.sum((Pg @ Zc) ** 2))

        def gradient(Zc: np.ndarray) -> tuple[np.ndarray, float]:
            g = 2.0 * (Pg.T @ (Pg @ Zc))
            return g, float(np.linalg.norm(g))

    else:
        M = Pg.T @ Pg

        def cost(Zc: np.ndarray) -> float:
            return float(np.sum(Zc * (M @ Zc)))

        def gradient(Zc: np.ndarray) -> tuple[np.ndarray, float]:
            g = 2.0 * (M @ Zc)
            return g, float(np.linalg.norm(g))

    def step(Zc: np.ndarray, g: np.ndarray, t: float) -> np.ndarray:
        return normalize_rows(Zc - t * g)

    return manopt_steepest_descent(Z, cost, gradient, step, max_iter=max_iter)


@dataclass
class WPoint:
    """A point W (l x (n+1)) of ``UpdateW.m``'s Euclidean problem with ``P = F Wᵀ`` beside it."""

    W: np.ndarray
    P: np.ndarray


@dataclass
class WGradient:
    """The gradient in W (l x (n+1)) and its image ``F gradᵀ`` (n x l)."""

    W: np.ndarray
    P: np.ndarray


def objective(
    P: np.ndarray,
    Y: np.ndarray,
    G: sp.csr_matrix,
    groups: list[np.ndarray],
    Z: list[np.ndarray],
    lambda1: float,
    lambda2: float,
) -> float:
    """``J = ‖P − Y‖² + λ1 tr(Pᵀ G P) + λ2 Σ_g ‖P_g Z_g‖²`` (``object.m``, ``Wcost`` of
    ``UpdateW.m``)."""
    value = float(np.sum((P - Y) ** 2)) + lambda1 * float(np.sum(P * (G @ P)))
    for rows, Zg in zip(groups, Z, strict=True):
        value += lambda2 * float(np.sum((P[rows] @ Zg) ** 2))
    return value


def update_w(
    W: np.ndarray,
    F: KernelFeatures,
    Y: np.ndarray,
    G: sp.csr_matrix,
    groups: list[np.ndarray],
    Z: list[np.ndarray],
    lambda1: float,
    lambda2: float,
    max_iter: int,
) -> tuple[np.ndarray, DescentInfo]:
    """``UpdateW.m``: steepest descent on ``J(·, Z)`` over W (l x (n+1)), manopt's Euclidean
    manifold, from the current W.

    Gradient (``Wgrad``): ``Rᵀ F`` with ``R = 2(P − Y) + λ1 (G + Gᵀ) P + 2λ2 [P_g Z_g Z_gᵀ]_g``.
    """
    ZZ = [Zg @ Zg.T for Zg in Z]
    GGt = G + G.T

    def cost(x: WPoint) -> float:
        return objective(x.P, Y, G, groups, Z, lambda1, lambda2)

    def gradient(x: WPoint) -> tuple[WGradient, float]:
        R = 2.0 * (x.P - Y) + lambda1 * (GGt @ x.P)
        for rows, ZZg in zip(groups, ZZ, strict=True):
            R[rows] += 2.0 * lambda2 * (x.P[rows] @ ZZg)
        gW = F.t_times(R)
        return WGradient(W=gW, P=F.times_wt(gW)), float(np.linalg.norm(gW))

    def step(x: WPoint, g: WGradient, t: float) -> WPoint:
        return WPoint(W=x.W - t * g.W, P=x.P - t * g.P)

    point, info = manopt_steepest_descent(
        WPoint(W=W, P=F.times_wt(W)), cost, gradient, step, max_iter=max_iter
    )
    return point.W, info


@dataclass
class InitResult:
    """``InitW.m``'s W (l x (n+1)) and what the optimiser reported."""

    W: np.ndarray
    iterations: int
    evaluations: int
    message: str
    gradient_inf_norm: float


INIT_SOLVERS = ("authors", "lbfgsb", "exact")
EXIT_MESSAGES = {
    1: "gradient below tolerance",
    2: "step below tolerance",
    0: "iteration limit",
    -1: "evaluation limit",
    -2: "line search failed",
    4: "objective unbounded",
}


def init_w(
    W0: np.ndarray,
    F: KernelFeatures,
    Y: np.ndarray,
    G: sp.csr_matrix,
    lambda1: float,
    *,
    solver: str = "authors",
    max_iter: int = 300,
) -> InitResult:
    """``InitW.m``: ``min_W ‖F W − Y‖² + λ1 tr(Wᵀ FᵀGF W)`` (W here (n+1) x l) from the
    uniform random ``W0``, i.e. ``min ‖P − Y‖² + λ1 tr(Pᵀ G P)`` over ``P = F W``.

    The problem is a convex quadratic with the conditioning of the kernel, and the authors
    stop after 300 iterations, well before the minimiser: the result depends on the method.

    - ``"authors"``: the authors' routine (:func:`~pmlbench.methods.pml_ld.quasi_newton.
      fminlbfgs`: BFGS below 3000 unknowns, L-BFGS above, their line search and tests).
    - ``"lbfgsb"``: scipy's L-BFGS-B with the same iteration cap and gradient test (largest
      entry below 1e-6), 20 pairs, no relative-decrease test. Markedly less converged after
      300 iterations on these problems than the authors' BFGS.
    - ``"exact"``: the minimiser itself, ``P* = (I + λ1 G)⁻¹ Y`` (:func:`init_exact`), with W
      solving ``F Wᵀ = P*`` in the least-squares sense.
    """
    n1, q = W0.shape
    if solver == "exact":
        P = init_exact(Y, G, lambda1)
        # F = [H, 1] has full row rank when H is non-singular; lstsq also covers the rest
        W = np.linalg.lstsq(np.hstack([F.H, np.ones((F.n, 1))]), P, rcond=None)[0].T
        return InitResult(
            W=W, iterations=0, evaluations=0, message="closed form", gradient_inf_norm=float("nan")
        )

    def fun(w: np.ndarray) -> tuple[float, np.ndarray]:
        P = F.times_wt(w.reshape(q, n1))
        R = P - Y
        GP = G @ P
        value = float(np.sum(R * R)) + lambda1 * float(np.sum(P * GP))
        return value, F.t_times(2.0 * R + 2.0 * lambda1 * GP).ravel()

    if solver == "authors":
        # P = F W of the line's start. The routine evaluates the gradient only at the point
        # it accepts, which starts the next line: keeping P from there, an iteration costs
        # two n x n products (F d for the line, Fᵀ R for the gradient).
        start: dict[str, np.ndarray] = {}

        class Line:
            def __init__(self, w: np.ndarray, d: np.ndarray):
                if "P" not in start:
                    start["P"] = F.times_wt(w.reshape(q, n1))
                self.P, self.Q = start["P"], F.times_wt(d.reshape(q, n1))

            def __call__(self, alpha: float) -> float:
                Pa = self.P + alpha * self.Q
                R = Pa - Y
                return float(np.sum(R * R)) + lambda1 * float(np.sum(Pa * (G @ Pa)))

            def value_and_gradient(self, alpha: float) -> tuple[float, np.ndarray]:
                Pa = self.P + alpha * self.Q
                R = Pa - Y
                GP = G @ Pa
                value = float(np.sum(R * R)) + lambda1 * float(np.sum(Pa * GP))
                start["P"] = Pa
                return value, F.t_times(2.0 * R + 2.0 * lambda1 * GP).ravel()

        along = Line
        result = fminlbfgs(fun, along, np.ascontiguousarray(W0.T).ravel(), max_iter=max_iter)
        x, iterations, evaluations = result.x, result.iterations, result.evaluations
        message = f"{result.method}: {EXIT_MESSAGES.get(result.exit_flag, result.exit_flag)}"
    else:
        found = scipy.optimize.minimize(
            fun,
            np.ascontiguousarray(W0.T).ravel(),
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": max_iter, "gtol": 1e-6, "ftol": 0.0, "maxcor": 20},
        )
        x, iterations, evaluations = found.x, int(found.nit), int(found.nfev)
        message = f"l-bfgs-b: {found.message}"
    _, grad = fun(x)
    return InitResult(
        W=x.reshape(q, n1),
        iterations=iterations,
        evaluations=evaluations,
        message=message,
        gradient_inf_norm=float(np.abs(grad).max()),
    )


def init_exact(Y: np.ndarray, G: sp.csr_matrix, lambda1: float) -> np.ndarray:
    """The minimiser ``P* = (I + λ1 G)⁻¹ Y`` of ``InitW.m``'s objective in ``P = F W``
    (reached by some W whenever H is non-singular); a sparse SPD solve, for diagnostics."""
    n = Y.shape[0]
    system = (sp.identity(n, format="csc") + lambda1 * G).tocsc()
    solution = spla.splu(system).solve(np.asarray(Y, dtype=np.float64))
    return np.asarray(solution)


# --------------------------------------------------------------------------------------
# The alternation
# --------------------------------------------------------------------------------------


@dataclass
class Enhancement:
    """Output of :func:`enhance`."""

    W_init: np.ndarray  # l x (n+1), after InitW
    W: np.ndarray  # l x (n+1), after the alternations
    Z: list[np.ndarray]  # per group, l x l
    P: np.ndarray  # n x l, the enhanced labels F Wᵀ (before the softmax)
    init: InitResult
    objectives: list[float]
    s_iterations: list[int]
    w_iterations: list[int]


def enhance(
    F: KernelFeatures,
    Y: np.ndarray,
    G: sp.csr_matrix,
    groups: list[np.ndarray],
    W0: np.ndarray,
    Z0: list[np.ndarray],
    *,
    lambda1: float,
    lambda2: float,
    max_alternations: int = 1,
    manifold_iter: int = 5,
    init_max_iter: int = 300,
    init_solver: str = "authors",
    W_init: np.ndarray | None = None,
) -> Enhancement:
    """``AMTrain.m`` after the graph: InitW, then ``max_alternations`` rounds of UpdateS (every
    group) and UpdateW, stopping early (as the authors' loop) once the objective has moved
    less than 1e-6 against each of the three values before the previous one.

    ``W0`` is InitW's start ((n+1) x l, as ``rand``), ``Z0`` the groups' starts (l x l each).
    ``W_init`` (l x (n+1)) skips InitW and starts the alternation there: the reference tests
    use it to check the later steps on the authors' InitW output.
    """
    Y = np.asarray(Y, dtype=np.float64)
    if W_init is None:
        init = init_w(W0, F, Y, G, lambda1, solver=init_solver, max_iter=init_max_iter)
    else:
        init = InitResult(
            W=np.array(W_init, dtype=np.float64),
            iterations=0,
            evaluations=0,
            message="given",
            gradient_inf_norm=float("nan"),
        )
    W = init.W
    Z = [np.array(z, dtype=np.float64) for z in Z0]
    objectives: list[float] = []
    s_iterations: list[int] = []
    w_iterations: list[int] = []
    P = F.times_wt(W)
    for _ in range(max_alternations):
        for g, rows in enumerate(groups):
            Z[g], info = update_s(Z[g], P[rows], manifold_iter)
            s_iterations.append(info.iterations)
        W, info = update_w(W, F, Y, G, groups, Z, lambda1, lambda2, manifold_iter)
        w_iterations.append(info.iterations)
        P = F.times_wt(W)
        objectives.append(objective(P, Y, G, groups, Z, lambda1, lambda2))
        last = len(objectives)
        if last >= 5 and all(
            abs(objectives[-1] - objectives[last - 2 - i]) < 1e-6 for i in (1, 2, 3)
        ):
            break
    return Enhancement(
        W_init=init.W,
        W=W,
        Z=Z,
        P=P,
        init=init,
        objectives=objectives,
        s_iterations=s_iterations,
        w_iterations=w_iterations,
    )
