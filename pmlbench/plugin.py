"""The public API for plugin authors: everything a third-party plugin may import from pmlbench.

A plugin distribution imports from this module only (and from :mod:`pmlbench.testing` in its
tests); everything else in pmlbench may move between releases. What is here:

- the types a plugin returns or builds on: :class:`Dataset`, :class:`Metric`,
  :class:`ExternalCommand` / :class:`ExternalSpec` (wrap a program that trains and tests
  through files), and the errors :class:`PmlbenchError` (bad input or configuration; the
  command line prints its one-line message without a traceback), :class:`PluginError` and
  :class:`NotApplicable` (raised by a method's ``fit`` before any work when the input is
  beyond what the method can do; the unit is recorded as n/a, not as a failure);
- the shape of each plugin kind as a ``typing.Protocol``: :class:`Method` (with the optional
  hooks described by :class:`MethodHooks`), :class:`DatasetLoader`, :class:`NoiseModel` and
  :class:`MetricFunction`;
- helpers pmlbench's own plugins use: exact kNN search with MATLAB tie-breaking
  (:func:`kneighbors`, :func:`neighbor_counts`), input checks (:func:`check_features`,
  :func:`check_label_matrix`, :func:`as_dense`), declarative parameter constraints
  (:class:`Interval`, :class:`Options`, :class:`Type`, :class:`ValidatedParameters`,
  :func:`validate_parameters`) and the uniform noise model with its counting rule
  (:func:`uniform_noise`, :func:`noise_counts`, :data:`ROUNDING`).

docs/plugins.md explains each contract; ``pmlbench check-plugin NAME`` and
:mod:`pmlbench.testing` check a plugin against them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar, Protocol, TypeAlias, runtime_checkable

import numpy as np
import scipy.sparse as sp

from pmlbench.core.checks import as_dense, check_features, check_label_matrix
from pmlbench.core.parameters import (
    Constraint,
    Interval,
    Options,
    Type,
    ValidatedParameters,
    validate_parameters,
)
from pmlbench.datasets.dataset import Dataset
from pmlbench.errors import NotApplicable, PluginError, PmlbenchError
from pmlbench.methods.external import ExternalCommand, ExternalSpec
from pmlbench.metrics.base import Metric
from pmlbench.noise.uniform import ROUNDING, noise_counts, uniform_noise
from pmlbench.numerics.neighbors import kneighbors, neighbor_counts

Features: TypeAlias = np.ndarray | sp.csr_matrix
"""n x d features: a dense float64 array or a float64 CSR matrix."""

LabelMatrix: TypeAlias = np.ndarray
"""n x l labels, instances in rows: a uint8 array of 0/1."""


@runtime_checkable
class Method(Protocol):
    """A method plugin: a scikit-learn style estimator for partial multi-label learning.

    Required: ``fit``, ``decision_function`` and ``predict`` (a run checks these three), and
    scikit-learn's ``get_params``/``set_params`` (subclass ``sklearn.base.BaseEstimator``
    and store each constructor argument unchanged under its own name), which cloning for
    tuning and out-of-fold bipartition needs. Hyper-parameters are constructor arguments;
    a ``random_state=None`` argument is filled with the split's seed.

    Optional hooks, read when present (their types: :class:`MethodHooks`):
    ``default_bipartition``, ``default_tuning_grid``, ``parameter_constraints``,
    ``machine_dependent`` (class attributes), ``diagnostics_`` and ``disambiguation_scores_``
    (set by ``fit``), and the method ``fit_grid`` (:meth:`MethodHooks.fit_grid`).
    """

    def fit(self, X: Features, Y: LabelMatrix) -> Any:
        """Learn from training features and **candidate** labels, handed as read-only arrays
        (copy one before modifying it)."""
        ...

    def decision_function(self, X: Features) -> np.ndarray:
        """n x l finite real scores, higher meaning more likely relevant."""
        ...

    def predict(self, X: Features) -> np.ndarray:
        """n x l 0/1 predictions (used by ``bipartition.rule=method``)."""
        ...

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor arguments by name (scikit-learn)."""
        ...

    def set_params(self, **params: Any) -> Any:
        """Set constructor arguments by name (scikit-learn)."""
        ...


class MethodHooks(Protocol):
    """The optional hooks of a :class:`Method`, with their types.

    Attributes:
        default_bipartition: the method's default binarisation, merged over pmlbench's
            ``bipartition`` defaults, e.g. ``{"rule": "threshold", "threshold": 0.5}``
            (docs/bipartition.md lists the options).
        default_tuning_grid: values to tune by default, by constructor parameter, e.g.
            ``{"C": [0.1, 1, 10]}``; every key must be a constructor parameter.
        parameter_constraints: what each constructor parameter may hold, checked before any
            work (``{"k": [Interval(int, 1, None)]}``); see :class:`ValidatedParameters`.
        diagnostics_: set by ``fit``; a dict of JSON-serialisable values (iterations,
            convergence, stage timings) copied into each split's record in ``run.json``.
        disambiguation_scores_: set by ``fit``; an n_train x labels float array, the
            method's confidence that each candidate label of each training instance is
            true (higher = more likely true; only candidates are read). The protocol scores
            it against the training part's clean labels as ``disambiguation_auc`` and
            ``disambiguation_precision`` (:mod:`pmlbench.metrics.disambiguation`), columns of
            results.csv shown in their own table and never ranked with the test metrics.
        machine_dependent: a sentence saying why the method's default numbers depend on the
            machine's BLAS kernels (measured with benchmarks/cross_kernel.py); absent for a
            method whose numbers are the same on every machine. The leaderboard marks such
            a method's cells (docs/protocol.md, "Reproducibility").
    """

    default_bipartition: ClassVar[Mapping[str, Any]]
    default_tuning_grid: ClassVar[Mapping[str, Sequence[Any]]]

    def fit_grid(
        self, X: Features, Y: LabelMatrix, points: Sequence[Mapping[str, Any]]
    ) -> Iterator[tuple[int, Any]]:
        """Fit every grid point on the same training data at once (optional; tuning uses it).

        ``points`` are dicts of constructor parameters in grid order. Yield ``(index,
        fitted)`` once per point, in any order (for example along a warm-start path); the
        fitted estimator is scored before the next one is asked for, so it may be ``self``
        refitted. Work that does not depend on the tuned parameters is done once. Each fit
        must equal ``clone(self).set_params(**points[index]).fit(X, Y)``, or, where a warm
        start changes the iterates, agree with it within the method's stopping tolerance
        (:func:`pmlbench.testing.check_fit_grid` tests this).
        """
        ...

    parameter_constraints: ClassVar[Mapping[str, Sequence[Constraint]]]
    diagnostics_: dict[str, Any]
    disambiguation_scores_: np.ndarray
    machine_dependent: ClassVar[str]


@runtime_checkable
class DatasetLoader(Protocol):
    """A dataset plugin: called with its parameters as keywords, returns a :class:`Dataset`.

    Its keyword parameters (or the fields of a ``Params`` dataclass attribute) become the
    ``dataset`` config node; loading is deterministic for fixed parameters.
    """

    def __call__(self, **params: Any) -> Dataset: ...


@runtime_checkable
class NoiseModel(Protocol):
    """A noise plugin: ``noise(Y_true, rng, **params)`` returns the candidate labels.

    ``Y_true`` is the ground truth of the training part and ``rng`` the split's generator;
    the result is an n x l 0/1 matrix containing every true label, drawn only from ``rng``,
    and ``Y_true`` is left unchanged. The parameters after the first two become the
    ``noise`` config node.
    """

    def __call__(
        self, Y_true: LabelMatrix, rng: np.random.Generator, /, **params: Any
    ) -> LabelMatrix: ...


@runtime_checkable
class MetricFunction(Protocol):
    """The function a :class:`Metric` wraps: ``f(Y_true, Y_pred, scores, **options) -> float``.

    Options (``convention``, ``zero_division``) are passed only if the signature accepts them.
    """

    def __call__(
        self, Y_true: LabelMatrix, Y_pred: LabelMatrix, scores: np.ndarray, /, **options: Any
    ) -> float: ...


__all__ = [
    "ROUNDING",
    "Constraint",
    "Dataset",
    "DatasetLoader",
    "ExternalCommand",
    "ExternalSpec",
    "Features",
    "Interval",
    "LabelMatrix",
    "Method",
    "MethodHooks",
    "Metric",
    "MetricFunction",
    "NoiseModel",
    "Options",
    "NotApplicable",
    "PluginError",
    "PmlbenchError",
    "Type",
    "ValidatedParameters",
    "as_dense",
    "check_features",
    "check_label_matrix",
    "kneighbors",
    "neighbor_counts",
    "noise_counts",
    "uniform_noise",
    "validate_parameters",
]
