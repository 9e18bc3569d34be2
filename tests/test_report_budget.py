"""The budget ratios of the leaderboard (pmlbench.report.budget) on hand-made records."""

from __future__ import annotations

import pandas as pd
import pytest

from pmlbench.core.budget import BUDGET_RATIO, FLOOR_SECONDS
from pmlbench.report.budget import budget_ratios


def records(rows):
    """Rows (method, dataset, split, CPU seconds in two parts), each repeated for two
    metrics as the report's records are."""
    out = []
    for method, dataset, split, fit, predict in rows:
        for metric in ("hamming_loss", "ranking_loss"):
            out.append(
                dict(
                    method=method,
                    dataset=dataset,
                    level="rate=1",
                    seed=0,
                    split=split,
                    cpu_seconds=fit + predict,
                    fit_seconds=1e6,  # wall seconds do not count
                    metric=metric,
                )
            )
    return pd.DataFrame(out)


def test_the_ratio_is_the_median_over_splits_against_the_floored_baseline():
    found = budget_ratios(
        records(
            [
                ("mlknn", "big", 0, 3.0, 1.0),  # 4 s
                ("mlknn", "big", 1, 1.5, 0.5),  # 2 s
                ("mlknn", "big", 2, 1.0, 1.0),  # 2 s
                ("slow", "big", 0, 40.0, 0.0),  # 10x
                ("slow", "big", 1, 60.0, 0.0),  # 30x
                ("slow", "big", 2, 160.0, 0.0),  # 80x: over, but the median is 30x
                ("mlknn", "tiny", 0, 0.01, 0.01),  # floored at 1 s
                ("slow", "tiny", 0, 3.0, 0.0),
            ]
        )
    )
    table = found.ratios.set_index(["method", "dataset"])
    assert table.loc[("slow", "big"), "ratio"] == pytest.approx(30.0)
    assert table.loc[("slow", "big"), "splits"] == 3
    assert table.loc[("slow", "tiny"), "ratio"] == pytest.approx(3.0 / FLOOR_SECONDS)
    assert "mlknn" not in set(found.ratios["method"])
    assert found.over.empty
    assert found.worst().iloc[0]["dataset"] == "big"


def test_a_cell_over_the_budget_is_reported_and_units_without_a_baseline_are_not_paired():
    slow = BUDGET_RATIO * 2.0 + 1.0
    found = budget_ratios(
        records(
            [
                ("mlknn", "a", 0, 2.0, 0.0),
                ("slow", "a", 0, 2.0 * slow, 0.0),
                ("slow", "b", 0, 1e6, 0.0),  # no ML-kNN result on b: no ratio
            ]
        )
    )
    assert list(found.over["dataset"]) == ["a"]
    assert found.over.iloc[0]["ratio"] == pytest.approx(2.0 * slow / 2.0)
    assert set(found.ratios["dataset"]) == {"a"}


def test_without_the_baseline_there_is_nothing_to_measure():
    found = budget_ratios(records([("slow", "a", 0, 5.0, 0.0)]))
    assert found.ratios.empty and found.over.empty
