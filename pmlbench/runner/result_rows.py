"""What a result row may hold: one check for the rows of store records (read by runs and
reports, pmlbench.runner.store) and of run directories' results.csv (read by reports,
pmlbench.report.sources).

A row is a dict with the results.csv columns (pmlbench.runner.format). Its numbers must be
numbers a run can have written: a metric value is a float (NaN where the metric is
undefined on the data), never infinite, an integer only within float range (a JSON
``1e999`` reads as infinity, an integer of 400 digits overflows every float operation), and
within the range the metric can take (:data:`METRIC_BOUNDS`); counts are non-negative
integers, seconds finite and non-negative, shares between 0 and 1. Its identifying columns
(dataset, noise and its parameters, method and its parameters, seed, convention, ...) must
be those of the unit it belongs to: :func:`identity_problem` compares them with what the
caller knows of the unit (its store record's description and split details, or the run.json
beside a results.csv).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from functools import cache
from typing import Any

import numpy as np

from pmlbench.core.safe_text import visible
from pmlbench.plugins import registry
from pmlbench.runner.format import (
    ALL_COLUMNS,
    NOISE_PREFIX,
    PARAM_PREFIX,
    SCALAR_COLUMNS,
    parameter_columns,
)

# The values a built-in metric can take (pmlbench.metrics.builtin; coverage counts labels).
# A value outside is no result of that metric: an edited file or a broken writer.
METRIC_BOUNDS: dict[str, tuple[float, float]] = {
    "subset_accuracy": (0.0, 1.0),
    "hamming_loss": (0.0, 1.0),
    "one_error": (0.0, 1.0),
    "ranking_loss": (0.0, 1.0),
    "average_precision": (0.0, 1.0),
    "macro_f1": (0.0, 1.0),
    "micro_f1": (0.0, 1.0),
    "coverage": (0.0, math.inf),
}
# slack for rounding at a bound (an average of shares may land a few ulps past 1)
_SLACK = 1e-9
_ABSENT = object()
COUNT_COLUMNS = ("n_train", "n_test", "n_degenerate")
SECONDS_COLUMNS = ("fit_seconds", "predict_seconds")
SHARE_COLUMNS = ("disambiguation_auc", "disambiguation_precision")


def is_number(value: Any) -> bool:
    """A real number (Python's or numpy's), not a boolean."""
    kind = type(value)
    if kind is float or kind is int:
        return True
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def as_float(value: Any) -> float | None:
    """``value`` as a float; None when it is no number or an integer beyond float range."""
    if not is_number(value):
        return None
    try:
        return float(value)
    except (OverflowError, TypeError, ValueError):
        return None


def describe_value(value: Any) -> str:
    """A stored value as a message shows it: a long number by its length, text escaped."""
    if isinstance(value, (bool, np.bool_)):
        return repr(bool(value))
    if is_number(value):
        text = repr(value.item() if hasattr(value, "item") else value)
        return text if len(text) <= 24 else f"a {len(text)}-digit number"
    if isinstance(value, str):
        shown = visible(value)
        return repr(shown if len(shown) <= 40 else shown[:37] + "...")
    return {list: "a list", dict: "a mapping", type(None): "null"}.get(type(value), "no number")


def _value_fault(metric: str, value: Any) -> str | None:
    """``inf, not a metric value`` or ``7.0, outside the range [0, 1] of that metric``: why
    ``value`` is no value of ``metric`` (None: it is one)."""
    number = as_float(value)
    if number is None or math.isinf(number):
        return f"{describe_value(value)}, not a metric value"
    low, high = METRIC_BOUNDS.get(metric, (-math.inf, math.inf))
    if not math.isnan(number) and not (low - _SLACK <= number <= high + _SLACK):
        return f"{describe_value(value)}, outside the range [{low:g}, {high:g}] of that metric"
    return None


def value_problem(metric: str, value: Any) -> str | None:
    """What makes ``value`` no value of ``metric`` (None: it is one)."""
    fault = _value_fault(metric, value)
    return None if fault is None else f"its value of {visible(metric)} is {fault}"


def tuning_problem(tuning: Any) -> str | None:
    """What makes a split's tuning record (``split.tuning`` of a store record, written by
    pmlbench.protocol.tuning.select) unusable (None: nothing). Its scores are values of its
    scoring metric, checked as a row's value is (:func:`value_problem`: NaN where every fold
    was undefined, never infinite, within the metric's range), one mean and one list of fold
    scores per grid point; its best index is a grid point's, its seconds finite and
    non-negative. An untuned split's record is empty, a one-point grid's has no scores."""
    if tuning is None or (isinstance(tuning, Mapping) and not tuning):
        return None
    if not isinstance(tuning, Mapping):
        return f"its split.tuning is {describe_value(tuning)}, not a mapping"
    metric = visible(tuning["scoring"]) if isinstance(tuning.get("scoring"), str) else ""
    grid = tuning.get("grid")
    points = len(grid) if isinstance(grid, list) else None
    means, folds = tuning.get("mean_scores", []), tuning.get("fold_scores", [])
    if (
        not isinstance(means, list)
        or not isinstance(folds, list)
        or not all(isinstance(row, list) for row in folds)
        or (points is not None and {len(means), len(folds)} - {0, points})
    ):
        return "its split.tuning does not hold a mean and a list of fold scores per grid point"
    scores = [(f"mean_scores[{i}]", v) for i, v in enumerate(means)]
    scores += [
        (f"fold_scores[{i}][{j}]", v) for i, row in enumerate(folds) for j, v in enumerate(row)
    ]
    for where, value in scores:
        fault = _value_fault(metric, value)
        if fault is not None:
            return f"its {metric or 'tuning'} score split.tuning.{where} is {fault}"
    best = tuning.get("best_index", 0)
    if not (type(best) is int and best >= 0 and (points is None or best < max(points, 1))):
        return f"its split.tuning.best_index is {describe_value(best)}, not a grid point's"
    seconds = as_float(tuning.get("seconds", 0.0))
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return f"its split.tuning.seconds is {describe_value(tuning.get('seconds'))}"
    return None


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def row_problem(row: Mapping[str, Any]) -> str | None:
    """What makes one result row unusable (None: nothing): its value (:func:`value_problem`),
    its counts, seconds and shares. A column the row lacks, or leaves empty, is not checked
    (older results.csv files lack some)."""
    problem = value_problem(str(row.get("metric")), row.get("value"))
    if problem is not None:
        return problem
    for column in (*COUNT_COLUMNS, *SECONDS_COLUMNS, *SHARE_COLUMNS):
        value = row.get(column)
        if _missing(value):
            continue
        number = as_float(value)
        if column in COUNT_COLUMNS:
            ok = number is not None and number >= 0 and number.is_integer() and number < 2**53
        elif column in SECONDS_COLUMNS:
            ok = number is not None and math.isfinite(number) and number >= 0
        else:
            ok = number is not None and (math.isnan(number) or -_SLACK <= number <= 1 + _SLACK)
        if not ok:
            return f"its {column} is {describe_value(value)}"
    return None


def same_value(found: Any, expected: Any) -> bool:
    """Whether a row's cell holds ``expected``: numbers by value (JSON may write 100 or
    100.0, and a CSV file reads a number back to the nearest float), missing values (None,
    NaN, empty text) alike, text as shown (pmlbench.core.safe_text.visible)."""
    if type(found) is type(expected) and type(found) in (str, int) and found == expected:
        return True  # the usual case, decided at once
    if _missing(found) or found == "":
        return _missing(expected) or expected == ""
    if isinstance(found, bool) or isinstance(expected, bool):
        return str(found).lower() == str(expected).lower()
    a, b = as_float(found), as_float(expected)
    if a is not None and b is not None:
        return a == b or math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0) or (a != a and b != b)
    return visible(str(found)) == visible(str(expected))


def identity_problem(
    row: Mapping[str, Any], expected: Mapping[str, Any], source: str = "its unit"
) -> str | None:
    """The first column of ``row`` that does not hold what ``expected`` says the unit has
    (None: all do), ``source`` naming where ``expected`` comes from; a column the row lacks
    is not compared."""
    for column, value in expected.items():
        found = row.get(column, _ABSENT)
        if found is _ABSENT or (found == value and type(found) is type(value)):
            continue
        if not same_value(found, value):
            return (
                f"its rows say {column}={describe_value(found)}, but {source} has "
                f"{column}={describe_value(value)}"
            )
    return None


@cache
def metric_direction(name: str) -> bool | None:
    """Whether the installed metric ``name`` is higher-is-better (None: not installed or
    not loadable; the rows' direction is then not checked)."""
    try:
        direction = registry.get("metric", name).load().higher_is_better
    except Exception:  # a plugin that fails to load is reported where it is run
        return None
    return direction if isinstance(direction, bool) else None


def direction_problem(
    row: Mapping[str, Any], directions: Mapping[str, bool] | None = None
) -> str | None:
    """A row whose ``higher_is_better`` is not its metric's direction (None: it is, or
    either is unknown): an edited direction would rank the methods backwards. The
    direction is taken from ``directions`` when given (a run's metrics, looked up once),
    else from the installed metric."""
    if "higher_is_better" not in row or not isinstance(row.get("metric"), str):
        return None
    if directions is not None:
        direction = directions.get(row["metric"])
    else:
        direction = metric_direction(row["metric"])
    if direction is None:
        return None
    return identity_problem(row, {"higher_is_better": direction}, "the installed metric")


def tuned_text(tuned: Mapping[str, Any]) -> str:
    """results.csv's ``tuned`` cell of a split that chose ``tuned`` (as
    pmlbench.runner.outputs.tidy_records writes it)."""
    return ";".join(f"{k}={v}" for k, v in sorted(tuned.items()))


def split_columns(split: Any) -> dict[str, Any]:
    """The results.csv columns a split's details fix (pmlbench.runner.outputs.tidy_records
    writes them from the same details): its sizes, timings, bipartition rule, tuned values,
    whether it tuned against the ground truth, and its training-side measures. ``split``: a
    store record's ``split`` or one of the ``splits`` of a run.json (which has no training
    measures); anything but a mapping fixes nothing."""
    if not isinstance(split, Mapping):
        return {}
    columns = {c: split[c] for c in (*COUNT_COLUMNS, *SECONDS_COLUMNS) if c in split}
    if isinstance(split.get("bipartition"), str):
        columns["bipartition"] = split["bipartition"]
    if isinstance(split.get("tuned"), Mapping):
        columns["tuned"] = tuned_text(split["tuned"])
    tuning = split.get("tuning")
    if isinstance(tuning, Mapping):
        columns["oracle"] = bool(tuning.get("oracle", False))
    measures = split.get("training_measures")
    if isinstance(measures, Mapping):
        columns.update(measures)
    return columns


def configured_columns(
    description: Mapping[str, Any],
    natural: bool,
    *,
    kind: str = ALL_COLUMNS,
    legacy: bool = False,
) -> dict[str, Any]:
    """The ``noise_<p>`` and ``param_<p>`` columns of one unit's or run's rows
    (pmlbench.runner.format.parameter_columns, as pmlbench.runner.outputs.tidy_records
    writes them), from its ``noise``, ``method`` and ``tune`` nodes: a unit's description
    (a store record's ``unit``) or a run's resolved config (run.json's ``config``). No noise
    columns for natural candidate labels (``natural``). ``kind``: all columns, or only the
    scalar or the JSON-text ones.

    With ``legacy``, the columns of rows written before lists and grids were: the scalar
    parameters only, a tuned one with its configured value, which its fit did not use.
    Older store records and results.csv files hold these; a reader accepts them and shows
    the tuned parameters' grids and the lists from the description (``kind`` text)."""
    noise, method, tune = (description.get(n) for n in ("noise", "method", "tune"))
    grid = None if legacy or not isinstance(tune, Mapping) else tune.get("grid")
    kind = SCALAR_COLUMNS if legacy else kind
    columns: dict[str, Any] = {}
    if isinstance(noise, Mapping) and not natural:
        columns.update(parameter_columns(noise, NOISE_PREFIX, kind=kind))
    if isinstance(method, Mapping):
        grid = grid if isinstance(grid, Mapping) else None
        columns.update(parameter_columns(method, PARAM_PREFIX, grid, kind=kind))
    return columns
