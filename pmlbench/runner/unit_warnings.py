"""Warnings raised while a unit computes: captured, recorded with the unit, summarised once.

:func:`capture` wraps a unit's compute function so that every warning it raises (a plugin's
``ConvergenceWarning``, numpy's ``RuntimeWarning``, ...) is recorded instead of printed
between the progress lines. The wrapped function returns ``(value, warnings)``; the runner
stores the warnings with the unit (``run.warnings`` of its store record, ``warnings`` of its
units.json entry), one entry per distinct warning with its count. :func:`summary_lines` gives
one terminal line per kind (category and the line of code that raised it) across units, and
:func:`log_lines` one line per unit and warning for the run's log file.

Warnings raised in other processes (joblib's worker processes) are printed by those
processes and not captured here.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

# distinct warnings kept per unit (the count of the rest is kept in one entry)
MAX_DISTINCT = 20
MAX_MESSAGE = 300


def _entry(item: warnings.WarningMessage) -> dict[str, Any]:
    message = " ".join(str(item.message).split())
    if len(message) > MAX_MESSAGE:
        message = message[: MAX_MESSAGE - 3] + "..."
    return {
        "category": item.category.__name__,
        "message": message,
        "where": f"{item.filename}:{item.lineno}",
        "count": 1,
    }


def collect(caught: Iterable[warnings.WarningMessage]) -> list[dict[str, Any]]:
    """Distinct warnings (category, message, where) with their counts, in order of first
    appearance; past :data:`MAX_DISTINCT` the rest are counted in one ``other`` entry."""
    found: dict[tuple[str, str, str], dict[str, Any]] = {}
    other = 0
    for item in caught:
        entry = _entry(item)
        key = (entry["category"], entry["message"], entry["where"])
        if key in found:
            found[key]["count"] += 1
        elif len(found) < MAX_DISTINCT:
            found[key] = entry
        else:
            other += 1
    entries = list(found.values())
    if other:
        entries.append(
            {
                "category": "other",
                "message": "further distinct warnings",
                "where": "",
                "count": other,
            }
        )
    return entries


def capture(func: Callable[[], Any]) -> Callable[[], tuple[Any, list[dict[str, Any]]]]:
    """``func`` returning ``(its value, the warnings it raised)`` (see :func:`collect`);
    every warning is recorded, however often it repeats, and none is printed."""

    def captured() -> tuple[Any, list[dict[str, Any]]]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value = func()
        return value, collect(caught)

    return captured


def _kinds(units: Iterable[Sequence[Mapping[str, Any]]]) -> dict[tuple[str, str], dict[str, Any]]:
    kinds: dict[tuple[str, str], dict[str, Any]] = {}
    for entries in units:
        seen_here: set[tuple[str, str]] = set()
        for entry in entries or []:
            if not isinstance(entry, Mapping):
                continue
            key = (str(entry.get("category")), str(entry.get("where")))
            kind = kinds.setdefault(
                key, {"count": 0, "units": 0, "message": str(entry.get("message"))}
            )
            try:
                kind["count"] += int(entry.get("count", 1))
            except (TypeError, ValueError):
                kind["count"] += 1
            if key not in seen_here:
                kind["units"] += 1
                seen_here.add(key)
    return kinds


def summary_lines(units: Iterable[Sequence[Mapping[str, Any]]], where: str) -> list[str]:
    """One line per kind of warning (category and raising line) over the units' warning
    lists: ``warning: ConvergenceWarning x36 in 3 units (sklearn/...py:123): lbfgs failed to
    converge ... (each in <where>)``."""
    lines = []
    for (category, place), kind in _kinds(units).items():
        units_text = f"{kind['units']} unit{'s' if kind['units'] != 1 else ''}"
        at = f" ({place})" if place else ""
        lines.append(
            f"warning: {category} x{kind['count']} in {units_text}{at}: {kind['message']} "
            f"(each in {where})"
        )
    return lines


def log_lines(split: Any, entries: Iterable[Mapping[str, Any]]) -> list[str]:
    """One log line per distinct warning of a unit."""
    return [
        f"split {split}: {e.get('category')} x{e.get('count')} at {e.get('where')}: "
        f"{e.get('message')}"
        for e in entries
        if isinstance(e, Mapping)
    ]
