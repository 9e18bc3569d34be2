"""The contracts of the four plugin kinds: the single definition a run, ``pmlbench
check-plugin`` and :mod:`pmlbench.testing` (which drives a plugin through them) all apply.

Every check raises :class:`PluginError` whose message starts with the plugin's label (kind,
name and distribution), so a broken third-party plugin is named in one line wherever it breaks.

- dataset: ``loader(**params)`` returns a :class:`~pmlbench.plugin.Dataset`.
- noise: ``noise(Y_true, rng, **params)`` returns an n x l 0/1 matrix containing ``Y_true``.
- method: a scikit-learn style estimator with ``fit``, ``decision_function`` and ``predict``;
  scores are finite n x l floats, predictions n x l 0/1; the optional hooks it defines have
  the types :class:`pmlbench.plugin.MethodHooks` documents. It is handed read-only arrays
  and must copy one before changing it (:func:`method_inputs`).
- metric: a :class:`~pmlbench.plugin.Metric` (it carries its direction and input kind).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, get_args

import numpy as np

from pmlbench.core.checks import as_dense, check_label_matrix
from pmlbench.core.parameters import Constraint
from pmlbench.core.read_only import writes_read_only
from pmlbench.datasets.dataset import Dataset
from pmlbench.errors import PluginError, PmlbenchError
from pmlbench.metrics.base import NEEDS, Metric
from pmlbench.plugins.registry import PluginInfo

METHOD_API = ("fit", "decision_function", "predict")


def _dict_of(value: Any, item: Callable[[Any], bool]) -> bool:
    return isinstance(value, Mapping) and all(
        isinstance(k, str) and item(v) for k, v in value.items()
    )


def _constraint_list(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(
        isinstance(c, get_args(Constraint)) for c in value
    )


def _plain(value: Any, depth: int = 0) -> str | None:
    """None when ``value`` can be written to a JSON store record, else what cannot be."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 1024:
        # JSON writes integers as text: 5,000 digits exceed Python's conversion limit
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    if value is None or isinstance(value, (bool, int, float, str)):
        return None  # numpy's float64 and str_ are float and str
    if isinstance(value, (np.generic, np.ndarray)):
        if value.dtype.kind == "f" and value.dtype.itemsize > 8:
            return f"a numpy {value.dtype} (extended precision; convert it with float())"
        return None if value.dtype.kind in "biuf" else f"a numpy value of type {value.dtype}"
    if depth > 20:
        return "values nested more than 20 levels deep"
    if isinstance(value, (list, tuple)):
        return next((p for v in value if (p := _plain(v, depth + 1)) is not None), None)
    if isinstance(value, Mapping):
        if not all(isinstance(k, str) for k in value):
            return "a dict with keys that are not strings"
        return next((p for v in value.values() if (p := _plain(v, depth + 1)) is not None), None)
    return f"a {type(value).__name__}"


# The optional method hooks (pmlbench.plugin.MethodHooks): what each must be, and its test.
METHOD_HOOKS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "default_bipartition": (
        "a dict of bipartition options, e.g. {'rule': 'threshold'}",
        lambda v: _dict_of(v, lambda _: True),
    ),
    "default_tuning_grid": (
        "a dict of value lists by constructor parameter, e.g. {'C': [0.1, 1, 10]}",
        lambda v: _dict_of(v, lambda x: isinstance(x, (list, tuple))),
    ),
    "parameter_constraints": (
        "a dict of constraint lists by constructor parameter, e.g. {'k': [Interval(int, 1, None)]}",
        lambda v: _dict_of(v, _constraint_list),
    ),
    "diagnostics_": (
        "a dict of JSON values: numbers, strings, booleans, None, lists and dicts (set by fit)",
        lambda v: _dict_of(v, lambda x: _plain(x) is None),
    ),
    "disambiguation_scores_": (
        "an n_train x labels numeric array (set by fit)",
        lambda v: isinstance(v, np.ndarray) and v.ndim == 2 and np.issubdtype(v.dtype, np.number),
    ),
    "machine_dependent": (
        "a non-empty string saying why the default numbers depend on the BLAS kernel",
        lambda v: isinstance(v, str) and bool(v.strip()),
    ),
}


@contextmanager
def plugin_call(info: PluginInfo, what: str) -> Iterator[None]:
    """Turn a crash inside third-party code into a PluginError naming the plugin.

    PmlbenchErrors pass through unchanged: they already say what to fix. ``sys.exit`` in the
    plugin's code is a failure too, not the end of the run.
    """
    try:
        yield
    except PmlbenchError:
        raise
    except SystemExit as exc:
        raise PluginError(
            f"{info.label} called sys.exit({exc.code!r}) in {what}; a plugin must raise an "
            "exception, never end the process"
        ) from None
    except Exception as exc:  # any failure inside the plugin's own code
        raise PluginError(
            f"{info.label} failed in {what} ({type(exc).__name__}: {exc}); "
            f"run `pmlbench check-plugin {info.name} --traceback` for details"
        ) from exc


@contextmanager
def method_inputs(info: PluginInfo, what: str) -> Iterator[None]:
    """Name the method plugin that wrote into an array it was handed.

    The protocol hands a method read-only views (pmlbench.core.read_only) of the features,
    the candidate labels and everything it slices from them, so a method that changed them
    in place would otherwise end the unit in numpy's bare "assignment destination is
    read-only". Every other failure passes unchanged.
    """
    try:
        yield
    except ValueError as exc:
        if not writes_read_only(exc):
            raise
        raise PluginError(
            f"{info.label} tried to change an array it was handed while {what} ({exc}); a "
            "method is handed read-only features and labels and must copy an array before "
            "modifying it (X = X.copy())"
        ) from exc


def check_dataset(info: PluginInfo, dataset: Any) -> Dataset:
    """A dataset loader must return a pmlbench Dataset."""
    if not isinstance(dataset, Dataset):
        raise PluginError(
            f"{info.label} returned {type(dataset).__name__}, not a pmlbench Dataset; "
            "return pmlbench.plugin.Dataset(X=..., Y=..., name=...)"
        )
    return dataset


def check_noise_output(info: PluginInfo, Y_true: np.ndarray, Y_cand: Any) -> np.ndarray:
    """Candidates must be an n x l 0/1 matrix that contains every true label."""
    try:
        Y_cand = check_label_matrix(Y_cand, what=f"output of {info.label}")
    except PmlbenchError as exc:
        raise PluginError(str(exc)) from None
    if Y_cand.shape != Y_true.shape:
        raise PluginError(f"{info.label} returned shape {Y_cand.shape}, expected {Y_true.shape}")
    if np.any(Y_true > Y_cand):
        raise PluginError(
            f"{info.label} dropped true labels from candidate sets; "
            "a noise model may only add labels"
        )
    return Y_cand


def check_metric(info: PluginInfo, metric: Any) -> Metric:
    """A metric plugin must be a Metric, which declares its direction and what it needs."""
    if not isinstance(metric, Metric):
        raise PluginError(
            f"{info.label} is a {type(metric).__name__}, not a pmlbench Metric, so it declares "
            "no direction; wrap it: Metric(name, func, higher_is_better=True|False, "
            "needs='scores'|'bipartition')"
        )
    if not isinstance(metric.higher_is_better, bool):
        raise PluginError(f"{info.label} has no direction; set higher_is_better=True or False")
    if metric.needs not in NEEDS:
        raise PluginError(f"{info.label} declares needs={metric.needs!r}; use one of {list(NEEDS)}")
    return metric


def check_method_api(info: PluginInfo, estimator: Any) -> Any:
    """A method must offer fit, decision_function and predict."""
    missing = [a for a in METHOD_API if not callable(getattr(estimator, a, None))]
    if missing:
        raise PluginError(
            f"{info.label} has no {', '.join(f'{m}()' for m in missing)}; a method must be a "
            "scikit-learn style estimator with fit, decision_function and predict"
        )
    return estimator


def check_method_hooks(info: PluginInfo, estimator: Any) -> Any:
    """The optional hooks a method defines must have their documented types.

    Checks the class attributes and, on a fitted estimator, ``diagnostics_`` and
    ``disambiguation_scores_`` (the protocol also checks its shape); a run would
    otherwise misread or silently drop a hook of another type.
    """
    check_method_diagnostics(info, estimator)  # names the entry a record cannot store
    for hook, (expected, valid) in METHOD_HOOKS.items():
        value = getattr(estimator, hook, None)
        if value is not None and not valid(value):
            raise PluginError(
                f"{info.label} sets {hook} to a {type(value).__name__}; it must be {expected}"
            )
    return estimator


def check_method_diagnostics(info: PluginInfo, estimator: Any) -> dict[str, Any]:
    """A fitted method's ``diagnostics_``: a dict of JSON values (numbers, strings, booleans,
    None, lists, dicts; numpy numbers and arrays too), which the unit's record stores; {}
    when it sets none."""
    value = getattr(estimator, "diagnostics_", None)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise PluginError(
            f"{info.label} sets diagnostics_ to a {type(value).__name__}; it must be a dict"
        )
    for key, item in value.items():
        problem = "its key is not a string" if not isinstance(key, str) else _plain(item)
        if problem is not None:
            raise PluginError(
                f"{info.label} sets diagnostics_[{key!r}] to {problem}, which a result record "
                "cannot store; use numbers, strings, booleans, None, lists or dicts"
            )
    return dict(value)


def check_method_scores(info: PluginInfo, scores: Any, shape: tuple[int, int]) -> np.ndarray:
    """Scores must be finite real n x l numbers (dense, sparse or nested lists); returns
    float64. The protocol applies this before anything reads the scores."""
    try:
        values = as_dense(scores)
    except (TypeError, ValueError):
        raise PluginError(f"{info.label} returned scores that are not a matrix") from None
    if np.iscomplexobj(values):
        raise PluginError(f"{info.label} returned complex scores; scores must be real numbers")
    if values.dtype.kind not in "biuf":  # strings, objects: not numbers, whatever they hold
        raise PluginError(f"{info.label} returned non-numeric scores ({values.dtype})")
    values = values.astype(np.float64)
    if values.shape != shape:
        raise PluginError(f"{info.label} returned scores of shape {values.shape}, expected {shape}")
    if not np.all(np.isfinite(values)):
        raise PluginError(f"{info.label} returned NaN or infinite scores")
    return values


def check_method_output(
    info: PluginInfo, scores: Any, Y_pred: Any, shape: tuple[int, int]
) -> tuple[np.ndarray, np.ndarray]:
    """Scores must be finite n x l floats, predictions n x l 0/1; returns float64, uint8."""
    scores = check_method_scores(info, scores, shape)
    try:
        Y_pred = as_dense(Y_pred)
    except (TypeError, ValueError):
        raise PluginError(f"{info.label} predicted labels that are not a matrix") from None
    if Y_pred.shape != shape:
        raise PluginError(
            f"{info.label} predicted labels of shape {Y_pred.shape}, expected {shape}"
        )
    if not np.isin(Y_pred, (0, 1)).all():
        raise PluginError(f"{info.label} predicted values other than 0/1")
    return scores, Y_pred.astype(np.uint8)
