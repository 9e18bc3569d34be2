"""Which tuning values won: per method and tuned parameter, the grid it searched, how often
each value was selected and how often the selection sat at an edge of the grid.

Read from the units' records (the ``tuned`` column, and ``tuning_grid`` and ``diag_*`` from
a result store, :func:`pmlbench.runner.store.unit_details`). An edge that wins in most units
says the best value may lie beyond the grid; the leaderboard shows this table (issue 32).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

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

    @property
    def at_low(self) -> int:
        """Units whose selected value is the grid's smallest."""
        return self.chosen[self.low] if self.low is not None else 0

    @property
    def at_high(self) -> int:
        """Units whose selected value is the grid's largest."""
        return self.chosen[self.high] if self.high is not None else 0

    @property
    def mostly_at_an_edge(self) -> bool:
        """Whether one edge of the grid won in more than half of the units."""
        return max(self.at_low, self.at_high) > self.units / 2


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
        chosen: dict[str, Counter[str]] = {}
        for setting in tuned:
            for name, value in setting.items():
                chosen.setdefault(name, Counter())[value] += 1
        for name in sorted(chosen):
            grid = searched.get(name) or sorted(chosen[name])
            low, high = _edges(grid)
            summaries.append(
                ParameterSummary(
                    str(method), name, grid, chosen[name], sum(chosen[name].values()), low, high
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
