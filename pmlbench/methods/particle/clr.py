"""Calibrated label ranking with a virtual label, on credible labels (PARTICLE-VLS, Eq. 6-8).

Binary problems (the paper's "virtual label splitting"): with credible labels C and
non-candidates N = 1 - S,

- pair (j, k), j < k: positives {i : C_ij = 1, N_ik = 1}, negatives {i : C_ik = 1, N_ij = 1};
- label j against the virtual label V: positives {i : C_ij = 1}, negatives {i : N_ij = 1}.

Non-credible candidates are on neither side. A problem with an empty side is not trained
and casts no vote. Each problem is a linear SVM (scikit-learn's ``LinearSVC``, liblinear).
Problems are grouped by their first label into tasks that joblib threads can share.

A grid of credible-label thresholds trains the problems once per threshold; a problem whose
two sides are the same at two thresholds is the same liblinear call, and
:class:`SharedProblems` trains it once (``fit_clr(..., shared=...)``).
"""

from __future__ import annotations

import hashlib
import threading
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC

try:  # LinearSVC.fit's own solver call, without its per-fit input validation (see _linear_svm)
    from sklearn.svm._base import _fit_liblinear
    from sklearn.svm._classes import _validate_dual_parameter
except ImportError:  # a scikit-learn that moved them: LinearSVC, slower, the same numbers
    _fit_liblinear = None

VIRTUAL = -1  # the second index of a label-vs-virtual problem
_CHUNK_ENTRIES = 4_000_000  # decision values held at once while voting
_DENSE_WEIGHT_ENTRIES = 32_000_000  # stacked weights made dense for sparse X (256 MB at most)
# liblinear draws its coordinate order from one random generator per process, seeded at the
# start of each call: two calls running at once in threads would draw from it in turn and
# each get another order than its seed gives. One call at a time keeps every problem's
# weights those of its seed, whatever n_jobs is.
_LIBLINEAR = threading.Lock()


@dataclass
class LinearModels:
    """Stacked linear models: problem m is (first[m], second[m]) with coef row m."""

    first: np.ndarray  # label whose side is the positive class
    second: np.ndarray  # the other label, or VIRTUAL
    coef: sp.csr_matrix  # problems x features
    intercept: np.ndarray
    accuracy: np.ndarray  # accuracy on the problem's own training subset
    n_not_converged: int


def _problems_of(j: int, credible: np.ndarray, noncand: np.ndarray):
    """The training problems whose first label is j: pairs (j, k > j) and (j, V).

    An instance that qualifies for both sides is a positive only (``PAR_VLS.m``'s
    ``if ... elseif``). That happens only when a credible label is not a candidate
    (``oof_fallback=authors``); credible labels within the candidates keep the sides
    disjoint.
    """
    q = credible.shape[1]
    for k in range(j + 1, q):
        pos = credible[:, j] & noncand[:, k]
        neg = credible[:, k] & noncand[:, j] & ~pos
        if pos.any() and neg.any():
            yield k, pos, neg
    pos = credible[:, j]
    neg = noncand[:, j] & ~pos
    if pos.any() and neg.any():
        yield VIRTUAL, pos, neg


# (first label, second label or VIRTUAL, digest of both sides): a problem's identity
ProblemKey = tuple[int, int, bytes]


def _sides(pos: np.ndarray, neg: np.ndarray) -> bytes:
    """Both sides of a problem as bytes: equal bytes, equal training rows and targets."""
    return np.packbits(pos).tobytes() + np.packbits(neg).tobytes()


def _problem_key(j: int, k: int, sides: bytes) -> ProblemKey:
    return j, k, hashlib.blake2b(sides, digest_size=16).digest()


def problem_keys(credible: np.ndarray, candidates: np.ndarray) -> Iterator[ProblemKey]:
    """The identity of every problem :func:`fit_clr` trains on these credible labels."""
    credible = credible.astype(bool)
    noncand = ~candidates.astype(bool)
    for j in range(credible.shape[1]):
        for k, pos, neg in _problems_of(j, credible, noncand):
            yield _problem_key(j, k, _sides(pos, neg))


@dataclass
class SharedProblems:
    """Trained problems that later ``fit_clr`` calls on the same X, with the same SVM
    settings and seed, can take instead of training them again.

    ``keep``: the problems worth keeping (those that recur, see :meth:`recurring`); only
    these are stored. A stored problem is taken only when its sides equal the stored ones
    byte for byte, so a digest collision cannot pass one problem's model off as another's:
    the same rows, targets, settings and seed make the same liblinear call.
    """

    keep: set[ProblemKey]
    # key -> (sides, support, weights on it, intercept, accuracy, hit the iteration cap)
    trained: dict[ProblemKey, tuple] = field(default_factory=dict)

    @classmethod
    def recurring(
        cls, credible_sets: Iterable[np.ndarray], candidates: np.ndarray
    ) -> SharedProblems:
        """Keep the problems that two or more of these credible-label matrices train."""
        seen: set[ProblemKey] = set()
        keep: set[ProblemKey] = set()
        for credible in credible_sets:
            keys = set(problem_keys(credible, candidates))
            keep |= keys & seen
            seen |= keys
        return cls(keep)


def _linear_svm(Xs, y: np.ndarray, svm_params: dict) -> tuple[np.ndarray, float, int]:
    """``LinearSVC(**svm_params).fit(Xs, y)``: weights, intercept and liblinear's iterations.

    A split trains up to tens of thousands of small problems, and scikit-learn's input
    validation costs more than liblinear itself on each. Rows of the already validated
    float64 X need none of it, so the call LinearSVC.fit makes after validating,
    ``_fit_liblinear`` with LinearSVC's defaults, is made directly: the same liblinear call
    with the same arguments, hence the same numbers (tests/test_particle.py compares them).
    """
    validated = (
        Xs.dtype == np.float64 and Xs.indices.dtype == np.int32 and Xs.has_sorted_indices
        if sp.issparse(Xs)
        else Xs.dtype == np.float64 and Xs.flags.c_contiguous
    )
    if _fit_liblinear is None or not validated:
        with _LIBLINEAR:
            svm = LinearSVC(**svm_params).fit(Xs, y)
        return svm.coef_.ravel(), float(svm.intercept_[0]), int(np.max(svm.n_iter_))
    loss = svm_params["loss"]
    dual = _validate_dual_parameter(svm_params.get("dual", "auto"), loss, "l2", "ovr", Xs)
    with _LIBLINEAR:
        coef, intercept, n_iter = _fit_liblinear(
            Xs,
            y,
            svm_params["C"],
            True,  # fit_intercept
            1.0,  # intercept_scaling
            None,  # class_weight
            "l2",  # penalty
            dual,
            0,  # verbose
            svm_params["max_iter"],
            1e-4,  # LinearSVC's tol
            svm_params["random_state"],
            "ovr",
            loss,
        )
    return coef.ravel(), float(np.ravel(intercept)[0]), int(np.max(n_iter))


def _train_problem(X, pos: np.ndarray, neg: np.ndarray, svm_params: dict) -> tuple:
    """One problem's support, weights on it, intercept, training accuracy and whether
    liblinear hit its iteration cap."""
    rows = np.flatnonzero(pos | neg)
    y = pos[rows].astype(np.int8)
    Xs = X[rows]
    w, b, n_iter = _linear_svm(Xs, y, svm_params)
    support = np.flatnonzero(w)  # w is non-zero only on features its rows use
    accuracy = float(np.mean(((Xs @ w) + b > 0) == (y == 1)))
    return support, w[support], b, accuracy, n_iter >= svm_params["max_iter"]


def _fit_task(X, j, credible, noncand, svm_params, shared: SharedProblems | None = None):
    """Fit every problem whose first label is j; rows of the stacked result."""
    seconds, coefs, intercepts, accuracies, not_converged = [], [], [], [], 0
    for k, pos, neg in _problems_of(j, credible, noncand):
        if shared is None:
            result = _train_problem(X, pos, neg, svm_params)
        else:
            sides = _sides(pos, neg)
            key = _problem_key(j, k, sides)
            stored = shared.trained.get(key)
            if stored is not None and stored[0] == sides:
                result = stored[1:]
            else:
                result = _train_problem(X, pos, neg, svm_params)
                if key in shared.keep:
                    shared.trained[key] = (sides, *result)
        support, weights, b, accuracy, capped = result
        not_converged += int(capped)
        seconds.append(k)
        coefs.append((support, weights))
        intercepts.append(b)
        accuracies.append(accuracy)
    return j, seconds, coefs, intercepts, accuracies, not_converged


def fit_clr(
    X,
    credible: np.ndarray,
    candidates: np.ndarray,
    *,
    C: float = 1.0,
    loss: str = "squared_hinge",
    max_iter: int = 1000,
    seed: int | None = None,
    n_jobs: int | None = None,
    shared: SharedProblems | None = None,
) -> LinearModels:
    """Train all pairwise and label-vs-virtual linear SVMs that have data on both sides.

    ``shared``: problems trained by earlier calls on the same X with the same ``C``,
    ``loss``, ``max_iter`` and ``seed``, taken where a problem's sides are the same, and
    where this call's problems are stored for later calls.
    """
    credible = credible.astype(bool)
    noncand = ~candidates.astype(bool)
    svm_params = {"C": C, "loss": loss, "max_iter": max_iter, "random_state": seed}
    if loss == "hinge":
        svm_params["dual"] = True
    # liblinear releases the GIL, so threads parallelise the fits without copying X
    # non-converged fits are counted instead (warning filters are process-wide: set them
    # here, not inside the threads)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        tasks = Parallel(n_jobs=n_jobs, prefer="threads")(
            delayed(_fit_task)(X, j, credible, noncand, svm_params, shared)
            for j in range(credible.shape[1])
        )
    first, second, coefs, intercepts, accuracies, not_converged = [], [], [], [], [], 0
    for j, seconds, c, b, a, nc in tasks:
        first += [j] * len(seconds)
        second += seconds
        coefs += c
        intercepts += b
        accuracies += a
        not_converged += nc
    indptr = np.concatenate([[0], np.cumsum([support.size for support, _ in coefs])])
    coef = sp.csr_matrix(
        (
            np.concatenate([values for _, values in coefs] or [np.zeros(0)]),
            np.concatenate([support for support, _ in coefs] or [np.zeros(0, dtype=np.int64)]),
            indptr.astype(np.int64),
        ),
        shape=(len(coefs), X.shape[1]),
    )
    return LinearModels(
        first=np.asarray(first, dtype=np.int64),
        second=np.asarray(second, dtype=np.int64),
        coef=coef,
        intercept=np.asarray(intercepts),
        accuracy=np.asarray(accuracies),
        n_not_converged=not_converged,
    )


def clr_votes(
    models: LinearModels, X, n_labels: int, *, weighted: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Votes for each label (n x l) and for the virtual label (n,) (Eq. 7).

    zeta_j = sum_k [model (j, k) prefers j] + [model (j, V) says +];
    zeta_V = sum_j [model (j, V) says -]. A model prefers its positive side when its
    decision value is > 0. ``weighted`` multiplies every vote by the model's training
    accuracy (the authors' ``PAR_VLS.m``).
    """
    n = X.shape[0]
    m = models.first.size
    weight = models.accuracy if weighted else np.ones(m)
    virtual = models.second == VIRTUAL
    other = np.where(virtual, 0, models.second)
    # problem -> label incidence: a positive decision votes for `first`, a negative one for
    # `second` (pairs) or for V (virtual problems, counted separately).
    to_first = sp.csr_matrix((weight, (np.arange(m), models.first)), shape=(m, n_labels))
    to_second = sp.csr_matrix(
        (np.where(virtual, 0.0, weight), (np.arange(m), other)), shape=(m, n_labels)
    )
    zeta = np.zeros((n, n_labels))
    zeta_v = np.zeros(n)
    step = max(1, _CHUNK_ENTRIES // max(m, 1))
    # sparse test rows times the dense weights: the same sums of w_f x_f in the same order of
    # f as the stacked sparse weights times dense rows (only zero terms differ), many times
    # faster when X is sparse
    dense_weights = (
        models.coef.T.toarray()
        if sp.issparse(X) and m and m * X.shape[1] <= _DENSE_WEIGHT_ENTRIES
        else None
    )
    for start in range(0, n, step):
        stop = min(start + step, n)
        block = X[start:stop]
        if dense_weights is not None:
            block = block.tocsr(copy=True)
            block.sort_indices()
            D = np.asarray(block @ dense_weights)
        else:
            block = block.toarray() if sp.issparse(block) else block
            D = (models.coef @ block.T).T if m else np.zeros((stop - start, 0))  # sparse x dense
        positive = (D + models.intercept[None, :]) > 0
        zeta[start:stop] = (to_first.T @ positive.T.astype(np.float64)).T
        zeta[start:stop] += (to_second.T @ (~positive).T.astype(np.float64)).T
        zeta_v[start:stop] = (~positive[:, virtual]).astype(np.float64) @ weight[virtual]
    return zeta, zeta_v
