"""Disambiguation quality (issue 24): the measures against scikit-learn and by hand, their
recording by the protocol for a method exposing ``disambiguation_scores_`` (a real PML3ER
run), and their own table in the report, apart from the test metrics."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from pmlbench.errors import PluginError
from pmlbench.metrics.disambiguation import (
    disambiguation_auc,
    disambiguation_measures,
    disambiguation_precision,
)
from pmlbench.report import ReportOptions, build_report, write_report


def _problem(seed: int, n: int = 60, labels: int = 8, ties: bool = False):
    rng = np.random.default_rng(seed)
    truth = (rng.random((n, labels)) < 0.25).astype(np.uint8)
    candidates = truth | (rng.random((n, labels)) < 0.3).astype(np.uint8)
    scores = rng.normal(size=(n, labels)) + 1.5 * truth
    if ties:
        scores = np.round(scores)  # many equal confidences
    return scores, candidates, truth


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_auc_is_sklearns_roc_auc_over_the_candidates(seed, ties):
    scores, candidates, truth = _problem(seed, ties=ties)
    mask = candidates == 1
    expected = roc_auc_score(truth[mask], scores[mask])
    assert disambiguation_auc(scores, candidates, truth) == pytest.approx(expected, abs=1e-12)
    # non-candidates are never read
    noisy = np.where(mask, scores, 1e6)
    assert disambiguation_auc(noisy, candidates, truth) == pytest.approx(expected, abs=1e-12)


def test_auc_is_undefined_without_false_candidates():
    scores, _, truth = _problem(3)
    assert np.isnan(disambiguation_auc(scores, truth, truth))
    assert "disambiguation_auc" not in disambiguation_measures(scores, truth, truth)


def test_precision_by_hand_with_a_tie_across_the_cut():
    candidates = np.array([[1, 1, 1, 0], [1, 1, 1, 1], [1, 0, 0, 0]])
    truth = np.array([[1, 0, 0, 0], [0, 1, 1, 0], [0, 0, 0, 0]])
    scores = np.array(
        [
            [0.9, 0.1, 0.2, 5.0],  # top-1 among candidates is the true one: 1
            [0.5, 0.5, 0.5, 0.1],  # top-2 cut inside a three-way tie holding 2 true: 2/3
            [0.3, 0.0, 0.0, 0.0],  # no true label: left out
        ]
    )
    expected = (1.0 + (2 * 2 / 3) / 2) / 2
    assert disambiguation_precision(scores, candidates, truth) == pytest.approx(expected)
    # perfect confidences give 1, reversed ones the share of the forced picks
    perfect = truth + 0.0
    assert disambiguation_precision(perfect, candidates, truth) == 1.0


def test_precision_does_not_depend_on_the_order_of_tied_scores():
    scores, candidates, truth = _problem(4, ties=True)
    order = np.random.default_rng(0).permutation(scores.shape[1])
    a = disambiguation_precision(scores, candidates, truth)
    b = disambiguation_precision(scores[:, order], candidates[:, order], truth[:, order])
    assert a == pytest.approx(b, abs=1e-15)


def test_a_wrong_shape_is_one_plugin_error():
    scores, candidates, truth = _problem(5)
    with pytest.raises(PluginError, match="disambiguation_scores_ has shape"):
        disambiguation_measures(scores[:, :3], candidates, truth)


@pytest.fixture(scope="module")
def pml3er_run(tmp_path_factory):
    """PML3ER and ML-kNN (no hook) on genbase, two splits, written as run directories."""
    from pmlbench.api import run

    root = tmp_path_factory.mktemp("disambiguation")
    for method in ("pml3er", "mlknn"):
        run(
            [f"method={method}", "dataset=genbase", "protocol.n_splits=2"],
            out_dir=root / method,
        )
    return root


def test_pml3er_records_disambiguation_auc_above_chance(pml3er_run, tmp_path):
    rows = pd.read_csv(pml3er_run / "pml3er" / "results.csv")
    per_split = rows.drop_duplicates("split")
    assert len(per_split) == 2
    assert (per_split["disambiguation_auc"] > 0.5).all()
    assert per_split["disambiguation_precision"].between(0, 1).all()
    assert "disambiguation_auc" not in set(rows["metric"])  # never a test metric
    baseline = pd.read_csv(pml3er_run / "mlknn" / "results.csv")
    assert "disambiguation_auc" not in baseline.columns

    out = tmp_path / "report"
    report = build_report([pml3er_run], ReportOptions(plots=False, reference="pml3er"))
    write_report(report, out)
    table = pd.read_csv(out / "disambiguation.csv")
    assert set(table["method"]) == {"pml3er"}
    auc = table[table["measure"] == "disambiguation_auc"].iloc[0]
    assert auc["mean"] == pytest.approx(per_split["disambiguation_auc"].mean())
    # the test metrics' ranks and tables hold no training-side measure
    assert "disambiguation" not in " ".join(report.ranks)
    assert not report.table2["metric"].str.startswith("disambiguation").any()
    assert "Disambiguation (training part)" in (out / "report.html").read_text()


@pytest.mark.parametrize(
    "method", ["pml3er", "particle_map", "particle_vls", "pml_ld", "nlr", "pml_ni", "pml_lrs"]
)
def test_every_built_in_disambiguating_method_exposes_its_confidences(method):
    """330 genbase instances with uniform candidate noise at rate 1: each method's confidence
    per training candidate is an n x l array that separates true labels better than chance
    (measured: AUC 0.80 for PML3ER's enriched labels up to 0.995 for PML-NI)."""
    from pmlbench.plugins.loading import load_dataset, method_factory, noise_model

    data = load_dataset({"name": "genbase"})
    rows = np.random.default_rng(0).permutation(data.n_instances)[:330]
    X, truth = data.X[rows], data.Y[rows]
    candidates = noise_model({"name": "uniform", "rate": 1.0}).candidates(
        truth, np.random.default_rng(1)
    )
    estimator = method_factory({"name": method}).build(0).fit(X, candidates)
    scores = estimator.disambiguation_scores_
    assert isinstance(scores, np.ndarray) and scores.shape == candidates.shape
    assert disambiguation_auc(scores, candidates, truth) > 0.75
    assert disambiguation_precision(scores, candidates, truth) > 0.75
