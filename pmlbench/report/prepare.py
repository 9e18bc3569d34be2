"""From raw results.csv rows to the frame every table and test reads.

Adds three columns: ``level`` (the noise level of a PML dataset, e.g. ``rate=1``, or
``natural`` for datasets with natural candidate labels), ``method`` (a label that tells
apart configurations of the same method, e.g. ``mlknn[k=5]``; the plugin name moves to
``method_name``) and checks that the rows can be compared: one metric convention, one
direction per metric, and no conflicting duplicates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from pmlbench.core.safe_text import visible
from pmlbench.errors import PmlbenchError
from pmlbench.protocol.experiment import NATURAL_NOISE
from pmlbench.runner.format import (
    NOISE_PREFIX,
    PARAM_PREFIX,
    RESULTS_FILE,
    columns_with_prefix,
    from_json,
    parameter_columns,
    parameter_name,
    parse_prefixed,
)

# one unit (a method's split of a dataset at a noise level) and one value of it
UNIT_KEY = ["dataset", "level", "method", "seed", "split"]
KEY = [*UNIT_KEY, "metric"]


@dataclass
class Prepared:
    """Comparable results and their axes.

    Attributes:
        records: one row per (dataset, level, method, seed, split, metric).
        metrics: metric names in report order.
        directions: metric -> higher_is_better.
        methods: method labels (the reference first when given).
        blocks: (dataset, level) pairs: the PML datasets, in row order.
        level_values: level -> {noise parameter: numeric value} (for plots).
        level_noise: level -> its noise model (``natural`` for natural candidates).
        notes: things the reader of the report should know (duplicates dropped, ...).
    """

    records: pd.DataFrame
    metrics: list[str]
    directions: dict[str, bool]
    methods: list[str]
    blocks: list[tuple[str, str]]
    level_values: dict[str, dict[str, float]]
    notes: list[str] = field(default_factory=list)
    level_noise: dict[str, str] = field(default_factory=dict)


def format_value(value) -> str:
    """Short text for a parameter value: 1.0 -> "1", 0.001 -> "0.001", True -> "true", and
    a list's JSON text (a list-valued parameter, a tuned parameter's grid) as its values so
    written: ``[0.5,1.0]`` -> "[0.5,1]", ``["a","b"]`` -> "[a,b]" (a label needs no quotes)."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value)).lower()
    if isinstance(value, (float, np.floating)):
        if np.isnan(value):
            return "none"
        return str(int(value)) if float(value).is_integer() else f"{float(value):g}"
    if isinstance(value, str) and value.startswith("[") and value.endswith("]"):
        items = _scalar_list(value)
        if items is not None:
            return "[" + ",".join(format_value(v) for v in items) + "]"
    return str(value)


@lru_cache(maxsize=4096)
def _scalar_list(text: str) -> tuple[Any, ...] | None:
    """The values of a JSON list of numbers, strings, booleans and nulls (None: ``text`` is
    no such list)."""
    try:
        items = from_json(text)
    except ValueError:
        return None
    if not isinstance(items, list) or not all(
        v is None or isinstance(v, (bool, int, float, str)) for v in items
    ):
        return None
    return tuple(items)


def _as_bool(series: pd.Series, what: str) -> pd.Series:
    text = series.astype(str).str.strip().str.lower()
    if not text.isin(["true", "false", "1", "0", "1.0", "0.0"]).all():
        raise PmlbenchError(
            f"column {what} holds values other than true/false; regenerate the {RESULTS_FILE}"
        )
    return text.isin(["true", "1", "1.0"])


def apply_filters(records: pd.DataFrame, where: Mapping[str, str | Sequence[str]]) -> pd.DataFrame:
    """Keep rows whose column equals the given text (``--where column=value``); a column
    given several values (``--where method=mlknn --where method=ridge``) keeps rows holding
    any of them, and filters on different columns all apply."""
    for column, given in where.items():
        if column not in records.columns:
            raise PmlbenchError(
                f"--where names column {column!r}, which no {RESULTS_FILE} has; "
                f"columns: {sorted(records.columns)}"
            )
        wanted = [given] if isinstance(given, str) else list(given)
        values = records[column]
        shown, text = values.map(format_value), values.astype(str)
        keep = pd.Series(False, index=records.index)
        missed = []
        for value in wanted:
            matches = (shown == format_value(_parse_number(value))) | (text == value)
            if not matches.any():
                missed.append(value)
            keep |= matches
        if missed and keep.any():  # one of several values matches nothing: misspelt
            found = sorted(dict.fromkeys(shown.astype(str)))
            more = f", ... ({len(found)} in all)" if len(found) > 20 else ""
            raise PmlbenchError(
                f"--where {column}={visible(missed[0])} matches no result; {column} holds "
                f"{', '.join(found[:20])}{more}"
            )
        records = records[keep]
        if records.empty:
            either = " or ".join(f"{column}={value}" for value in wanted)
            raise PmlbenchError(f"no results left after --where {either}")
    return records


def _parse_number(text: str):
    try:
        return float(text)
    except ValueError:
        return text


def noise_levels(
    records: pd.DataFrame,
) -> tuple[pd.Series, dict[str, dict[str, float]], dict, dict[str, str]]:
    """The level label of every row, each level's numeric parameters, a sort key per level and
    each level's noise model.

    A level is one noise model with its own parameters; natural candidate labels are one
    level with no parameters. Rows of different noise models carry different ``noise_*``
    columns (and natural ones none), so a parameter a row's model lacks is missing (NaN) and
    is left out of its label. A level is labelled by its first parameter (the plugin's
    first, ``rate``), the parameters that differ between the model's levels and those off
    the noise plugin's defaults, so one level reads the same in every report (``rate=1``,
    never ``rate=1, rounding=half_up``; ``rate=1, rounding=floor`` off the default). Labels
    name the noise model when the rows mix several.
    """
    columns = sorted(columns_with_prefix(records.columns, NOISE_PREFIX))
    frame = records[["noise", *columns]].astype(object)
    # NaN is not equal to itself, so a key holding NaN would never be found again: None
    frame = frame.where(frame.notna(), None)
    keys = [(str(k[0]), *k[1:]) for k in frame.itertuples(index=False, name=None)]
    named = {k[0] for k in keys if k[0] != NATURAL_NOISE}
    labels: dict[tuple, str] = {}
    values: dict[str, dict[str, float]] = {}
    order: dict[str, tuple] = {}
    noise_of: dict[str, str] = {}
    level_params = {}
    for key in dict.fromkeys(keys):
        params = parse_prefixed(dict(zip(columns, key[1:], strict=True)), NOISE_PREFIX)
        level_params[key] = {k: v for k, v in params.items() if not is_missing(v)}
    varying: dict[str, set[str]] = {}
    for name in {key[0] for key in level_params}:
        seen = [p for k, p in level_params.items() if k[0] == name]
        names = set().union(*seen)
        varying[name] = {n for n in names if len({format_value(p.get(n)) for p in seen}) > 1}
    for key, params in level_params.items():
        name = key[0]
        if name == NATURAL_NOISE:
            label = NATURAL_NOISE
            params = {}
        else:
            shown = varying[name] | _off_default(name, params)
            if params:
                shown.add(_principal(name, params))
            label = ", ".join(f"{k}={format_value(v)}" for k, v in params.items() if k in shown)
            if len(named) > 1 or not label:
                label = f"{name}({label})" if label else name
        labels[key] = label
        numeric = {k: float(v) for k, v in params.items() if _is_number(v)}
        values[label] = numeric
        order[label] = (name == NATURAL_NOISE, name, tuple(sorted(numeric.items())), label)
        noise_of[label] = name
    level = pd.Series([labels[k] for k in keys], index=records.index)
    return level, values, order, noise_of


def _noise_defaults(name: str) -> dict[str, Any] | None:
    """The installed noise plugin's parameters and defaults, in its order (None: unknown)."""
    from pmlbench.errors import PluginError
    from pmlbench.plugins import registry
    from pmlbench.plugins.parameters import plugin_parameters

    try:
        info = registry.plugins("noise").get(name)
        return None if info is None else dict(plugin_parameters("noise", info.load()))
    except (PluginError, ImportError, AttributeError, TypeError, ValueError):
        return None


def _off_default(name: str, params: Mapping[str, Any]) -> set[str]:
    """The parameters of a level off the noise plugin's defaults (all, when unknown)."""
    defaults = _noise_defaults(name)
    if defaults is None:
        return set(params)
    return {
        k
        for k, v in params.items()
        if k not in defaults or format_value(v) != format_value(defaults[k])
    }


def _principal(name: str, params: Mapping[str, Any]) -> str:
    """The parameter that names a level at the defaults: the plugin's first (``rate``)."""
    order = list(_noise_defaults(name) or {})
    return next((k for k in order if k in params), next(iter(params)))


def is_missing(value: Any) -> bool:
    """Whether a cell holds no value (None or NaN; a list-like value is never missing)."""
    if value is None:
        return True
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):  # list-like values are never missing
        return False


def _is_number(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    )


def protocol_settings(records: pd.DataFrame) -> pd.DataFrame:
    """The settings of each row's run that change its numbers beside the method's parameters,
    as results.csv records them: the bipartition rule (its description up to the per-split
    details after ``:``, e.g. ``top_k``), the parameters tuned (``lambda2``, or ``off``; the
    grids are in the tuned parameters' ``param_*`` columns) and the test fraction of the
    split (n_test / (n_train + n_test), 2 decimals)."""
    settings = pd.DataFrame(index=records.index)
    if "bipartition" in records.columns:
        text = records["bipartition"].astype(object).where(records["bipartition"].notna(), "")
        settings["bipartition"] = text.astype(str).map(short_bipartition)
    if "tuned" in records.columns:
        # "lambda2=100;k=5": the tuned parameters' names (their chosen values vary by split)
        tuned = records["tuned"].astype(object).where(records["tuned"].notna(), "")
        tuned = tuned.astype(str).str.strip()
        settings["tuning"] = tuned.map(
            lambda t: "+".join(sorted(p.partition("=")[0] for p in t.split(";") if p)) or "off"
        )
    if {"n_train", "n_test"} <= set(records.columns):
        n_train = pd.to_numeric(records["n_train"], errors="coerce")
        n_test = pd.to_numeric(records["n_test"], errors="coerce")
        settings["test_size"] = (n_test / (n_train + n_test)).round(2)
    return settings


_EMPTY_SUFFIX = ", top label if empty"


def short_bipartition(description: str) -> str:
    """A bipartition rule's description (results.csv's ``bipartition``) in one word that
    needs no shell quoting: the rule's name (``method``, ``global``, ``per_label``,
    ``top_k``), ``threshold`` for the fixed threshold 0.5 and ``threshold_<t>`` for another,
    and ``+nonempty`` when an empty prediction gets the top-scored label (``allow_empty:
    false``). The fitted values after ``:`` vary by split and are left out."""
    text = description.strip()
    nonempty = text.endswith(_EMPTY_SUFFIX)
    if nonempty:
        text = text[: -len(_EMPTY_SUFFIX)]
    if text == "method's predict":
        word = "method"
    elif text.startswith("score >= "):
        value = _parse_number(text.removeprefix("score >= ").strip())
        word = "threshold" if value == 0.5 else f"threshold_{format_value(value)}"
    else:
        word = text.split(":")[0].strip()
    return word + ("+nonempty" if nonempty and word else "")


def _rule_word(options: Mapping[str, Any]) -> str:
    """:func:`short_bipartition` of a rule given by its options (the ``bipartition`` node)."""
    rule = str(options.get("rule", "method"))
    word = rule
    if rule == "threshold":
        value = float(options.get("threshold", 0.5))
        word = "threshold" if value == 0.5 else f"threshold_{format_value(value)}"
    return word + ("" if options.get("allow_empty", True) else "+nonempty")


def default_configuration(method: str) -> dict[str, str] | None:
    """The text (:func:`format_value`) of every configuration column a run of ``method``
    with all defaults records: its ``param_*`` columns (a tuned parameter's holding its
    ``default_tuning_grid``), ``oracle``, and the
    :func:`protocol_settings` ``bipartition`` and ``tuning`` (the parameters of its
    ``default_tuning_grid``). None when the method is not installed (its defaults are then
    unknown)."""
    from pmlbench.errors import PluginError
    from pmlbench.plugins import registry
    from pmlbench.protocol.method_defaults import method_node
    from pmlbench.protocol.settings import defaults

    try:
        info = registry.plugins("method").get(method)
        if info is None:
            return None
        node = method_node(method, info.load())
    except (PluginError, ImportError, AttributeError, TypeError, ValueError):
        return None
    grid = node["tune"].get("grid") or {}
    columns = parameter_columns(node["method"], PARAM_PREFIX, grid)
    found = {column: format_value(value) for column, value in columns.items()}
    tuned = sorted(k for k, v in grid.items() if v is not None)
    found["tuning"] = "+".join(tuned) or "off"
    found["oracle"] = format_value(bool(node["tune"].get("oracle", False)))
    found["bipartition"] = _rule_word({**defaults("bipartition"), **node["bipartition"]})
    return found


def method_labels(records: pd.DataFrame) -> pd.Series:
    """``method`` where a method ran in one configuration, ``method[p=v,...]`` otherwise.

    Configurations differ in their ``param_*`` columns, in ``oracle``, or in the settings
    of :func:`protocol_settings` (bipartition rule, parameters tuned, test fraction); only
    what varies within a method appears in its label, so two configurations never share
    one. A protocol setting counts as varying only where it varies on one dataset (the test
    fraction of a method that subsamples large datasets differs between datasets).

    The configuration that is the method's default (:func:`default_configuration`: every
    varying column at its default) keeps the bare name, so ``--reference pml3er`` names
    PML3ER as it runs without overrides beside ``pml3er[bipartition=top_k]``.
    """
    config = columns_with_prefix(records.columns, PARAM_PREFIX)
    if "oracle" in records.columns:
        config.append("oracle")
    settings = protocol_settings(records)
    labels = records["method"].astype(str).copy()
    for name, rows in records.groupby("method", sort=False):
        values = {}
        for column in config:
            texts = rows[column].map(format_value)
            if texts.nunique() > 1:
                values[column] = texts
        own = settings.loc[rows.index]
        for column in own.columns:
            texts = own[column].map(format_value)
            if (texts.groupby(rows["dataset"].astype(str)).nunique() > 1).any():
                values[column] = texts
        if not values:
            continue
        parts = [series.map(lambda v, c=c: _part(c, v)) for c, series in values.items()]
        suffix = parts[0].str.cat(parts[1:], sep=",") if len(parts) > 1 else parts[0]
        named = f"{name}[" + suffix + "]"
        default = default_configuration(str(name))
        if default is not None and all(c in default for c in values):
            is_default = pd.Series(True, index=rows.index)
            for column, texts in values.items():
                is_default &= texts.map(format_value) == default[column]
            named = named.where(~is_default, str(name))
        labels.loc[rows.index] = named
    return labels


def _part(column: str, value) -> str:
    name = parameter_name(column, PARAM_PREFIX)
    return f"{column if name is None else name}={format_value(value)}"


def split_count_note(records: pd.DataFrame) -> str | None:
    """A note when the cells of the report (dataset, level, method, metric) average different
    numbers of splits (seed and split pairs), naming those off the most common number."""
    cell = ["dataset", "level", "method", "metric"]
    counts = records.drop_duplicates([*cell, "seed", "split"]).groupby(cell, sort=False).size()
    cells = counts.groupby(level=["dataset", "level", "method"], sort=False).max()
    if cells.nunique() <= 1:
        return None
    usual = int(cells.mode().max())
    tally = ", ".join(
        f"{n} splits in {int((cells == n).sum())} cell{'s' if (cells == n).sum() > 1 else ''}"
        for n in sorted(cells.unique())
    )
    odd = [f"{m} on {d} ({lv}): {int(n)}" for (d, lv, m), n in cells.items() if n != usual]
    shown = "; ".join(odd[:5]) + (f"; and {len(odd) - 5} more" if len(odd) > 5 else "")
    return (
        f"cells average different numbers of splits ({tally}); not {usual}: {shown}. "
        "Means over fewer splits are less certain, and paired tests use the splits both "
        "methods have"
    )


def _key_text(key: tuple) -> str:
    """A result's identity as a message shows it: ``dataset=genbase, split=0, ...`` (numpy
    scalars as plain numbers, text escaped)."""
    shown = (v.item() if isinstance(v, np.generic) else v for v in key)
    return ", ".join(f"{k}={visible(str(v))}" for k, v in zip(KEY, shown, strict=True))


def _drop_duplicates(records: pd.DataFrame, notes: list[str]) -> pd.DataFrame:
    duplicated = records.duplicated(KEY, keep=False)
    if not duplicated.any():
        return records
    clashes = records[duplicated].groupby(KEY)["value"].nunique()
    clashes = clashes[clashes > 1]
    if len(clashes):
        key = clashes.index[0]
        rows = records[duplicated].set_index(KEY).loc[key]
        sources = sorted(set(rows["source"])) if "source" in rows else []
        raise PmlbenchError(
            f"conflicting results for {_key_text(key)} in "
            f"{' and '.join(sources) or 'the inputs'}; report each directory separately or "
            "remove the stale run"
        )
    n_dropped = int(records.duplicated(KEY).sum())
    notes.append(
        f"{n_dropped} duplicate result rows (the same run read more than once) were counted once"
    )
    return records.drop_duplicates(KEY)


def _check_summable(records: pd.DataFrame) -> None:
    """Refuse values whose mean or spread over splits is not a finite number: finite values
    near the largest float (a metric plugin without a bounded range, or an edited file)
    would average to infinity and be shown, and marked best, as such."""
    cell = ["dataset", "level", "method", "metric"]
    grouped = records.groupby(cell, sort=False)["value"]
    spread = grouped.agg(["mean", "std"])
    bad = spread[np.isinf(spread["mean"]) | np.isinf(spread["std"])]
    if len(bad):
        (dataset, level, method, metric), _ = next(iter(bad.iterrows()))
        rows = records[(records[cell] == [dataset, level, method, metric]).all(axis=1)]
        largest = rows["value"].abs().max()
        raise PmlbenchError(
            f"metric {metric} of {method} on {dataset} ({level}) holds values up to "
            f"{largest:.3g}, whose mean or spread over splits is no finite number; check "
            f"{', '.join(sorted(set(rows.get('source', pd.Series(['?'])).astype(str))))} "
            f"or leave the metric out with --metrics"
        )


def filter_noting_dropped_methods(
    records: pd.DataFrame, where: Mapping[str, str | Sequence[str]]
) -> tuple[pd.DataFrame, list[str]]:
    """The rows ``--where`` keeps (:func:`apply_filters`) and, when it left out every row of
    a method, a note naming the methods (the filter may have meant to compare their
    configurations, which method labels already tell apart)."""
    if not where:
        return records, []
    before = set(records["method"].astype(str))
    records = apply_filters(records, where)
    dropped = sorted(before - set(records["method"].astype(str)))
    if not dropped:
        return records, []
    shown = " ".join(f"--where {k}={v}" for k, v in where.items())
    return records, [
        f"{shown} left out every result of {', '.join(dropped)}; method labels tell "
        "configurations apart without it"
    ]


def prepare(
    records: pd.DataFrame,
    *,
    metrics: list[str] | None = None,
    reference: str | None = None,
) -> Prepared:
    """Label, check and order raw result rows (already filtered by ``--where``,
    :func:`filter_noting_dropped_methods`) for tables and tests."""
    notes: list[str] = []
    if "convention" in records.columns and records["convention"].nunique() > 1:
        found = sorted(records["convention"].astype(str).unique())
        raise PmlbenchError(
            f"the results mix metric conventions {found}; they are not "
            f"comparable: add --where convention={found[0]}"
        )
    records = records.copy()
    # rows of the metrics asked for (a metric left out is not checked: the way to leave out
    # one that is undefined on the data)
    asked = records["metric"].isin(metrics) if metrics else pd.Series(True, records.index)
    stored_nan = records["value"].isna() & asked
    records["value"] = pd.to_numeric(records["value"], errors="coerce")
    if stored_nan.any():
        first = records[stored_nan].iloc[0]
        others = [m for m in dict.fromkeys(records["metric"].astype(str)) if m != first["metric"]]
        raise PmlbenchError(
            f"metric {first['metric']} has no value (NaN) in {int(stored_nan.sum())} result "
            f"rows (first: {first['method']} on {first['dataset']}, in "
            f"{first.get('source', '?')}): it is undefined on that data (e.g. a ranking metric "
            "on a test part where every instance has every label), and a rerun gives the same; "
            f"leave it out: --metrics {' '.join(others) or '...'}"
        )
    bad = records["value"].isna() & asked
    if bad.any():
        first = records[bad].iloc[0]
        raise PmlbenchError(
            f"{int(bad.sum())} result rows have no numeric value (first: "
            f"{first['method']} on {first['dataset']}, metric {first['metric']}, "
            f"in {first.get('source', '?')}); rerun those runs"
        )
    records["higher_is_better"] = _as_bool(records["higher_is_better"], "higher_is_better")
    available = list(dict.fromkeys(records["metric"].astype(str)))
    directions = {}
    for metric, rows in records.groupby("metric", sort=False):
        if rows["higher_is_better"].nunique() > 1:
            raise PmlbenchError(
                f"metric {metric!r} is higher-is-better in some results and "
                "lower-is-better in others; report them separately"
            )
        directions[str(metric)] = bool(rows["higher_is_better"].iloc[0])
    if metrics:
        unknown = [m for m in metrics if m not in directions]
        if unknown:
            raise PmlbenchError(f"no results for metrics {unknown}; available: {available}")
        records = records[records["metric"].isin(metrics)]
    metrics = list(metrics) if metrics else available
    records["method_name"] = records["method"].astype(str)
    records["method"] = method_labels(records)
    records["level"], level_values, level_order, level_noise = noise_levels(records)
    records["dataset"] = records["dataset"].astype(str)
    records = _drop_duplicates(records, notes)
    _check_summable(records)
    note = split_count_note(records)
    if note is not None:
        notes.append(note)
    methods = sorted(records["method"].unique())
    if reference is not None:
        reference = resolve_reference(reference, methods)
        methods = [reference, *[m for m in methods if m != reference]]
    blocks = sorted(
        set(zip(records["dataset"], records["level"], strict=True)),
        key=lambda b: (b[0], level_order[b[1]]),
    )
    return Prepared(
        records.reset_index(drop=True),
        metrics,
        {m: directions[m] for m in metrics},
        methods,
        blocks,
        level_values,
        notes,
        level_noise,
    )


def resolve_reference(reference: str, methods: list[str]) -> str:
    """The method label the user means by ``--reference``."""
    if reference in methods:
        return reference
    configurations = [m for m in methods if m.startswith(reference + "[")]
    if configurations:
        raise PmlbenchError(
            f"{reference} ran in {len(configurations)} configurations; pass "
            f"one of them as the reference, e.g. --reference '{configurations[0]}'"
        )
    raise PmlbenchError(f"reference method {reference!r} has no results; choose one of {methods}")
