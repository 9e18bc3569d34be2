"""LIFT: multi-label learning with label-specific features (Zhang, IJCAI 2011; Zhang & Wu,
TPAMI 2015), trained on candidate labels.

Follows the authors' ``LIFT.m``: for every label j the positive and negative training
instances are clustered separately into ``m_j = min(ceil(r|P_j|), ceil(r|N_j|))`` clusters
each (the paper's clustering-ratio rule), every instance is re-described by its Euclidean
distances to the ``2 m_j`` centres (the label-specific mapping φ_j, positive centres first),
and a linear SVM with Platt probabilities is trained on that representation. The score of
label j is the SVM's probability of the positive class; a label is predicted when that
probability exceeds 0.5.

Two solvers train the SVM (``solver``): ``"libsvm"``, the authors' ``-t 0 -b 1`` through
scikit-learn's ``SVC``, and ``"newton"``, the same hinge-loss SVM (C-SVM with an
unpenalised bias) solved in the primal by Newton's method on a Huber-smoothed hinge of width
``tol`` (Chapelle, Neural Computation 19(5), 2007), with libsvm's Platt scaling
re-implemented: decision values from a 5-fold cross-validation on a random permutation
(libsvm's ``svm_binary_svc_probability``) and the sigmoid fitted by the Newton method of
Lin, Lin & Weng (Machine Learning 68(3), 2007, Algorithm 1). On the label-specific features
(2 m_j distances, thousands of instances) libsvm's SMO needs many passes over the data for
the five cross-validation fits and the final one; the primal solver needs a few dozen
matrix-vector products per fit. docs/methods/lift.md has the equivalence test.

Degenerate labels, as in ``LIFT.m``: when one side is empty (``m_j = 0``) there are no
positive centres and the negative centres are ``min(50, n)`` k-means centres of all training
data; the SVM then sees a single class and the label gets a constant prediction, the class of
the first training instance, with probability 1 or 0.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics.pairwise import euclidean_distances
from sklearn.svm import SVC
from threadpoolctl import threadpool_limits

from pmlbench.core.checks import check_feature_count, check_features, check_label_matrix
from pmlbench.core.parallel import worker_budget
from pmlbench.core.parameters import Interval, Options, ValidatedParameters
from pmlbench.errors import NotApplicable, PmlbenchError
from pmlbench.methods._constraints import BUDGET_NOTE, N_JOBS, POSITIVE, SEED
from pmlbench.numerics.gridpoints import groups_by, point_models

# LIFT.m clusters all training data into this many centres for a label with an empty side.
FALLBACK_CLUSTERS = 50
SOLVERS = ("libsvm", "newton")
# Training instances above which solver=libsvm refuses (docs/methods/lift.md, "Cost"): the
# paper's datasets (at most 3,698 training instances, bibtex) run, corel16k001 (6,883; 540 s,
# 120 times ML-kNN) and delicious (8,052; over 10 minutes) do not.
MAX_LIBSVM_INSTANCES = 5000
# Labels x training instances above which either solver refuses: one clustering and one SVM
# per label cost about q * n. delicious (983 x 8,052 = 7.9M) needed about 17 times ML-kNN's
# time untuned (docs/scaling.md).
MAX_LABEL_INSTANCES = 2_000_000
# Labels above which either solver refuses: each label costs two k-means runs and six SVMs
# per grid point, and the SVMs' cost grows with C. Tuned over the default grid (up to
# C = 100), the suite's budget (docs/protocol.md, "Budget") holds for the datasets with at
# most 75 labels, and fails for corel16k001 (153 labels: 63.3 times ML-kNN's time at noise
# rate 2, the median of the tuned suite's five splits), bibtex (159, 81.2 times), cal500
# (174, where ML-kNN's time is under the budget's 1 s floor) and corel5k (374); yeastbp
# (217; 45.8 times over the first, three-point grid) is expected over it
# (docs/methods/lift.md, "What C = 100 costs").
MAX_LABELS = 150
# libsvm's svm_binary_svc_probability: cross-validation folds of Platt scaling
PLATT_FOLDS = 5
# What the clusters (and so the distance features) depend on: fit_grid clusters once per
# setting of these and trains the SVM of every grid point that shares it on the same features.
CLUSTERING_PARAMETERS = ("ratio", "random_state")
DISTANCE_BLOCK_BYTES = 64 * 2**20


def cluster_count(n_positive: int, n_negative: int, ratio: float) -> int:
    """``m_j = min(ceil(r * |P_j|), ceil(r * |N_j|))``, in floating point as LIFT.m does."""
    return min(math.ceil(ratio * n_positive), math.ceil(ratio * n_negative))


def kmeans_centres(X, n_clusters: int, seed: int) -> np.ndarray:
    """k-means++ seeding, one run, at most 100 iterations (MATLAB kmeans defaults in LIFT.m).

    A single instance is its own centre. sklearn relocates empty clusters to far points, the
    counterpart of MATLAB's ``'EmptyAction','singleton'``.
    """
    if X.shape[0] == 1:
        return X.toarray() if sp.issparse(X) else np.array(X, dtype=np.float64)
    with warnings.catch_warnings():
        # duplicate rows can leave fewer distinct points than clusters; that is expected here
        warnings.simplefilter("ignore", ConvergenceWarning)
        # Elkan's exact acceleration of Lloyd's iterations: the same centres, fewer distances
        # (sklearn runs Lloyd for a single cluster, and warns when asked for Elkan there)
        algorithm = "elkan" if n_clusters > 1 else "lloyd"
        model = KMeans(
            n_clusters=n_clusters, n_init=1, max_iter=100, random_state=seed, algorithm=algorithm
        ).fit(X)
    return np.asarray(model.cluster_centers_, dtype=np.float64)


def sigmoid_train(decision: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Platt's sigmoid ``P(y=1 | f) = 1 / (1 + exp(A f + B))`` fitted as libsvm does.

    Lin, Lin & Weng (2007), Algorithm 1 (libsvm's ``sigmoid_train``): regularised targets
    ``(N+ + 1)/(N+ + 2)`` and ``1/(N- + 2)``, Newton's method with a backtracking line
    search on the cross-entropy, at most 100 iterations, gradient tolerance 1e-5.
    """
    f = np.asarray(decision, dtype=np.float64)
    positive = np.asarray(y) == 1
    prior1 = float(positive.sum())
    prior0 = float(positive.size - prior1)
    t = np.where(positive, (prior1 + 1.0) / (prior1 + 2.0), 1.0 / (prior0 + 2.0))

    def objective(A: float, B: float) -> float:
        z = f * A + B
        # t z + log(1 + exp(-z)) for z >= 0, (t - 1) z + log(1 + exp(z)) otherwise
        return float(np.sum(np.where(z >= 0, t * z, (t - 1) * z) + np.log1p(np.exp(-np.abs(z)))))

    A, B = 0.0, math.log((prior0 + 1.0) / (prior1 + 1.0))
    value = objective(A, B)
    for _ in range(100):
        z = f * A + B
        p = np.exp(-np.logaddexp(0.0, z))  # 1 / (1 + exp(z))
        d2 = p * (1.0 - p)
        h11, h22, h21 = 1e-12 + np.dot(f * f, d2), 1e-12 + d2.sum(), np.dot(f, d2)
        d1 = t - p
        g1, g2 = float(np.dot(f, d1)), float(d1.sum())
        if abs(g1) < 1e-5 and abs(g2) < 1e-5:
            break
        det = h11 * h22 - h21 * h21
        dA, dB = -(h22 * g1 - h21 * g2) / det, -(-h21 * g1 + h11 * g2) / det
        gd = g1 * dA + g2 * dB
        step = 1.0
        while step >= 1e-10:
            new = objective(A + step * dA, B + step * dB)
            if new < value + 1e-4 * step * gd:
                A, B, value = A + step * dA, B + step * dB, new
                break
            step /= 2.0
        else:
            break  # line search failed, as libsvm: keep the current A, B
    return float(A), float(B)


def _huber_slope(z: np.ndarray, h: float) -> np.ndarray:
    """Derivative of the smoothed hinge: 0 (z <= 0), z / h (0 < z < h), 1 (z >= h)."""
    # the array method runs the same clip ufunc as np.clip, without np.clip's dispatch layers
    # (this is called a few times per Newton step, on small arrays)
    return (z / h).clip(0.0, 1.0)


def _exact_line_search(
    wv: float,
    ww: float,
    z: np.ndarray,
    dz: np.ndarray,
    C: float,
    h: float,
    slope_at_zero: np.ndarray | None = None,
) -> float:
    """The minimiser t >= 0 of ``½‖w + t p‖² + C Σ L_h(z_i − t dz_i)`` (``wv = w·p``,
    ``ww = p·p``).

    The derivative in t, ``wv + t ww − C Σ dz_i L_h'(z_i − t dz_i)``, is continuous,
    increasing and piecewise linear: instance i adds ``C dz_i² / h`` to its slope while
    ``z_i − t dz_i`` is inside (0, h), between the breakpoints ``z_i / dz_i`` and
    ``(z_i − h) / dz_i``. The derivative at the full Newton step t = 1 tells which side of it
    the root is on; the breakpoints on that side are sorted and walked with cumulative sums,
    and the root is found exactly on the piece where the derivative changes sign.
    ``slope_at_zero`` is ``_huber_slope(z, h)`` where the caller has it already (the Newton
    step's gradient): ``z − 0·dz`` is ``z``, so the derivative at 0 is the same number.
    """
    # (the calls below are the array methods behind np.sum, np.cumsum, np.argsort and np.diff:
    # the same numbers without their dispatch layers, which cost more than the work on these
    # arrays; this runs once per Newton step)
    slope0 = _huber_slope(z, h) if slope_at_zero is None else slope_at_zero
    at_zero = wv + 0.0 * ww - C * float(np.dot(slope0, dz))
    if at_zero >= 0.0:
        return 0.0
    at_one = wv + ww - C * float(np.dot(_huber_slope(z - dz, h), dz))  # t = 1: t dz is dz
    if np.count_nonzero(dz) == len(dz):
        zm, dzm = z, dz
    else:
        moving = dz != 0.0
        zm, dzm = z[moving], dz[moving]
    first, second = zm / dzm, (zm - h) / dzm
    enter = np.minimum(first, second)  # the instance enters the quadratic zone at t = enter
    leave = np.maximum(first, second)  # ... and leaves it at t = leave
    weight = (C / h) * dzm * dzm
    # walk from `base` over the breakpoints in (base, end]
    base, slope, end = (0.0, at_zero, 1.0) if at_one >= 0.0 else (1.0, at_one, math.inf)
    curvature = ww + float(weight[(enter <= base) & (leave > base)].sum())
    entering = (enter > base) & (enter <= end)
    leaving = (leave > base) & (leave <= end)
    times = np.concatenate([enter[entering], leave[leaving]])
    if len(times):
        changes = np.concatenate([weight[entering], -weight[leaving]])
        order = times.argsort(kind="stable")
        times, changes = times[order], changes[order]
        curvatures = curvature + np.concatenate([[0.0], changes.cumsum()])
        starts = np.concatenate([[base], times])
        # the derivative at each breakpoint: the rise over the pieces before it
        slopes = slope + (curvatures[:-1] * (starts[1:] - starts[:-1])).cumsum()
        crossed = slopes >= 0.0
        first_crossed = int(crossed.argmax())
        piece = first_crossed if crossed[first_crossed] else len(times)
        base = float(starts[piece])
        slope = float(slopes[piece - 1]) if piece > 0 else slope
        curvature = float(curvatures[piece])
    if curvature <= 0.0:
        # the objective is bounded below, so its derivative cannot stay negative
        raise FloatingPointError("LIFT's line search found no minimum along the Newton step")
    return base - slope / curvature


def hinge_svm_newton(
    A: np.ndarray,
    s: np.ndarray,
    C: float,
    h: float,
    max_steps: int = 1000,
    start: np.ndarray | None = None,
    signed: np.ndarray | None = None,
) -> tuple[np.ndarray, int]:
    """Primal linear SVM ``min ½‖w‖² + C Σ max(0, 1 − s_i (w·a_i + b))`` by Newton's method.

    ``A`` holds the features with a last column of ones (the bias b, not penalised, as in
    libsvm), ``s`` the labels ±1 (``signed``: ``A * s[:, None]``, where the caller has it).
    The hinge is replaced by its Huber smoothing of width h
    (0 for z <= 0, z²/2h below h, z − h/2 above; Chapelle, Neural Computation 19(5), 2007,
    Sec. 4), which differs from it by at most h/2 per instance, and minimised from v = 0 by
    Newton steps with an exact line search until the Newton decrement vanishes. The
    smoothed objective is piecewise quadratic, so the steps end at its minimiser whatever
    the start (``start``, default v = 0; tests/test_lift.py checks that a warm start and
    the continuation of :func:`smoothed_svm` reach the same v). Returns v = (w, b) and the
    number of steps.
    """
    p = A.shape[1]
    penalised = np.ones(p)
    penalised[-1] = 0.0
    # the bias has no curvature of its own; the tiny ridge keeps H positive definite and the
    # exact line search takes care of a long step
    ridge = np.diag(penalised + 1e-10)
    SA = A * s[:, None] if signed is None else signed
    v = np.zeros(p) if start is None else start.copy()
    margin = np.zeros(len(s)) if start is None else SA @ v
    # Gram matrix of the rows in the quadratic zone, updated with the rows entering and leaving
    inside = np.zeros(len(s), dtype=bool)
    gram = np.zeros((p, p))
    for step in range(max_steps):
        z = 1.0 - margin
        slope = _huber_slope(z, h)
        gradient = penalised * v - C * (SA.T @ slope)
        now = (z > 0) & (z < h)
        changed = now != inside  # entering (now, not inside) or leaving (inside, not now)
        n_changed = np.count_nonzero(changed)
        if n_changed > np.count_nonzero(now) // 2:
            rows = A[now]
            gram = rows.T @ rows
        elif n_changed:
            rows_in, rows_out = A[changed & now], A[changed & inside]
            gram += rows_in.T @ rows_in - rows_out.T @ rows_out
        inside = now
        hessian = ridge + (C / h) * gram
        direction = -_positive_definite_solve(hessian, gradient)
        decrement = -float(gradient @ direction)
        if decrement <= 1e-20 * (1.0 + float(v @ (penalised * v))):
            return _centre_flat_bias(v, z, s, h), step
        dz = SA @ direction
        t = _exact_line_search(
            float(v @ (penalised * direction)),
            float(direction @ (penalised * direction)),
            z,
            dz,
            C,
            h,
            slope,
        )
        v = v + t * direction
        margin = margin + t * dz
    return _centre_flat_bias(v, 1.0 - margin, s, h), max_steps


# LAPACK's Cholesky factorisation and solve, the routines scipy.linalg.cho_factor and cho_solve
# call (potrf with lower=0, clean=0; potrs), for float64
_POTRF, _POTRS = scipy.linalg.get_lapack_funcs(("potrf", "potrs"), (np.zeros((1, 1)),))


def _positive_definite_solve(matrix: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """``cho_solve(cho_factor(matrix), rhs)``: the same LAPACK calls, so the same numbers,
    without scipy's checks and batching wrappers around them, which cost more than the solve
    itself on these small systems (a tuned split makes hundreds of thousands of them).
    Least squares where ``matrix`` is not positive definite (cho_factor's LinAlgError)."""
    factor, info = _POTRF(matrix, lower=False, overwrite_a=False, clean=False)
    if info > 0:
        return np.linalg.lstsq(matrix, rhs, rcond=None)[0]
    if info == 0:
        solution, info = _POTRS(factor, rhs, lower=False, overwrite_b=False)
    if info != 0:
        raise ValueError(f"LAPACK's Cholesky routines reported an illegal argument ({info})")
    return solution


def _centre_flat_bias(v: np.ndarray, z: np.ndarray, s: np.ndarray, h: float) -> np.ndarray:
    """The midpoint of the biases that are optimal for the final w (libsvm's choice).

    The objective can be flat in b over an interval: with no instance in the quadratic zone
    and as many positives as negatives paying the linear part, b moves nothing until an
    instance changes zone. Any b there is optimal and libsvm takes the middle of its range;
    without this, where the steps stop inside (or at the end of) such an interval would
    depend on round-off. The interval is where the derivative in b is zero up to 1e-9 per
    instance, found by bisection (the derivative is monotone in b).
    """
    # raising b by delta lowers the positives' z and raises the negatives': z + sign * delta
    # (z − delta is z + (−delta) exactly)
    sign = np.where(s > 0, -1.0, 1.0)

    def slope(delta: float) -> float:
        return float(np.dot(_huber_slope(z + sign * delta, h), sign))

    tolerance = 1e-9 * len(s)
    if abs(slope(0.0)) > tolerance:
        return v
    reach = float(np.max(np.abs(z))) + h + 1.0
    ends = []
    for side in (-1.0, 1.0):
        inner, outer = 0.0, side * reach  # slope within tolerance at inner, beyond at outer
        if abs(slope(side * 1e-9)) > tolerance:
            ends.append(0.0)  # not flat on this side (the usual case): no search
            continue
        for _ in range(60):
            middle = 0.5 * (inner + outer)
            if abs(slope(middle)) <= tolerance:
                inner = middle
            else:
                outer = middle
        ends.append(inner)
    v = v.copy()
    v[-1] += 0.5 * (ends[0] + ends[1])
    return v


@dataclass
class PlattLinearSVM:
    """A linear SVM ``f(x) = w·x + b`` with Platt's sigmoid of the positive class."""

    coef: np.ndarray
    intercept: float
    A: float
    B: float
    n_steps: int

    def decision_function(self, features: np.ndarray) -> np.ndarray:
        return features @ self.coef + self.intercept

    def positive_probability(self, features: np.ndarray) -> np.ndarray:
        """``1 / (1 + exp(A f + B))``, computed without overflow."""
        return np.exp(-np.logaddexp(0.0, self.A * self.decision_function(features) + self.B))


def _bounded(x: np.ndarray, ranges: np.ndarray):
    """scikit-learn's ``bounded_rand_int`` (Lemire's method) on raw 32-bit draws ``x``: the
    values ``floor(x·range / 2³²)`` and whether a draw would be rejected."""
    m = x * ranges
    threshold = (np.uint64(2**32) % ranges).astype(np.uint64)  # (-range) mod range in uint32
    return (m >> np.uint64(32)).astype(np.int64), (m & np.uint64(0xFFFFFFFF)) < threshold


def libsvm_permutation(n: int, random_state: int) -> np.ndarray:
    """The shuffle of ``svm_binary_svc_probability`` in scikit-learn's libsvm, exactly.

    ``SVC(random_state=r).fit`` seeds libsvm with ``RandomState(r).randint(INT_MAX)``;
    libsvm seeds a 32-bit Mersenne twister with it (``std::mt19937::seed``, the same
    initialisation as NumPy's legacy ``RandomState``) and shuffles 0..n-1 by Fisher-Yates,
    position i swapped with ``i + bounded_rand_int(n - i)``. The indices refer to the
    instances grouped by class, class 0 first (libsvm's ``svm_group_classes``).
    """
    seed = np.random.RandomState(random_state).randint(np.iinfo("i").max)
    stream = np.random.RandomState(seed)
    ranges = np.arange(n, 0, -1, dtype=np.uint64)
    offsets, rejected = _bounded(stream.randint(0, 2**32, size=n, dtype=np.uint64), ranges)
    if rejected.any():  # about n²/2³³ chance: redo draw by draw, rejections consuming draws
        stream = np.random.RandomState(seed)
        for i in range(n):
            while True:
                draw = stream.randint(0, 2**32, size=1, dtype=np.uint64)
                value, reject = _bounded(draw, ranges[i : i + 1])
                if not reject[0]:
                    offsets[i] = value[0]
                    break
    permutation = np.arange(n)
    targets = np.arange(n) + offsets
    for i, j in enumerate(targets.tolist()):
        permutation[i], permutation[j] = permutation[j], permutation[i]
    return permutation


# Wider smoothings solved first, each warm-starting the next (Chapelle 2007, Sec. 4): the
# minimiser of the final width is reached in about 40 % fewer Newton steps than from zero.
CONTINUATION_WIDTHS = (1.0, 0.03)


def smoothed_svm(
    A: np.ndarray,
    s: np.ndarray,
    C: float,
    tol: float,
    start: np.ndarray | None = None,
    signed: np.ndarray | None = None,
) -> tuple[np.ndarray, int]:
    """:func:`hinge_svm_newton` at width ``tol``, from ``start`` when given (a nearby
    solution), otherwise after the wider widths of ``CONTINUATION_WIDTHS``. The final
    width's minimiser does not depend on the start; the number of steps does. ``signed``:
    ``A * s[:, None]``, where the caller has it."""
    SA = A * s[:, None] if signed is None else signed
    widths = [width for width in CONTINUATION_WIDTHS if width > tol] if start is None else []
    v, steps = hinge_svm_newton(A, s, C, widths[0] if widths else tol, start=start, signed=SA)
    for width in [*widths[1:], tol] if widths else []:
        v, taken = hinge_svm_newton(A, s, C, width, start=v, signed=SA)
        steps += taken
    return v, steps


@dataclass(frozen=True)
class SVMRows:
    """Instances of a primal SVM problem: features with a last column of ones (``A``), the
    labels ±1 (``s``) and their product ``A * s[:, None]`` (``signed``)."""

    A: np.ndarray
    s: np.ndarray
    signed: np.ndarray

    @classmethod
    def of(cls, A: np.ndarray, s: np.ndarray) -> SVMRows:
        return cls(A, s, A * s[:, None])


@dataclass(frozen=True)
class PlattFold:
    """One fold of Platt scaling's cross-validation: the held-out instances, and the SVM
    problem of the others, or the decision value every held-out instance gets when the
    others hold one class only."""

    held: np.ndarray
    A_held: np.ndarray
    rest: SVMRows | None
    constant: float = 0.0


@dataclass(frozen=True)
class PlattProblem:
    """Everything :func:`platt_newton` computes before the SVM's cost C enters: the centred
    features, the permutation and the five folds. Depends on the features, the labels and
    the seed only, so a grid over C builds it once per label (:meth:`LIFT.fit_grid`)."""

    y: np.ndarray
    mean: np.ndarray
    whole: SVMRows
    folds: tuple[PlattFold, ...]


def platt_problem(features: np.ndarray, y: np.ndarray, seed: int) -> PlattProblem:
    """The C-independent part of :func:`platt_newton`: features centred (the distances to
    the centres share a large common part; with an unpenalised bias the optimum does not
    depend on the shift) with a column of ones appended, and libsvm's Platt folds (the
    permutation libsvm draws for ``SVC(random_state=seed)``, :func:`libsvm_permutation`,
    cut into ``PLATT_FOLDS`` consecutive parts)."""
    n = len(y)
    s = np.where(y == 1, 1.0, -1.0)
    mean = features.mean(axis=0)
    A = np.hstack([features - mean, np.ones((n, 1))])
    grouped = np.concatenate([np.flatnonzero(y != 1), np.flatnonzero(y == 1)])
    permutation = grouped[libsvm_permutation(n, seed)]
    folds = []
    for fold in range(PLATT_FOLDS):
        begin, end = fold * n // PLATT_FOLDS, (fold + 1) * n // PLATT_FOLDS
        held = permutation[begin:end]
        if held.size == 0:
            continue
        rest = np.concatenate([permutation[:begin], permutation[end:]])
        positive = s[rest] > 0
        if positive.all() or not positive.any():
            constant = 1.0 if positive.all() else -1.0
            folds.append(PlattFold(held, A[held], None, constant))
        else:
            folds.append(PlattFold(held, A[held], SVMRows.of(A[rest], s[rest])))
    return PlattProblem(y, mean, SVMRows.of(A, s), tuple(folds))


def platt_newton(
    features: np.ndarray, y: np.ndarray, C: float, tol: float, seed: int
) -> PlattLinearSVM:
    """libsvm's ``-b 1`` training with the SVM solved in the primal (:func:`hinge_svm_newton`).

    As ``svm_binary_svc_probability``: a random permutation cut into 5 consecutive folds
    (the permutation libsvm draws for ``SVC(random_state=seed)``, :func:`libsvm_permutation`,
    so both solvers see the same folds), each fold's decision values from an SVM trained on
    the others (+1 or -1 when those hold one class only), the sigmoid fitted to them
    (:func:`sigmoid_train`), and the SVM trained on all instances. Features are centred
    first (:func:`platt_problem`, the part that does not depend on C; then
    :func:`platt_newton_at`).
    """
    return platt_newton_at(platt_problem(features, y, seed), C, tol)


def platt_newton_at(problem: PlattProblem, C: float, tol: float) -> PlattLinearSVM:
    """:func:`platt_newton` on a prepared :class:`PlattProblem`, at cost C and width tol."""
    whole = problem.whole
    v, steps = smoothed_svm(whole.A, whole.s, C, tol, signed=whole.signed)
    decision = np.zeros(len(problem.y))
    for fold in problem.folds:
        if fold.rest is None:
            decision[fold.held] = fold.constant
            continue
        # the fold's problem shares 80 % of its instances with the whole one
        rest = fold.rest
        v_fold, fold_steps = smoothed_svm(rest.A, rest.s, C, tol, start=v, signed=rest.signed)
        decision[fold.held] = fold.A_held @ v_fold
        steps += fold_steps
    platt_a, platt_b = sigmoid_train(decision, problem.y)
    w = v[:-1]
    return PlattLinearSVM(
        coef=w, intercept=float(v[-1] - w @ problem.mean), A=platt_a, B=platt_b, n_steps=steps
    )


@dataclass
class LabelModel:
    """One label's centres (positive first) and its SVM, or a constant for a degenerate label."""

    centres: np.ndarray
    n_positive_centres: int
    svm: SVC | PlattLinearSVM | None = None
    constant: int | None = None


@dataclass(frozen=True)
class SVMSetting:
    """What a label's SVM depends on besides its features: the cost, the solver, the tolerance."""

    C: float
    solver: str = "newton"
    tol: float = 1e-3


def fit_label(
    X,
    y: np.ndarray,
    ratio: float,
    C: float,
    seeds: np.ndarray,
    fallback_centres: np.ndarray | None,
    solver: str = "libsvm",
    tol: float = 1e-3,
) -> LabelModel:
    """Clusters, distance features and a Platt-scaled linear SVM for one label (LIFT's steps).

    One thread: labels already run in parallel, and sklearn's multi-threaded k-means sums
    its chunks in scheduling order, which would make centres depend on the thread count.
    """
    settings = [SVMSetting(C, solver, tol)]
    return fit_label_settings(X, y, ratio, settings, seeds, fallback_centres)[0]


def fit_label_settings(
    X,
    y: np.ndarray,
    ratio: float,
    settings: Sequence[SVMSetting],
    seeds: np.ndarray,
    fallback_centres: np.ndarray | None,
) -> list[LabelModel]:
    """:func:`fit_label` for several SVM settings at once: the clusters and the distance
    features (which depend on the ratio and the seeds only) are computed once, and so is the
    Newton solver's :class:`PlattProblem`; then one SVM per setting is trained on them from
    scratch, exactly as :func:`fit_label` trains it."""
    with threadpool_limits(1):
        return _fit_label(X, y, ratio, settings, seeds, fallback_centres)


def _fit_label(X, y, ratio, settings, seeds, fallback_centres) -> list[LabelModel]:
    positive, negative = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    m = cluster_count(len(positive), len(negative), ratio)
    if m == 0:
        constant = LabelModel(centres=fallback_centres, n_positive_centres=0, constant=int(y[0]))
        return [constant] * len(settings)
    centres = np.vstack(
        [
            kmeans_centres(X[positive], m, int(seeds[0])),
            kmeans_centres(X[negative], m, int(seeds[1])),
        ]
    )
    features = euclidean_distances(X, centres)
    # the Platt problem (centred features, folds) is the same for every C: built once
    problem: list[PlattProblem] = []
    return [
        LabelModel(
            centres=centres,
            n_positive_centres=m,
            svm=_train_svm(features, y, setting, seeds, problem),
        )
        for setting in settings
    ]


def _train_svm(
    features: np.ndarray,
    y: np.ndarray,
    setting: SVMSetting,
    seeds: np.ndarray,
    problem: list[PlattProblem],
) -> SVC | PlattLinearSVM:
    """The Platt-scaled linear SVM of one label on its distance features. ``problem`` holds
    the label's :class:`PlattProblem` once the first Newton setting has built it."""
    if setting.solver == "newton":
        if not problem:
            problem.append(platt_problem(features, y, int(seeds[2])))
        return platt_newton_at(problem[0], setting.C, setting.tol)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # probability=True, deprecated in 1.9
        svm = SVC(
            kernel="linear",
            C=setting.C,
            tol=setting.tol,
            probability=True,
            random_state=int(seeds[2]),
        )
        svm.fit(features, y)
    return svm


def positive_probability(svm: SVC | PlattLinearSVM, features: np.ndarray) -> np.ndarray:
    """Platt probability (libsvm's ``-b 1``) of the positive class."""
    if isinstance(svm, PlattLinearSVM):
        return svm.positive_probability(features)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return svm.predict_proba(features)[:, list(svm.classes_).index(1)]


class LIFT(ValidatedParameters, BaseEstimator):
    """LIFT with a linear SVM per label (Zhang & Wu 2015), trained on candidate labels.

    Args:
        ratio: the clustering ratio r, in (0, 1] (authors' default 0.1); r > 1 would ask
            for more clusters than the smaller side of a label has instances.
        C: the SVM's cost, > 0 (libsvm default 1, as ``LIFT.m`` uses).
        solver: "newton" (the SVM solved in the primal, with libsvm's Platt scaling; see the
            module docstring) or "libsvm" (``SVC(kernel="linear", probability=True)``, the
            authors' path, many times slower; docs/methods/lift.md, "Solvers").
        tol: > 0, libsvm's stopping tolerance (its default 1e-3), or for "newton" the final
            width of the smoothed hinge, which is within C·tol/2 of the hinge per instance.
        max_libsvm_instances: with solver="libsvm", refuse (``NotApplicable``, before any
            work) more training instances than this, an integer >= 1 or None (no cap).
        max_label_instances: with either solver, refuse (``NotApplicable``, before any work)
            when labels x training instances exceed this, an integer >= 1 or None (no cap).
        max_labels: with either solver, refuse (``NotApplicable``, before any work) more
            labels than this, an integer >= 1 or None (no cap).
        n_jobs: processes training labels in parallel (joblib; -1 = all cores; None = the
            job's thread budget, which parallel sweeps lower). Results do not depend on it.
        random_state: seeds k-means and Platt scaling, an integer in [0, 2**32) or None;
            each label gets its own derived seeds.
    """

    default_bipartition = {"rule": "method"}
    # the SVM's cost around libsvm's default 1 (LIFT.m), a decade apart; widened to 100, where
    # the tuned suite's selections lay (docs/methods/lift.md, "Tuning grid")
    default_tuning_grid = {"C": [0.1, 1.0, 10.0, 100.0]}
    parameter_constraints = {
        "ratio": [Interval(float, 0, 1, closed="right")],
        "C": POSITIVE,
        "solver": [Options(SOLVERS)],
        "tol": POSITIVE,
        "max_libsvm_instances": [None, Interval(int, 1, None)],
        "max_label_instances": [None, Interval(int, 1, None)],
        "max_labels": [None, Interval(int, 1, None)],
        "n_jobs": N_JOBS,
        "random_state": SEED,
    }

    def __init__(
        self,
        ratio: float = 0.1,
        C: float = 1.0,
        solver: str = "newton",
        tol: float = 1e-3,
        max_libsvm_instances: int | None = MAX_LIBSVM_INSTANCES,
        max_label_instances: int | None = MAX_LABEL_INSTANCES,
        max_labels: int | None = MAX_LABELS,
        n_jobs: int | None = None,
        random_state: int | None = None,
    ):
        self.ratio = ratio
        self.C = C
        self.solver = solver
        self.tol = tol
        self.max_libsvm_instances = max_libsvm_instances
        self.max_label_instances = max_label_instances
        self.max_labels = max_labels
        self.n_jobs = n_jobs
        self.random_state = random_state

    def fit(self, X, Y) -> LIFT:
        """Train one clustering + SVM per label on the candidate labels ``Y``."""
        self._validate_params()
        self._check_cost(X, Y)
        start = time.perf_counter()
        X, Y, label_seeds, fallback = self._prepare(X, Y)
        models = self._fit_labels(X, Y, label_seeds, fallback, [self._svm_setting()])
        self._set_fitted([label[0] for label in models], X.shape[1], start)
        return self

    def fit_grid(self, X, Y, points: Sequence[Mapping[str, Any]]) -> Iterator[tuple[int, LIFT]]:
        """Every grid point fitted on the same training data (tuning's hook).

        The points are grouped by what the clusters depend on
        (:data:`CLUSTERING_PARAMETERS`): per group and label the two k-means runs, the
        distance features and the Platt problem (:func:`platt_problem`) are computed once,
        and the SVM of every point of the group is trained on them from scratch
        (:func:`fit_label_settings`), so a grid over ``C`` costs one clustering per ratio.
        Each estimator yielded is identical to ``clone(self).set_params(**point).fit(X, Y)``.
        """
        models = point_models(self, points)
        for model in models:
            model._validate_params()
            model._check_cost(X, Y)
        prepared: dict[Any, tuple] = {}
        for indices in groups_by(models, CLUSTERING_PARAMETERS).values():
            start = time.perf_counter()
            first = models[indices[0]]
            if first.random_state not in prepared:
                prepared[first.random_state] = first._prepare(X, Y)
            X_checked, Y_checked, label_seeds, fallback = prepared[first.random_state]
            settings = [models[index]._svm_setting() for index in indices]
            per_label = first._fit_labels(X_checked, Y_checked, label_seeds, fallback, settings)
            for position, index in enumerate(indices):
                label_models = [label[position] for label in per_label]
                models[index]._set_fitted(label_models, X_checked.shape[1], start)
                yield index, models[index]

    def _svm_setting(self) -> SVMSetting:
        return SVMSetting(float(self.C), self.solver, float(self.tol))

    def _prepare(self, X, Y) -> tuple:
        """Checked features and labels, each label's seeds (positive k-means, negative
        k-means, Platt scaling) and the shared fallback centres of degenerate labels."""
        X = check_features(X)
        Y = check_label_matrix(Y, what="candidate labels", n_rows=X.shape[0])
        n, q = Y.shape
        if n < 2:
            raise PmlbenchError(f"LIFT needs at least 2 training instances, got {n}")
        seeds = np.random.SeedSequence(self.random_state).generate_state(3 * q + 1).reshape(-1)
        label_seeds = seeds[: 3 * q].reshape(q, 3)
        counts = Y.sum(axis=0)
        fallback = None
        if np.any((counts == 0) | (counts == n)):
            with threadpool_limits(1):
                fallback = kmeans_centres(X, min(FALLBACK_CLUSTERS, n), int(seeds[-1]))
        return X, Y, label_seeds, fallback

    def _fit_labels(
        self,
        X,
        Y: np.ndarray,
        label_seeds: np.ndarray,
        fallback: np.ndarray | None,
        settings: list[SVMSetting],
    ) -> list[list[LabelModel]]:
        """Per label, its model for each SVM setting (labels in parallel)."""
        ratio = float(self.ratio)
        return Parallel(n_jobs=worker_budget(self.n_jobs, "method.n_jobs"))(
            delayed(fit_label_settings)(X, Y[:, j], ratio, settings, label_seeds[j], fallback)
            for j in range(Y.shape[1])
        )

    def _set_fitted(self, models: list[LabelModel], n_features: int, start: float) -> None:
        self.models_: list[LabelModel] = list(models)
        self.n_features_in_ = n_features
        centres = [len(mdl.centres) for mdl in self.models_ if mdl.constant is None]
        self.diagnostics_ = {
            "n_constant_labels": int(sum(mdl.constant is not None for mdl in self.models_)),
            "centres_per_label_min": int(min(centres, default=0)),
            "centres_per_label_max": int(max(centres, default=0)),
            "centres_total": int(sum(centres)),
            "newton_steps": int(
                sum(mdl.svm.n_steps for mdl in self.models_ if isinstance(mdl.svm, PlattLinearSVM))
            ),
            "fit_seconds": round(time.perf_counter() - start, 3),
        }

    def _check_cost(self, X, Y) -> None:
        """Refuse, before any work, problems beyond the caps. ``max_label_instances`` and
        ``max_labels`` are checked first: they apply to both solvers, so their refusal never
        points to a solver that would refuse too.
        """
        n = getattr(X, "shape", (0,))[0]
        shape: tuple[int, ...] = tuple(getattr(Y, "shape", ()))
        q = shape[1] if len(shape) == 2 else 0
        cap = self.max_label_instances
        if cap is not None and n * q > cap:
            raise NotApplicable(
                f"lift fits a clustering and an SVM per label: {q:,} labels x {n:,} training "
                f"instances = {n * q:,} exceed method.max_label_instances={cap}; raise it (or "
                "set it to null) to run anyway"
            )
        cap = self.max_labels
        if cap is not None and q > cap:
            raise NotApplicable(
                f"lift fits two clusterings and six SVMs per label and grid point: {q:,} labels "
                f"exceed method.max_labels={cap}, over the suite's budget ({BUDGET_NOTE}); "
                "raise it (or set it to null) to run anyway"
            )
        cap = self.max_libsvm_instances
        if self.solver == "libsvm" and cap is not None and n > cap:
            raise NotApplicable(
                f"lift with method.solver=libsvm trains 6 SVMs per label by SMO, whose cost "
                f"grows with the square of the training instances: {n:,} instances exceed "
                f"method.max_libsvm_instances={cap}; use method.solver=newton (the same SVM "
                "solved in the primal) or raise the cap to run anyway"
            )

    def decision_function(self, X) -> np.ndarray:
        """Platt probability of the positive class for every label (n x q)."""
        X = check_features(X)
        check_feature_count(X, self.n_features_in_, method="LIFT")
        trained = [mdl for mdl in self.models_ if mdl.constant is None]
        centres = (
            np.vstack([mdl.centres for mdl in trained])
            if trained
            else np.zeros((0, self.n_features_in_))
        )
        n = X.shape[0]
        scores = np.empty((n, len(self.models_)))
        # distances to the centres of all labels at once, in blocks of rows: on delicious the
        # whole matrix (8,000 test rows x 61,000 centres) would take 3.9 GB
        rows = max(1, DISTANCE_BLOCK_BYTES // (8 * max(1, len(centres))))
        for start in range(0, n, rows):
            block = slice(start, min(start + rows, n))
            distances = euclidean_distances(X[block], centres)
            offset = 0
            for j, mdl in enumerate(self.models_):
                if mdl.constant is not None:
                    scores[block, j] = float(mdl.constant)
                    continue
                features = distances[:, offset : offset + len(mdl.centres)]
                offset += len(mdl.centres)
                scores[block, j] = positive_probability(mdl.svm, features)
        return scores

    def predict(self, X) -> np.ndarray:
        """Labels whose positive-class probability exceeds 0.5 (libsvm's ``-b 1`` label)."""
        return (self.decision_function(X) > 0.5).astype(np.uint8)
