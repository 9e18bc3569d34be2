"""Which tuning values won: per method and tuned parameter, the grid it searched, how often
each value was selected and how often the selection sat at an edge of the grid.

Read from the units' records (the ``tuned`` column, and ``tuning_grid``, ``tuning_tied`` and
``diag_*`` from a result store, :func:`pmlbench.runner.store.unit_details`). An edge that
scores better than its neighbour in most units says the best value may lie beyond the grid;
one that only ties with it says the score is flat there. The leaderboard shows this table.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

import pandas as pd

from pmlbench.report.prepare import UNIT_KEY
from pmlbench.runner.format import from_json

_SETTING = re.compile(r"([^=;]+)=([^;]*)")


@dataclass(frozen=True)
class ParameterSummary:
    """One tuned parameter of one method over its units."""

    method: str
    parameter: str
    grid: list[str]  # the values searched, in grid order (as the ``tuned`` column writes them)
    chosen: Counter[str]
    units: int
    low: str | None  # the smallest and largest grid value (None: not numeric)
    high: str | None
    # per selected value, the units where it only tied with the value next to it in the grid
    # (``tuning_tied``): the tie-break chose it, not a better score
    tied: Counter[str] = field(default_factory=Counter)

    def _count(self, edge: str | None, counts: Counter[str]) -> int:
        return counts[edge] if edge is not None else 0

    @property
    def at_low(self) -> int:
        """Units whose selected value is the grid's smallest."""
        return self._count(self.low, self.chosen)

    @property
    def at_high(self) -> int:
        """Units whose selected value is the grid's largest."""
        return self._count(self.high, self.chosen)

    @property
    def tied_low(self) -> int:
        """Units at the smallest value that scored no better than the next value."""
        return self._count(self.low, self.tied)

    @property
    def tied_high(self) -> int:
        """Units at the largest value that scored no better than the value below it."""
        return self._count(self.high, self.tied)

    @property
    def mostly_at_an_edge(self) -> bool:
        """Whether one edge of the grid scored better than its neighbour in more than half of
        the units (an edge reached by a tie says nothing about values beyond the grid)."""
        won = max(self.at_low - self.tied_low, self.at_high - self.tied_high)
        return won > self.units / 2


def parse_tuned(text: object) -> dict[str, str]:
    """``"lambda2=100;k=5"`` -> ``{"lambda2": "100", "k": "5"}`` (empty for untuned)."""
    if not isinstance(text, str):
        return {}
    return {name.strip(): value.strip() for name, value in _SETTING.findall(text)}


def _edges(values: list[str]) -> tuple[str | None, str | None]:
    try:
        numbers = [float(v) for v in values]
    except ValueError:
        return None, None
    if len(values) < 2:
        return None, None
    return values[numbers.index(min(numbers))], values[numbers.index(max(numbers))]


def tuning_summary(records: pd.DataFrame) -> tuple[list[ParameterSummary], pd.DataFrame]:
    """Per (method, tuned parameter) a :class:`ParameterSummary`, and per method its units
    and how many of them were tuned (columns method, units, tuned)."""
    if records.empty or "tuned" not in records.columns:
        return [], pd.DataFrame(columns=["method", "units", "tuned"])
    units = records.drop_duplicates(UNIT_KEY)
    grids = units["tuning_grid"] if "tuning_grid" in units.columns else None
    ties = units["tuning_tied"] if "tuning_tied" in units.columns else None
    summaries: list[ParameterSummary] = []
    counts = []
    for method, rows in units.groupby("method", sort=True):
        tuned = [parse_tuned(t) for t in rows["tuned"]]
        counts.append((str(method), len(rows), sum(1 for t in tuned if t)))
        searched: dict[str, list[str]] = {}
        if grids is not None:
            for text in grids.loc[rows.index].dropna():
                for name, values in from_json(str(text)).items():
                    known = searched.setdefault(name, [])
                    known += [str(v) for v in values if str(v) not in known]
        tied_names = [
            set(from_json(t)) if isinstance(t, str) else set()
            for t in (ties.loc[rows.index] if ties is not None else [None] * len(rows))
        ]
        chosen: dict[str, Counter[str]] = {}
        tied: dict[str, Counter[str]] = {}
        for setting, names in zip(tuned, tied_names, strict=True):
            for name, value in setting.items():
                chosen.setdefault(name, Counter())[value] += 1
                tied.setdefault(name, Counter())[value] += name in names
        for name in sorted(chosen):
            grid = searched.get(name) or sorted(chosen[name])
            low, high = _edges(grid)
            summaries.append(
                ParameterSummary(
                    str(method),
                    name,
                    grid,
                    chosen[name],
                    sum(chosen[name].values()),
                    low,
                    high,
                    +tied[name],
                )
            )
    return summaries, pd.DataFrame(counts, columns=["method", "units", "tuned"])


def active_share(records: pd.DataFrame, column: str) -> pd.DataFrame:
    """Per method with values in the diagnostic ``column`` (e.g. ``diag_nnz_V``): its units
    and how many have a positive value (columns method, units, active)."""
    if column not in records.columns:
        return pd.DataFrame(columns=["method", "units", "active"])
    units = records.drop_duplicates(UNIT_KEY)
    units = units[units[column].notna()]
    values = pd.to_numeric(units[column], errors="coerce")
    found = (values > 0).groupby(units["method"], sort=True).agg(["size", "sum"])
    return pd.DataFrame(
        {"method": found.index.astype(str), "units": found["size"], "active": found["sum"]}
    ).reset_index(drop=True)


__all__ = ["ParameterSummary", "active_share", "parse_tuned", "tuning_summary"]
