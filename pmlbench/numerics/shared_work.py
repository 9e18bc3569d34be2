"""Fits that share work on one training set (used by PML-PLR, PML-MA, PML-WFGALC, PML-LRIG
and PMNDP).

Many parts of these methods' fits (scaling, random draws, kernel features, graphs,
factorisations) depend on the training set and on a few parameters only. A method
subclasses :class:`SharedWork` with one method per part, each computed through
:meth:`SharedWork._once` once per distinct value of the parameters it depends on, and mixes
:class:`SharedWorkFitting` into its estimator, which defines ``_checked`` (validated
parameters and inputs, refusals before any work) and ``_fit`` (one fit from the shared
work). ``fit`` uses a fresh :class:`SharedWork`, ``fit_grid``
(:meth:`pmlbench.plugin.MethodHooks.fit_grid`) one for the whole grid. Each part is computed
as a fit alone computes it, and the iterations are never shared, so every grid point's fit
is identical to a fit of that point alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, TypeVar

import numpy as np
from sklearn.base import clone
from threadpoolctl import threadpool_limits

Estimator = TypeVar("Estimator", bound="SharedWorkFitting")


class SharedWork:
    """The parts of a fit that depend on the training set and on a few parameters only, each
    computed once per distinct value of those parameters.

    ``X`` dense float64 training features, ``Y`` their 0/1 candidate labels (n x l).
    """

    def __init__(self, X: np.ndarray, Y: np.ndarray):
        self.X, self.Y = X, Y
        self._memo: dict[tuple, object] = {}

    def _once(self, key: tuple, compute: Callable[[], Any]) -> Any:
        """``compute()`` the first time ``key`` is asked for, the same object afterwards."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def seed(self, model: Any) -> int:
        """``model.random_state``, or for None one seed drawn for all the fits sharing this
        work (a fit from scratch draws anew)."""
        if model.random_state is not None:
            return model.random_state
        return self._once(("entropy",), lambda: np.random.SeedSequence().entropy)


class SharedWorkFitting:
    """``fit`` and ``fit_grid`` of an estimator whose fits take their training-set parts from
    a :class:`SharedWork` of class ``work_type``, with at most ``blas_threads`` BLAS threads
    (None: the library default)."""

    work_type: ClassVar[type[SharedWork]]
    blas_threads: int | None

    def _checked(self, X: Any, Y: Any) -> tuple[np.ndarray, np.ndarray]:
        """Validated parameters and inputs (dense float64 features, 0/1 candidate labels);
        refusals before any work."""
        raise NotImplementedError

    def _fit(self, work: Any, start: float) -> None:
        """One fit from ``work``; ``start`` is when the fit began (``time.perf_counter``)."""
        raise NotImplementedError

    def fit(self: Estimator, X: Any, Y: Any) -> Estimator:
        """Fit on training features and their candidate labels (see ``_fit``)."""
        start = time.perf_counter()
        X, Y = self._checked(X, Y)
        with threadpool_limits(self.blas_threads, user_api="blas"):
            self._fit(self.work_type(X, Y), start)
        return self

    def fit_grid(
        self: Estimator, X: Any, Y: Any, points: Sequence[Mapping[str, Any]]
    ) -> Iterator[tuple[int, Estimator]]:
        """Fit every grid point on the same training set (tuning's hook, pmlbench.plugin),
        each from the one :class:`SharedWork` (see ``work_type``) and from the same start as
        a fit of that point alone, so each fit is identical to it."""
        work = None
        for index, point in enumerate(points):
            start = time.perf_counter()
            model = clone(self).set_params(**point)
            X, Y = model._checked(X, Y)
            work = work if work is not None else model.work_type(X, Y)
            with threadpool_limits(model.blas_threads, user_api="blas"):
                model._fit(work, start)
            yield index, model
