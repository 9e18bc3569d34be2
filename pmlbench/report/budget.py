"""The suite's budget rule (:mod:`pmlbench.core.budget`) measured from the results.

For every method and PML dataset block (dataset, noise level): the median over splits of
the unit's CPU seconds (``cpu_seconds``, which the store's reader adds to each row) over
ML-kNN's on the same split, ML-kNN's floored at ``FLOOR_SECONDS``. The leaderboard shows
each method's largest ratio and where it was measured, and ``tests/test_leaderboard_page.py``
recomputes them from the archive.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from pmlbench.core.budget import BASELINE_METHOD, BUDGET_RATIO, FLOOR_SECONDS
from pmlbench.report.prepare import UNIT_KEY

TIME_COLUMN = "cpu_seconds"
# a unit but its method: where a method's unit meets the baseline's
SPLIT_COLUMNS = [c for c in UNIT_KEY if c != "method"]


@dataclass(frozen=True)
class BudgetRatios:
    """Per (method, dataset, level): the median ratio over splits and its number of splits;
    ``over``: the rows above ``BUDGET_RATIO``."""

    ratios: pd.DataFrame
    baseline: str

    @property
    def over(self) -> pd.DataFrame:
        return self.ratios[self.ratios["ratio"] > BUDGET_RATIO]

    def worst(self) -> pd.DataFrame:
        """Per method: its largest ratio and the block it was measured on."""
        if self.ratios.empty:
            return self.ratios
        at = self.ratios.groupby("method", sort=True)["ratio"].idxmax()
        return self.ratios.loc[at].reset_index(drop=True)


def unit_seconds(records: pd.DataFrame) -> pd.DataFrame:
    """One row per unit (method, dataset, level, seed, split) with its CPU seconds (rows of
    the same unit repeat them, one per metric); empty when the records do not hold them
    (results.csv files: only a result store records a unit's CPU time)."""
    if records.empty or not {*UNIT_KEY, TIME_COLUMN} <= set(records.columns):
        return pd.DataFrame(columns=[*UNIT_KEY, "seconds"])
    units = records[[*UNIT_KEY, TIME_COLUMN]].drop_duplicates(subset=UNIT_KEY)
    seconds = pd.to_numeric(units[TIME_COLUMN], errors="coerce")
    return units[UNIT_KEY].assign(seconds=seconds).dropna(subset=["seconds"])


def budget_ratios(records: pd.DataFrame, baseline: str = BASELINE_METHOD) -> BudgetRatios:
    """The budget ratios of every method but ``baseline`` (a method label of ``records``)
    on the blocks where ``baseline`` has the same splits."""
    units = unit_seconds(records)
    columns = ["method", "dataset", "level", "ratio", "splits"]
    base = units[units["method"] == baseline]
    if base.empty:
        return BudgetRatios(pd.DataFrame(columns=columns), baseline)
    base = base.drop(columns="method").rename(columns={"seconds": "baseline_seconds"})
    paired = units[units["method"] != baseline].merge(base, on=SPLIT_COLUMNS)
    paired["ratio"] = paired["seconds"] / np.maximum(paired["baseline_seconds"], FLOOR_SECONDS)
    ratios = (
        paired.groupby(["method", "dataset", "level"], sort=True)["ratio"]
        .agg(ratio="median", splits="size")
        .reset_index()
    )
    return BudgetRatios(ratios[columns], baseline)


__all__ = ["BudgetRatios", "budget_ratios", "unit_seconds"]
