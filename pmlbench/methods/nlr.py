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
one for the noisy labels' contribution. The reduction factors ``A`` by Cholesky first, so,
like MATLAB's backslash on A, it is insensitive to the scale of individual features (the raw
birds features reach 1e5). When there are fewer training instances than features, the same
iteration runs on the n x n kernel ``K = XXᵀ`` (``W = Xᵀ B``; push-through identity), which
is much cheaper there but, as any kernel form, loses precision when feature scales differ by
orders of magnitude.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from threadpoolctl import threadpool_limits

from pmlbench.core.checks import check_features, check_label_matrix
from pmlbench.core.parameters import Interval, Options, ValidatedParameters
from pmlbench.errors import NotApplicable, PmlbenchError
from pmlbench.numerics.linalg import gram

FORMS = ("auto", "primal", "dual")
_MAX_GATHERED = 2**23  # numbers (64 MiB) in the candidate rows of the score matrix


@dataclass
class NLRSolution:
    """Output of :func:`nlr_solve`."""

    W1: np.ndarray  # d x q, the PML classifier
    W2: np.ndarray  # d x q, the competitive classifier
    N: np.ndarray  # n x q uint8, the candidate labels marked noisy
    form: str
    n_changed: list[int]  # entries of N that changed in each iteration


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
    if by_label:
        F_candidates = F[rows]
        bounds = np.searchsorted(cols, np.arange(q + 1))
    EY = (sp.csr_matrix((np.ones(flat.size), (cols, rows)), shape=(q, n)) @ E).T  # EᵀY
    E1 = E.sum(axis=0)[:, None]  # Eᵀ1
    c1 = EY + beta * E1  # Eᵀ(Y + β1)
    c2 = (1.0 + beta) * E1 - EY  # Eᵀ(Ȳ + β1)
    Z1 = np.zeros((E.shape[1], q))
    Z2 = np.zeros_like(Z1)
    noisy = np.zeros(flat.size, dtype=bool)  # N on the candidates
    EN = np.zeros_like(Z1)  # Eᵀ N
    changed: list[int] = []
    for _ in range(max_iter):
        Z1 = c1 - EN - beta * theta * Z2  # step 1 in the eigenbasis
        Z2 = c2 + EN - beta * theta * Z1  # step 2
        D = Z1 - Z2
        if by_label:
            S_c = np.empty(flat.size)
            for j in range(q):
                S_c[bounds[j] : bounds[j + 1]] = F_candidates[bounds[j] : bounds[j + 1]] @ D[:, j]
        else:
            S = np.asarray(X @ (basis @ D)) if through_V else F @ D
            S_c = S.reshape(-1)[flat]
        # step 3: G = N − ¼∇ = ½(Y − Ȳ) − ½S, i.e. ½(1 − S) on the candidates; soft-threshold
        # at λ/4 and round every positive entry up to 1
        new = 0.5 * (1.0 - S_c) - lam / 4 > 0
        changed.append(int(np.count_nonzero(new != noisy)))
        noisy = new
        Nt = sp.csr_matrix((np.ones(int(noisy.sum())), (cols[noisy], rows[noisy])), shape=(q, n))
        EN = (Nt @ E).T  # N is sparse: nnz(N) x r work
    N = np.zeros(n * q, dtype=np.uint8)
    N[flat[noisy]] = 1
    N = N.reshape(n, q)
    if dual:
        W1, W2 = np.asarray(X.T @ (basis @ Z1)), np.asarray(X.T @ (basis @ Z2))
    else:
        W1, W2 = basis @ Z1, basis @ Z2
    return NLRSolution(W1=W1, W2=W2, N=N, form="dual" if dual else "primal", n_changed=changed)


def minmax_rows(raw: np.ndarray) -> np.ndarray:
    """Scale each row to [0, 1] (``NLR_demo.m``); a row with all scores equal becomes 0.

    The demo divides 0 by 0 there; its NaN scores predict no label (NaN > 0.9 is false), and
    0 everywhere predicts none either, while keeping the scores finite.
    """
    low = raw.min(axis=1, keepdims=True)
    span = raw.max(axis=1, keepdims=True) - low
    flat = span <= 0
    return np.where(flat, 0.0, (raw - low) / np.where(flat, 1.0, span))


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
            :class:`~pmlbench.errors.NotApplicable` (None: no cap). The default 2500 admits
            every bundled dataset but the three yeast GO sets (3069 training instances under
            the paper protocol, where NLR took 7-27 times ML-kNN's time).
        blas_threads: BLAS threads during fit and predict (None: the library default).
    """

    default_bipartition = {"rule": "method"}
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
        max_order: int | None = 2500,
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
        X = check_features(X)
        Y = check_label_matrix(Y, what="candidate labels", n_rows=X.shape[0])
        order = min(X.shape) if self.form == "auto" else X.shape[self.form == "primal"]
        if self.max_order is not None and order > self.max_order:
            raise NotApplicable(
                f"NLR on {X.shape[0]} training instances x {X.shape[1]} features needs a "
                f"{order} x {order} eigendecomposition and {self.max_iter} products with it, "
                f"over method.max_order={self.max_order} (set for a budget of 10x ML-kNN's "
                "time); set method.max_order=null to run it anyway"
            )
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
