"""NLR: noisy label removal (Yang, Jia, Liu, Dong & Hou, KDD 2024), trained on candidate labels.

The paper's model: a linear PML classifier W1 fits the candidate labels Y with the noisy
labels N removed, a competitive classifier W2 fits the non-candidate labels Ȳ = 1 − Y with N
added, the two must add up to one on every (instance, label), and N is binary and lives on
the candidates only. The paper's full text could not be read while writing this module, so
no equation numbers are cited; the objective below is the one whose block-coordinate updates
are exactly the authors' ``NLR.m`` (github Yangfc-ML/NLR)::

    min ‖XW1 − (Y − N)‖²_F + ‖XW2 − (Ȳ + N)‖²_F + β‖XW1 + XW2 − 1‖²_F
        + γ(‖W1‖²_F + ‖W2‖²_F) + λ‖N‖_1
    s.t. N ∈ {0, 1}^{n x q},  N_ij = 0 wherever Y_ij = 0

No bias column and no feature scaling (the authors' code has neither). One iteration, from
W1 = W2 = N = 0, with A = (1+β)XᵀX + γI:

1. ``W1 ← A⁻¹ (Xᵀ(Y − N) + βXᵀ1 − βXᵀX W2)``   (exact minimiser in W1)
2. ``W2 ← A⁻¹ (Xᵀ(Ȳ + N) + βXᵀ1 − βXᵀX W1)``   (exact minimiser in W2, with the new W1)
3. one proximal-gradient step on N with step 1/4 (the Lipschitz constant of the fit terms),
   soft-thresholding at λ/4, then every positive entry rounded to 1 and every entry off the
   candidates set to 0. The step cancels the previous N: a candidate label is marked noisy
   iff ``½(1 − (XW1 − XW2)_ij) > λ/4``, i.e. ``(XW1 − XW2)_ij < 1 − λ/2``.

The authors run 100 iterations with no stopping test. Scores are ``XW1`` min-max scaled per
instance to [0, 1] and a label is predicted where the scaled score exceeds 0.9 (``NLR_demo.m``).

**Solver.** The W steps are solved in the basis of the generalised eigenproblem
``XᵀX v = θ A v`` (``VᵀAV = I``), where ``A⁻¹`` and ``A⁻¹XᵀX`` are both diagonal: steps 1-2
become element-wise, and one iteration costs one product for the scores ``X(W1 − W2)`` and
one for the noisy labels' contribution ``EᵀN``, recomputed only for the labels whose noisy
set changed. The eigendecomposition does not depend on λ, and λ reaches the iterates only
through step 3's comparisons: tuning runs a grid of λ side by side on one decomposition
(:func:`nlr_system`, :func:`nlr_iterate`). The reduction factors ``A`` by Cholesky first, so,
like MATLAB's backslash on A, it is insensitive to the scale of individual features (the raw
birds features reach 1e5). When there are fewer training instances than features, the same
iteration runs on the n x n kernel ``K = XXᵀ`` (``W = Xᵀ B``; push-through identity), which
is much cheaper there but, as any kernel form, loses precision when feature scales differ by
orders of magnitude.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from sklearn.base import BaseEstimator, clone
from threadpoolctl import threadpool_limits

from pmlbench.core.checks import check_features, check_label_matrix
from pmlbench.core.parameters import Interval, Options, ValidatedParameters
from pmlbench.errors import NotApplicable, PmlbenchError
from pmlbench.methods._constraints import BUDGET_NOTE
from pmlbench.numerics.linalg import gram

FORMS = ("auto", "primal", "dual")
_MAX_GATHERED = 2**23  # numbers (64 MiB) in the candidate rows of the score matrix
# parameters that leave the eigendecomposition alone: grid points differing only in these
# share one system in fit_grid
_PER_LAMBDA = ("lam", "threshold")


@dataclass
class NLRSolution:
    """Output of :func:`nlr_solve`."""

    W1: np.ndarray  # d x q, the PML classifier
    W2: np.ndarray  # d x q, the competitive classifier
    N: np.ndarray  # n x q uint8, the candidate labels marked noisy
    form: str
    n_changed: list[int]  # entries of N that changed in each iteration


@dataclass
class NLRSystem:
    """Everything of NLR's iteration that does not depend on λ (:func:`nlr_system`).

    The candidates' (row, label) coordinates grouped by label, the eigenbasis of
    ``XᵀX v = θ A v`` (or of K = XXᵀ) with its diagonal ``θ``, the products ``E`` (right-hand
    sides) and ``F`` (scores) in that basis, and the constant parts ``c1 = Eᵀ(Y + β1)`` and
    ``c2 = Eᵀ(Ȳ + β1)`` of steps 1 and 2.
    """

    X: Any  # the features, dense or sparse
    n: int
    q: int
    beta: float
    dual: bool
    rows: np.ndarray
    cols: np.ndarray
    flat: np.ndarray
    basis: np.ndarray
    E: np.ndarray
    F: np.ndarray
    theta: np.ndarray
    through_V: bool
    by_label: bool
    F_candidates: np.ndarray | None
    bounds: np.ndarray
    c1: np.ndarray
    c2: np.ndarray


def nlr_system(X, Y: np.ndarray, beta: float, gamma: float, *, form: str = "auto") -> NLRSystem:
    """The λ-independent part of :func:`nlr_solve`: one eigendecomposition for any λ."""
    n, d = X.shape
    q = Y.shape[1]
    if form not in FORMS:
        raise PmlbenchError(f"unknown NLR form {form!r}; use one of {list(FORMS)}")
    dual = n < d if form == "auto" else form == "dual"
    # step 3 only ever sets candidate entries: work on their (row, label) coordinates,
    # grouped by label
    rows, cols = np.nonzero(Y.T)[::-1]
    flat = rows * q + cols
    # G u = θ A u with uᵀAu = 1, A = (1+β)G + γI: in this basis A⁻¹ and A⁻¹G are diagonal.
    # Primal: G = XᵀX and W = V Z. Dual: G = K = XXᵀ and W = XᵀU Z.
    G = gram(X, rows=dual)  # XXᵀ or XᵀX
    if dual:
        # K's own eigenvectors serve (A is a polynomial in K); the Cholesky-based reduction
        # below buys no precision here, since forming K already lost what scaling costs
        eigenvalues, Q = scipy.linalg.eigh(G, check_finite=False, driver="evd")
        eigenvalues = np.clip(eigenvalues, 0.0, None)
        scale = np.sqrt((1.0 + beta) * eigenvalues + gamma)
        theta = (eigenvalues / scale**2)[:, None]
        basis = E = np.ascontiguousarray(Q / scale)  # right-hand sides: Uᵀ R
        F = np.ascontiguousarray(Q * (eigenvalues / scale))  # scores: X W = K U Z
        through_V = False
    else:
        A = (1.0 + beta) * G
        A[np.diag_indices_from(A)] += gamma
        theta, basis = scipy.linalg.eigh(G, A, check_finite=False)
        theta = np.clip(theta, 0.0, None)[:, None]
        E = F = np.asarray(X @ basis)  # right-hand sides VᵀXᵀR = (XV)ᵀR; scores X W = XV Z
        # X(W1 − W2) as (XV)Z costs n d q flops, as X(V Z) d d q + nnz(X) q: sparse X, n > d
        nnz = X.nnz if sp.issparse(X) else n * d
        through_V = d * d + nnz < n * d
    # Step 3 reads X(W1 − W2) on the candidates only. Where they are few, computing just
    # those entries (F's candidate rows times their label's column) reads |C| x r numbers per
    # iteration instead of multiplying n x r by r x q.
    r = E.shape[1]
    by_label = not through_V and 10 * flat.size < n * q and flat.size * r <= _MAX_GATHERED
    EY = (sp.csr_matrix((np.ones(flat.size), (cols, rows)), shape=(q, n)) @ E).T  # EᵀY
    E1 = E.sum(axis=0)[:, None]  # Eᵀ1
    return NLRSystem(
        X=X,
        n=n,
        q=q,
        beta=beta,
        dual=dual,
        rows=rows,
        cols=cols,
        flat=flat,
        basis=basis,
        E=E,
        F=F,
        theta=theta,
        through_V=through_V,
        by_label=by_label,
        F_candidates=F[rows] if by_label else None,
        bounds=np.searchsorted(cols, np.arange(q + 1)),
        c1=EY + beta * E1,  # Eᵀ(Y + β1)
        c2=(1.0 + beta) * E1 - EY,  # Eᵀ(Ȳ + β1)
    )


def _candidate_scores(system: NLRSystem, D: np.ndarray) -> np.ndarray:
    """``X(W1 − W2)`` on the candidates, k x |C|, from the coefficients ``D`` (k x r x q).

    One λ (k = 1) is computed as a fit always has. Several share each product: the λs'
    coefficients stacked side by side, or, where candidates are few, one small product per
    label on the candidates' rows only. A shared product's entries may differ from separate
    products' in their last bits (BLAS blocks a wider product differently); only step 3's
    comparisons read them.
    """
    k, r, q = D.shape
    if k == 1 and not system.by_label:
        S = np.asarray(system.X @ (system.basis @ D[0])) if system.through_V else system.F @ D[0]
        return S.reshape(-1)[system.flat][None, :]
    bounds = system.bounds
    if k > 1 and not system.by_label and 10 * system.flat.size >= system.n * q:
        D_all = D.transpose(1, 0, 2).reshape(r, k * q)
        if system.through_V:
            S = np.asarray(system.X @ (system.basis @ D_all))
        else:
            S = system.F @ D_all
        # S is n x (k q): entry (i, p q + j) is λ_p's score of label j on instance i
        at = system.rows * (k * q) + system.cols
        return S.reshape(-1)[at + q * np.arange(k)[:, None]]
    S_c = np.empty((k, system.flat.size))
    for j in range(q):
        a, b = bounds[j], bounds[j + 1]
        if system.F_candidates is not None:  # kept gathered by label
            F_j = system.F_candidates[a:b]
        else:  # the candidates' rows are not kept gathered: gather this label's
            F_j = system.F[system.rows[a:b]]
        if k == 1:
            S_c[0, a:b] = F_j @ D[0, :, j]
        else:
            S_c[:, a:b] = (F_j @ D[:, :, j].T).T
    return S_c


def nlr_iterate(system: NLRSystem, lams, *, max_iter: int = 100) -> list[NLRSolution]:
    """Run ``max_iter`` iterations of NLR's updates for each λ in ``lams``, in lockstep.

    Every λ follows its own iterates (steps 1-3 of the module docstring); only the products
    with the system's matrices are shared, one per iteration for all of them. ``EᵀN`` is
    recomputed only for the labels whose noisy set changed, each label's column exactly as
    the whole product computes it.
    """
    lams = [float(lam) for lam in lams]
    k, q, n = len(lams), system.q, system.n
    flat, E = system.flat, system.E
    c1, c2 = system.c1, system.c2
    beta, theta = system.beta, system.theta
    quarter = np.array([lam / 4 for lam in lams])[:, None]
    Z1 = np.zeros((k, E.shape[1], q))
    Z2 = np.zeros_like(Z1)
    noisy = np.zeros((k, flat.size), dtype=bool)  # N on the candidates
    NE = np.zeros((k, q, E.shape[1]))  # Nᵀ E, label by label
    EN = NE.transpose(0, 2, 1)  # Eᵀ N
    changed: list[list[int]] = [[] for _ in lams]
    for _ in range(max_iter):
        Z1 = c1 - EN - beta * theta * Z2  # step 1 in the eigenbasis
        Z2 = c2 + EN - beta * theta * Z1  # step 2
        S_c = _candidate_scores(system, Z1 - Z2)
        # step 3: G = N − ¼∇ = ½(Y − Ȳ) − ½S, i.e. ½(1 − S) on the candidates; soft-threshold
        # at λ/4 and round every positive entry up to 1
        new = 0.5 * (1.0 - S_c) - quarter > 0
        moved = new != noisy
        for p in range(k):
            changed[p].append(int(np.count_nonzero(moved[p])))
        noisy = new
        if moved.any():
            _update_ne(NE, noisy, moved, system)
    solutions = []
    for p in range(k):
        marks = np.zeros(n * q, dtype=np.uint8)
        marks[flat[noisy[p]]] = 1
        N = marks.reshape(n, q)
        if system.dual:
            W1 = np.asarray(system.X.T @ (system.basis @ Z1[p]))
            W2 = np.asarray(system.X.T @ (system.basis @ Z2[p]))
        else:
            W1, W2 = system.basis @ Z1[p], system.basis @ Z2[p]
        form = "dual" if system.dual else "primal"
        solutions.append(NLRSolution(W1=W1, W2=W2, N=N, form=form, n_changed=changed[p]))
    return solutions


def _update_ne(NE: np.ndarray, noisy: np.ndarray, moved: np.ndarray, system: NLRSystem) -> None:
    """Recompute ``NE[p, j] = Σ E[i]`` over the noisy candidates i of label j, for the (λ,
    label) pairs whose noisy set moved (k x |C| masks).

    Each is one row of a sparse (pairs x n) 0/1 matrix times E: scipy adds a row's E rows in
    order, exactly as it does for the whole Nᵀ E, so the rows not recomputed are those
    it would give again.
    """
    k, q = NE.shape[:2]
    rows, cols = system.rows, system.cols
    pairs = np.zeros((k, q), dtype=bool)
    p_moved, at_moved = np.nonzero(moved)
    pairs[p_moved, cols[at_moved]] = True
    p_pair, j_pair = np.nonzero(pairs)
    position = np.zeros((k, q), dtype=np.intp)
    position[p_pair, j_pair] = np.arange(p_pair.size)
    p_in, at_in = np.nonzero(noisy & pairs[:, cols])
    Nt = sp.csr_matrix(
        (np.ones(at_in.size), (position[p_in, cols[at_in]], rows[at_in])),
        shape=(p_pair.size, system.n),
    )
    NE[p_pair, j_pair] = Nt @ system.E


def nlr_solve(
    X,
    Y: np.ndarray,
    beta: float,
    gamma: float,
    lam: float,
    *,
    max_iter: int = 100,
    form: str = "auto",
) -> NLRSolution:
    """Run ``max_iter`` iterations of NLR's block-coordinate updates (as ``NLR.m``).

    ``X`` is n x d (dense or sparse), ``Y`` the n x q 0/1 candidate matrix. ``form`` is
    ``primal`` (the d x d system, as the authors), ``dual`` (the n x n kernel system) or
    ``auto`` (dual when n < d). ``gamma`` must be positive.
    """
    system = nlr_system(X, Y, beta, gamma, form=form)
    return nlr_iterate(system, [lam], max_iter=max_iter)[0]


def minmax_rows(raw: np.ndarray) -> np.ndarray:
    """Scale each row to [0, 1] (``NLR_demo.m``); a row with all scores equal becomes 0.

    The demo divides 0 by 0 there; its NaN scores predict no label (NaN > 0.9 is false), and
    0 everywhere predicts none either, while keeping the scores finite.
    """
    low = raw.min(axis=1, keepdims=True)
    span = raw.max(axis=1, keepdims=True) - low
    flat = span <= 0
    return np.where(flat, 0.0, (raw - low) / np.where(flat, 1.0, span))


def _inputs(X, Y) -> tuple:
    """Checked training features and candidate labels."""
    X = check_features(X)
    return X, check_label_matrix(Y, what="candidate labels", n_rows=X.shape[0])


class NLR(ValidatedParameters, BaseEstimator):
    """NLR (Yang et al., KDD 2024): a PML classifier and a competitive non-candidate classifier
    that remove binary noisy labels from the candidates.

    Args:
        beta: β, weight of the competition term ‖XW1 + XW2 − 1‖² (demo: 100), >= 0.
        gamma: γ, ridge weight on W1 and W2 (demo: 10), > 0.
        lam: λ, ℓ1 weight on the noisy-label matrix N (demo: 2.1; 1.7 on music_style), >= 0.
            A candidate label is marked noisy when (XW1 − XW2) < 1 − λ/2 there.
        max_iter: iterations, all of them run (authors: 100).
        threshold: ``predict`` keeps labels whose scaled score exceeds this (demo: 0.9).
        form: "primal" (d x d system), "dual" (n x n kernel system) or "auto" (dual when the
            training set has fewer instances than features). Same iterates up to rounding.
        max_order: the largest system NLR takes on: min(training instances, features), the
            order of the matrix it eigendecomposes and multiplies by in each of the
            ``max_iter`` iterations. Larger inputs are refused before any work with
            :class:`~pmlbench.errors.NotApplicable` (None: no cap). The default 4000 admits
            every bundled dataset; the largest order among them is the yeast GO sets' 3069
            training instances, where tuned NLR took 16 times ML-kNN's tuned time, within
            the suite's budget (docs/protocol.md, "Budget").
        blas_threads: BLAS threads during fit and predict (None: the library default).
    """

    default_bipartition = {"rule": "method"}
    # the authors' λ range at the demo's β and γ (docs/methods/nlr.md, "Tuning grid")
    default_tuning_grid = {"lam": [1.3, 1.7, 2.1, 2.5]}
    parameter_constraints = {
        "beta": [Interval(float, 0, None)],
        "gamma": [Interval(float, 0, None, closed="neither")],
        "lam": [Interval(float, 0, None)],
        "max_iter": [Interval(int, 1, None)],
        "threshold": [Interval(float, 0, 1)],
        "form": [Options(FORMS)],
        "max_order": [None, Interval(int, 1, None)],
        "blas_threads": [None, Interval(int, 1, None)],
    }

    def __init__(
        self,
        beta: float = 100.0,
        gamma: float = 10.0,
        lam: float = 2.1,
        max_iter: int = 100,
        threshold: float = 0.9,
        form: str = "auto",
        max_order: int | None = 4000,
        blas_threads: int | None = 1,
    ):
        self.beta = beta
        self.gamma = gamma
        self.lam = lam
        self.max_iter = max_iter
        self.threshold = threshold
        self.form = form
        self.max_order = max_order
        self.blas_threads = blas_threads

    def fit(self, X, Y) -> NLR:
        """Run the updates on the candidate labels; keep W1 (and W2, N for inspection)."""
        self._validate_params()
        start = time.perf_counter()
        X, Y = _inputs(X, Y)
        self._refuse_over_cap(X)
        with threadpool_limits(self.blas_threads, user_api="blas"):
            solution = nlr_solve(
                X,
                Y,
                float(self.beta),
                float(self.gamma),
                float(self.lam),
                max_iter=int(self.max_iter),
                form=self.form,
            )
        return self._adopt(solution, X, Y, start)

    def fit_grid(self, X, Y, points) -> Iterator[tuple[int, NLR]]:
        """Fit every grid point (tuning's hook, :meth:`pmlbench.plugin.MethodHooks.fit_grid`).

        Points that differ only in ``lam`` and ``threshold`` share one :func:`nlr_system`
        (the Gram matrix and its eigendecomposition) and run their iterations in lockstep,
        one score product per iteration for all of them (:func:`nlr_iterate`). W1 and W2
        depend on the scores only through step 3's comparisons, so each point equals its fit
        from scratch bit for bit unless a score lies within rounding (about 1e-15) of its
        threshold (tests/test_nlr.py). ``diagnostics_["fit_seconds"]`` counts from the start
        of the grid.
        """
        start = time.perf_counter()
        models = [clone(self).set_params(**point) for point in points]
        for model in models:
            model._validate_params()
        X, Y = _inputs(X, Y)
        groups: dict[tuple, list[int]] = {}
        for index, model in enumerate(models):
            model._refuse_over_cap(X)
            params = model.get_params(deep=False)
            key = tuple(sorted((k, v) for k, v in params.items() if k not in _PER_LAMBDA))
            groups.setdefault(key, []).append(index)
        for indices in groups.values():
            first = models[indices[0]]
            with threadpool_limits(first.blas_threads, user_api="blas"):
                system = nlr_system(
                    X,
                    Y,
                    float(first.beta),
                    float(first.gamma),
                    form=first.form,
                )
                solutions = nlr_iterate(
                    system,
                    [float(models[i].lam) for i in indices],
                    max_iter=int(first.max_iter),
                )
            for index, solution in zip(indices, solutions, strict=True):
                yield index, models[index]._adopt(solution, X, Y, start)

    def _refuse_over_cap(self, X) -> None:
        """Refuse a system over ``max_order`` before any work."""
        order = min(X.shape) if self.form == "auto" else X.shape[self.form == "primal"]
        if self.max_order is not None and order > self.max_order:
            raise NotApplicable(
                f"NLR on {X.shape[0]} training instances x {X.shape[1]} features needs a "
                f"{order} x {order} eigendecomposition and {self.max_iter} products with it, "
                f"over method.max_order={self.max_order} (set for the suite's budget, "
                f"{BUDGET_NOTE}); set method.max_order=null to run it anyway"
            )

    def _adopt(self, solution: NLRSolution, X, Y: np.ndarray, start: float) -> NLR:
        """Keep a solution as the fitted model, with its diagnostics."""
        self.W1_, self.W2_, self.noisy_labels_ = solution.W1, solution.W2, solution.N
        self.n_features_in_ = X.shape[1]
        stable = next(
            (len(solution.n_changed) - i for i, c in enumerate(reversed(solution.n_changed)) if c),
            0,
        )
        n_candidates = int(Y.sum())
        self.diagnostics_ = {
            "form": solution.form,
            "noisy_labels": int(solution.N.sum()),
            "noisy_fraction": round(int(solution.N.sum()) / max(n_candidates, 1), 4),
            "last_change": stable,  # the iteration after which N no longer changed
            "changes_last_iteration": solution.n_changed[-1],
            "fit_seconds": round(time.perf_counter() - start, 3),
        }
        # confidence per training candidate (pmlbench.plugin): 0 where N marks it noisy
        self.disambiguation_scores_ = 1.0 - np.asarray(solution.N, dtype=np.float64)
        return self

    def raw_scores(self, X) -> np.ndarray:
        """``X W1`` (n x q), before the per-instance scaling."""
        X = check_features(X)
        if X.shape[1] != self.n_features_in_:
            raise PmlbenchError(
                f"NLR was fitted on {self.n_features_in_} features, got {X.shape[1]}; "
                "use the same feature space for test data"
            )
        with threadpool_limits(self.blas_threads, user_api="blas"):
            return np.asarray(X @ self.W1_)

    def decision_function(self, X) -> np.ndarray:
        """``X W1`` min-max scaled per instance to [0, 1], as the authors' demo scores."""
        return minmax_rows(self.raw_scores(X))

    def predict(self, X) -> np.ndarray:
        """Labels whose scaled score is strictly above ``threshold`` (the demo's rule)."""
        return (self.decision_function(X) > self.threshold).astype(np.uint8)
