"""Which tuning values won (pmlbench.report.tuning_summary) and the store columns it reads."""

from __future__ import annotations

import json

import pandas as pd

from pmlbench.report.tuning_summary import active_share, parse_tuned, tuning_summary
from pmlbench.runner.store import tied_parameters, unit_details


def rows(method, tuned_values, grid=None, nnz=None):
    out = []
    for split, tuned in enumerate(tuned_values):
        for metric in ("hamming_loss", "ranking_loss"):  # two rows per unit
            row = dict(
                method=method, dataset="d", level="rate=1", seed=0, split=split, metric=metric
            )
            row["tuned"] = tuned
            if grid is not None:
                row["tuning_grid"] = json.dumps(grid)
            if nnz is not None:
                row["diag_nnz_V"] = nnz[split]
            out.append(row)
    return out


def test_counts_follow_the_grid_and_its_edges_not_the_values_chosen():
    records = pd.DataFrame(
        rows(
            "ni",
            ["gamma=0.2", "gamma=0.2", "gamma=0.5", "gamma=0.1"],
            {"gamma": [0.5, 0.2, 0.1, 0.05]},
        )
        + rows("knn", ["k=10", "", "k=10"], {"k": [5, 10, 15]})
        + rows(
            "vls",
            ["votes=accuracy;threshold=0.9"],
            {"votes": ["unweighted", "accuracy"], "threshold": [0.7, 0.9]},
        )
    )
    summaries, counts = tuning_summary(records)
    found = {(s.method, s.parameter): s for s in summaries}
    ni = found[("ni", "gamma")]
    assert ni.grid == ["0.5", "0.2", "0.1", "0.05"] and ni.units == 4
    # 0.1 is not an edge of the grid, though it is the smallest value selected
    assert (ni.low, ni.high, ni.at_low, ni.at_high) == ("0.05", "0.5", 0, 1)
    assert not ni.mostly_at_an_edge
    knn = found[("knn", "k")]
    assert (knn.at_low, knn.at_high, knn.units) == (0, 0, 2)
    assert found[("vls", "votes")].low is None  # categories have no edges
    assert found[("vls", "threshold")].mostly_at_an_edge  # 0.9 in 1 of 1
    assert counts.set_index("method").loc["knn"].tolist() == [3, 2]


def test_without_a_recorded_grid_the_selected_values_stand_in():
    records = pd.DataFrame(rows("m", ["c=1", "c=10", "c=10"]))
    (summary,), _ = tuning_summary(records)
    assert summary.grid == ["1", "10"] and summary.at_high == 2 and summary.mostly_at_an_edge


def test_parse_tuned_and_the_noise_term_share():
    assert parse_tuned("lambda2=100;k=5") == {"lambda2": "100", "k": "5"}
    assert parse_tuned(float("nan")) == {} and parse_tuned("") == {}
    records = pd.DataFrame(rows("ni", ["gamma=0.1"] * 3, nnz=[0, 4, 2]) + rows("knn", ["k=5"]))
    share = active_share(records, "diag_nnz_V").set_index("method")
    assert share.loc["ni"].tolist() == [3, 2] and "knn" not in share.index


def test_store_records_give_the_grid_in_grid_order_and_scalar_diagnostics():
    record = {
        "split": {
            "tuning": {"grid": [{"a": 2, "b": "x"}, {"a": 1, "b": "x"}, {"a": 2, "b": "y"}]},
            "diagnostics": {"nnz_V": 3, "form": "primal", "losses": [1.0, 0.5]},
        }
    }
    details = unit_details(record)
    assert json.loads(details["tuning_grid"]) == {"a": [2, 1], "b": ["x", "y"]}
    assert details["diag_nnz_V"] == 3 and details["diag_form"] == "primal"
    assert "diag_losses" not in details
    assert unit_details({"split": {"tuning": {}, "diagnostics": {}}}) == {}


def test_a_parameter_is_tied_when_a_neighbouring_grid_value_scored_the_same():
    """tuning_tied: the neighbours of the selected value along one parameter (the others as
    selected), by sorted value, not grid order; a tie is the selection's own (relative 1e-9)."""
    tuning = {
        "grid": [
            {"a": 10, "b": "x"},
            {"a": 1, "b": "x"},
            {"a": 100, "b": "x"},
            {"a": 10, "b": "y"},
        ],
        "mean_scores": [0.8, 0.5, 0.8 * (1 - 1e-12), 0.8],
        "best_index": 0,
    }
    # a = 100 scored the same up to rounding; b = "y" too, but categories have no neighbours
    assert tied_parameters(tuning) == ["a"]
    tuning["mean_scores"][2] = 0.79
    assert tied_parameters(tuning) == []  # 1 is a neighbour of 10 but scored worse
    tuning["mean_scores"][1] = 0.8
    assert tied_parameters(tuning) == ["a"]
    # the neighbour of the largest value is the one below it, wherever it sits in the grid
    edge = {"grid": [{"c": 3}, {"c": 1}, {"c": 2}], "mean_scores": [0.7, 0.7, 0.6]}
    assert tied_parameters({**edge, "best_index": 0}) == []  # 1 is not next to 3
    assert tied_parameters({**edge, "best_index": 1, "mean_scores": [0.5, 0.7, 0.7]}) == ["c"]
    assert tied_parameters({"grid": [{"c": 1}], "mean_scores": [0.5]}) == []  # no best_index
    assert tied_parameters({**edge, "best_index": 0, "mean_scores": [0.7, None, 0.7]}) == ["c"]
    details = unit_details(
        {"split": {"tuning": {**edge, "best_index": 2, "mean_scores": [1, 0, 1]}}}
    )
    assert json.loads(details["tuning_tied"]) == ["c"]


def test_an_edge_reached_by_a_tie_is_counted_apart_and_not_flagged():
    grid = {"g": [0.5, 0.2, 0.1]}
    records = pd.DataFrame(
        [
            {**row, "tuning_tied": json.dumps(["g"] if row["split"] < 3 else [])}
            for row in rows("m", ["g=0.5"] * 4 + ["g=0.1"], grid)
        ]
    )
    (summary,), _ = tuning_summary(records)
    assert (summary.at_high, summary.tied_high, summary.at_low, summary.tied_low) == (4, 3, 1, 0)
    assert not summary.mostly_at_an_edge  # 1 of 5 units scored better at 0.5
    records["tuning_tied"] = json.dumps([])
    (summary,), _ = tuning_summary(records)
    assert summary.tied_high == 0 and summary.mostly_at_an_edge
