"""Parameter constraints shared by the built-in methods, and the checks that need the data.

Every built-in method declares ``parameter_constraints`` (see :mod:`pmlbench.core.parameters`)
for each constructor parameter and calls ``self._validate_params()`` first thing in ``fit``.
The entries below are the ones several methods share. What a constraint cannot know, because
it depends on the training data (more neighbours than instances, more folds than
instances), is checked by :func:`check_neighbours` and :func:`check_folds` at the start of
``fit``, with the same ``method.<param>`` naming.
"""

from __future__ import annotations

from pmlbench.core import parallel
from pmlbench.core.parameters import Constraint, Interval, Type
from pmlbench.errors import NotApplicable, PmlbenchError

POSITIVE_INT: list[Constraint] = [Interval(int, 1, None)]
NON_NEGATIVE: list[Constraint] = [Interval(float, 0, None)]
POSITIVE: list[Constraint] = [Interval(float, 0, None, closed="neither")]
REAL: list[Constraint] = [Interval(float)]
RATE: list[Constraint] = [Interval(float, 0, 1, closed="left")]  # propagation rates, [0, 1)
FLAG: list[Constraint] = [Type(bool)]
# threadpoolctl's limit: None keeps the library default
BLAS_THREADS: list[Constraint] = [None, Interval(int, 1, None)]
# joblib's n_jobs: None (the job's thread budget) or an n_jobs that is set (core.parallel)
N_JOBS: list[Constraint] = [None, *parallel.N_JOBS]
# the runner fills in the split's seed, drawn from [0, 2**32): NumPy's legacy seed range
SEED: list[Constraint] = [None, Interval(int, 0, 2**32 - 1)]
# where a cap's refusal points for the budget it enforces (the rule itself, in
# pmlbench.core.budget, stays out of the methods' code: its bound is the report's to check)
BUDGET_NOTE = 'docs/protocol.md, "Budget"'

# caps on a method's cost: an integer >= 1, or None for no cap
CAP: list[Constraint] = [None, Interval(int, 1, None)]
# The order of the Gram matrix (features + bias) that PML-NI and PML-LRS solve against in each
# ALM iteration. 2500 admits every bundled dataset but the three yeast GO sets (6,139 sparse
# features), where one split took 30-124 times ML-kNN's time (docs/scaling.md).
MAX_GRAM_ORDER = 2500


def check_neighbours(
    k: int,
    n_instances: int,
    *,
    key: str = "method.k",
    exclude_self: bool = True,
    data: str = "the training data",
) -> None:
    """Refuse more neighbours than ``n_instances`` provide (self excluded unless not)."""
    available = n_instances - 1 if exclude_self else n_instances
    if k <= available:
        return
    besides = " besides itself" if exclude_self else ""
    remedy = (
        f"use {key} <= {available} or more training data"
        if available >= 1
        else f"use at least {k + 1 if exclude_self else k} training instances"
    )
    raise PmlbenchError(
        f"{key} = {k} neighbours requested but {data} has {n_instances} instances, so each "
        f"has at most {available} neighbours{besides}; {remedy}"
    )


def check_folds(n_folds: int, n_instances: int, *, key: str = "method.n_folds") -> None:
    """Refuse more cross-validation folds than training instances."""
    if n_folds > n_instances:
        raise PmlbenchError(
            f"{key} = {n_folds} folds requested but the training data has {n_instances} "
            f"instances; use {key} <= {n_instances}"
        )


def check_gram_order(n_columns: int, max_order: int | None, max_iter: int, *, method: str) -> None:
    """Refuse, before any work, a feature space whose Gram matrix is larger than ``max_order``.

    ``n_columns`` is the order of the matrix the method solves against (features plus the
    bias column); the refusal is :class:`~pmlbench.errors.NotApplicable`, which a sweep
    records as n/a, and names ``method.max_order`` as the option that lifts it.
    """
    if max_order is None or n_columns <= max_order:
        return
    raise NotApplicable(
        f"{method} solves against a {n_columns:,} x {n_columns:,} Gram matrix (features + "
        f"bias) in each of up to {max_iter} iterations, over method.max_order={max_order} "
        f"(set for the suite's budget, {BUDGET_NOTE}); set method.max_order=null to run it "
        "anyway"
    )
