"""Every pair of methods across datasets (issue 24): pairwise.csv against scipy's exact
Wilcoxon signed-rank test over per-dataset means and statsmodels' Holm correction, blocks per
dataset and per dataset x noise level, per-noise-level tables, the multi-comparison matrix in
every output and the Wilcoxon-Holm cliques of the CD diagrams."""

from __future__ import annotations

from itertools import combinations, product
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from pmlbench.cli.main import main as cli_main
from pmlbench.errors import PmlbenchError
from pmlbench.report import ReportOptions, build_report, write_report
from pmlbench.stats.pairwise import pairwise_cliques, pairwise_wilcoxon
from tests.helpers import run_rows, write_run

DATASETS = ["d1", "d2", "d3", "d4"]
RATES = [0.5, 1.0]
METHODS = ["alpha", "beta", "gamma"]
DECLINER = "gamma"
DECLINED = {"d3", "d4"}


@pytest.fixture
def sweep(tmp_path) -> Path:
    """Three methods x four datasets x two noise rates x three splits; gamma declines d3, d4
    (no results there); values differ per dataset so the Wilcoxon tests are not trivial."""
    root = tmp_path / "sweep"
    rng = np.random.default_rng(7)
    job = 0
    for dataset, rate in product(DATASETS, RATES):
        base = rng.uniform(0.4, 0.8)
        for method, shift in zip(METHODS, [0.05, 0.0, -0.03], strict=True):
            if method == DECLINER and dataset in DECLINED:
                continue
            ap = base + shift + rng.normal(0, 0.02, size=3)
            write_run(
                root,
                f"{job}_{method}_{dataset}_{rate}",
                run_rows(dataset, rate, method, [(a, 0.5 - a / 10) for a in ap]),
            )
            job += 1
    return root


def _dataset_means(root: Path) -> pd.DataFrame:
    """Independently of pmlbench: metric x dataset x method mean over levels and splits."""
    rows = pd.concat([pd.read_csv(p) for p in sorted(root.rglob("results.csv"))])
    return rows.groupby(["metric", "dataset", "method"])["value"].mean().unstack("method")


def test_pairwise_csv_is_scipys_exact_wilcoxon_and_statsmodels_holm(sweep, tmp_path):
    out = tmp_path / "report"
    report = build_report([sweep], ReportOptions(plots=False, html=False))
    write_report(report, out)
    table = pd.read_csv(out / "pairwise.csv")
    assert list(table.columns[:10]) == [
        "metric",
        "method_a",
        "method_b",
        "n_datasets",
        "mean_diff",
        "wins",
        "ties",
        "losses",
        "p",
        "p_holm",
    ]
    means = _dataset_means(sweep)
    for metric, higher in [("average_precision", True), ("hamming_loss", False)]:
        mine = table[table["metric"] == metric].set_index(["method_a", "method_b"])
        assert sorted(mine.index) == sorted(combinations(METHODS, 2))
        expected_p = []
        for a, b in combinations(METHODS, 2):
            pair = means.loc[metric][[a, b]].dropna()
            row = mine.loc[(a, b)]
            n = 2 if DECLINER in (a, b) else 4  # the other two methods' pairs use all four
            assert row["n_datasets"] == len(pair) == n
            d = pair[a].to_numpy() - pair[b].to_numpy()
            expected = stats.wilcoxon(d, method="exact").pvalue
            assert row["p"] == pytest.approx(expected, rel=1e-12)
            assert row["mean_diff"] == pytest.approx(d.mean(), abs=1e-12)
            better = d > 0 if higher else d < 0
            worse = d < 0 if higher else d > 0
            assert (row["wins"], row["losses"]) == (better.sum(), worse.sum())
            assert row["ties"] == n - better.sum() - worse.sum()
            assert row["blocks"].startswith("dataset")
            expected_p.append(expected)
        holm = multipletests(expected_p, method="holm")[1]
        got = [mine.loc[pair, "p_holm"] for pair in combinations(METHODS, 2)]
        np.testing.assert_allclose(got, holm, rtol=1e-12)


def test_noise_levels_as_blocks_are_labelled_and_counted(sweep, tmp_path):
    report = build_report([sweep], ReportOptions(plots=False, html=False, blocks="level"))
    table = report.pairwise
    assert table is not None
    assert set(table["blocks"]) == {"dataset x noise level"}
    ab = table[(table["method_a"] == "alpha") & (table["method_b"] == "beta")]
    assert set(ab["n_datasets"]) == {8}  # four datasets at two rates
    ag = table[(table["method_a"] == "alpha") & (table["method_b"] == "gamma")]
    assert set(ag["n_datasets"]) == {4}
    friedman = report.ranks["average_precision"].friedman
    assert friedman.n_blocks == 4  # the complete (dataset, level) blocks


def test_per_level_tables_and_friedman_over_complete_datasets(sweep, tmp_path):
    out = tmp_path / "report"
    report = build_report([sweep], ReportOptions(plots=False, html=False, pairwise_by_level=True))
    write_report(report, out)
    levels = pd.read_csv(out / "pairwise_by_level.csv")
    assert set(levels["level"]) == {"rate=0.5", "rate=1"}
    rows = pd.concat([pd.read_csv(p) for p in sorted(sweep.rglob("results.csv"))])
    at = rows[(rows["noise_rate"] == 0.5) & (rows["metric"] == "average_precision")]
    means = at.groupby(["dataset", "method"])["value"].mean().unstack("method")
    mine = levels[(levels["level"] == "rate=0.5") & (levels["metric"] == "average_precision")]
    expected = [
        stats.wilcoxon(*(means[[a, b]].dropna().to_numpy().T), method="exact").pvalue
        for a, b in combinations(METHODS, 2)
    ]
    np.testing.assert_allclose(mine["p"], expected, rtol=1e-12)
    np.testing.assert_allclose(mine["p_holm"], multipletests(expected, method="holm")[1])
    # Friedman: the datasets where every method has a result, N stated in datasets
    friedman = report.ranks["average_precision"].friedman
    assert friedman.n_blocks == 2
    assert "N = 2 blocks" in (out / "stats.md").read_text()
    assert "One block per dataset" in (out / "stats.md").read_text()


def test_pair_without_common_dataset_is_untested_and_outside_holm():
    values = pd.DataFrame(
        {"a": [0.1, 0.2, 0.3, np.nan], "b": [0.2, 0.1, 0.5, np.nan], "c": [np.nan] * 3 + [0.4]}
    )
    frame = pairwise_wilcoxon(values, True)
    ac = frame[(frame["method_a"] == "a") & (frame["method_b"] == "c")].iloc[0]
    assert ac["n_datasets"] == 0 and np.isnan(ac["p"]) and np.isnan(ac["p_holm"])
    ab = frame[(frame["method_a"] == "a") & (frame["method_b"] == "b")].iloc[0]
    assert ab["p_holm"] == pytest.approx(ab["p"])  # a family of one tested pair


def test_grouped_blocks_average_only_the_levels_both_methods_have():
    index = pd.MultiIndex.from_tuples(
        [("d1", "x"), ("d1", "y"), ("d2", "x"), ("d2", "y")], names=["dataset", "level"]
    )
    values = pd.DataFrame({"a": [1.0, 5.0, 2.0, 2.0], "b": [0.0, np.nan, 1.0, 3.0]}, index)
    frame = pairwise_wilcoxon(values, True, group="dataset")
    row = frame.iloc[0]
    # d1: only level x is common (1 - 0); d2: both levels, mean 2 vs mean 2
    assert row["n_datasets"] == 2
    assert (row["wins"], row["ties"], row["losses"]) == (1, 1, 0)
    assert row["mean_diff"] == pytest.approx(0.5)


def test_cliques_follow_the_holm_decisions():
    rng = np.random.default_rng(3)
    base = rng.uniform(0.3, 0.7, size=12)
    values = pd.DataFrame({"good": base + 0.2, "mid": base + 0.1, "bad": base})
    values["mid"] += rng.normal(0, 0.001, size=12)
    frame = pairwise_wilcoxon(values, True)
    assert frame["significant"].all()  # twelve datasets, always the same direction
    groups = pairwise_cliques(["good", "mid", "bad"], [1.0, 2.0, 3.0], frame)
    assert groups == []  # every pair differs: no bar
    close = values.assign(mid=base + rng.normal(0, 0.05, size=12) + 0.2)
    groups = pairwise_cliques(
        ["good", "mid", "bad"], [1.0, 2.0, 3.0], pairwise_wilcoxon(close, True)
    )
    assert ("good", "mid") in groups


def test_matrix_in_terminal_markdown_html_and_options(sweep, tmp_path, capsys):
    out = tmp_path / "report"
    assert cli_main(["report", str(sweep), "--out", str(out), "--no-plots"]) == 0
    printed = capsys.readouterr().out
    assert "pairwise Wilcoxon over datasets, Holm-adjusted" in printed
    markdown = (out / "pairwise.md").read_text()
    assert "Holm" in markdown and "| alpha |" in markdown.replace("**", "")
    page = (out / "report.html").read_text()
    assert 'id="pairwise-section"' in page and 'class="data pairwise"' in page
    summary = (out / "summary.md").read_text()
    assert "datasets (Friedman" in summary
    with pytest.raises(PmlbenchError, match="blocks"):
        ReportOptions(blocks="noise")


def _cd_text(written: list[Path]) -> str:
    """The CD diagram's SVG and, where the report writes them, the figures' captions."""
    names = ("cd_average_precision.svg", "captions.md")
    return "\n".join(p.read_text() for p in written if p.name in names)


def test_cd_diagram_title_names_the_test(sweep, tmp_path):
    pytest.importorskip("matplotlib")
    report = build_report([sweep], ReportOptions(html=False))
    text = _cd_text(write_report(report, tmp_path / "wilcoxon"))
    assert "pairwise Wilcoxon signed-rank, Holm" in text
    report = build_report([sweep], ReportOptions(html=False, posthoc="nemenyi"))
    text = _cd_text(write_report(report, tmp_path / "nemenyi"))
    assert "depends on the pool of methods" in text


# ---------------------------------------------------------------- hierarchical Bayesian model


def _needs_stan():
    pytest.importorskip("stan", reason="pip install 'pmlbench[hierarchical]'")
    pytest.importorskip("baycomp", reason="pip install 'pmlbench[hierarchical]'")


@pytest.mark.slow
def test_hierarchical_model_agrees_with_baycomp_and_is_seeded(tmp_path, monkeypatch):
    """Against baycomp's own HierarchicalTest (the same Stan model; its rho = runs/splits,
    so runs = 2.5 gives the 0.5 of 50/50 splits): vote shares within Monte Carlo error, and
    the same seed gives the same numbers."""
    _needs_stan()
    import baycomp

    from pmlbench.stats.hierarchical import hierarchical_bayesian

    monkeypatch.chdir(tmp_path)  # baycomp pickles its last sample into the working directory
    rng = np.random.default_rng(1)
    base = rng.uniform(0.5, 0.8, size=(8, 1))
    for shift, clear in ((0.02, True), (0.0, False)):
        a = base + rng.normal(0, 0.01, size=(8, 5)) + shift
        b = base + rng.normal(0, 0.01, size=(8, 5))
        mine = hierarchical_bayesian(a, b, rope=0.01, rho=0.5, seed=0)
        again = hierarchical_bayesian(a, b, rope=0.01, rho=0.5, seed=0)
        assert mine == again
        theirs = baycomp.HierarchicalTest.probs(a, b, rope=0.01, runs=2.5, nsamples=2000)
        got = (mine.p_a_better, mine.p_equivalent, mine.p_b_better)
        np.testing.assert_allclose(got, theirs, atol=0.08)
        assert (mine.p_a_better > 0.95) is clear
        # a lower-is-better metric reverses the direction
        lower = hierarchical_bayesian(b, a, rope=0.01, rho=0.5, higher_is_better=False, seed=0)
        assert lower == mine


@pytest.mark.slow
def test_hierarchical_table_in_the_report_and_the_leaderboard(sweep, tmp_path):
    _needs_stan()
    from pmlbench.report.leaderboard import leaderboard_markdown

    options = ReportOptions(
        plots=False, html=False, reference="alpha", bayesian=True, hierarchical=True
    )
    report = build_report([sweep], options)
    write_report(report, tmp_path / "report")
    table = pd.read_csv(tmp_path / "report" / "bayes_hierarchical.csv")
    assert set(table["baseline"]) == {"beta", "gamma"}
    assert set(table.loc[table["baseline"] == "gamma", "n_datasets"]) == {2}
    assert set(table.loc[table["baseline"] == "beta", "n_datasets"]) == {4}
    assert set(table["n_splits"]) == {3} and set(table["rho"]) == {0.5}
    page = leaderboard_markdown(report, ["pmlbench", "report"])
    assert "### Hierarchical Bayesian comparison" in page and "ROPE ±0.01" in page
    with pytest.raises(PmlbenchError, match="--bayesian"):
        ReportOptions(reference="alpha", hierarchical=True)


def test_leaderboard_names_holm_and_shows_disambiguation(sweep, tmp_path):
    from pmlbench.report.leaderboard import leaderboard_markdown

    report = build_report([sweep], ReportOptions(plots=False, html=False, reference="alpha"))
    page = leaderboard_markdown(report, ["pmlbench", "report"])
    overview = page.split("\n## ", 2)[1]
    for name in ("Wilcoxon signed-rank", "Holm", "corrected resampled t-test", "hierarchical"):
        assert name in overview
    assert "## Disambiguation quality (training part)" in page
    assert "this table is empty" in page  # no method here exposes the hook
    # with the measure in the records: its own table, and no rank or test of it
    for path in sorted(sweep.rglob("results.csv")):
        rows = pd.read_csv(path)
        if rows["method"].iloc[0] == "alpha":
            rows["disambiguation_auc"] = 0.5 + rows["split"] / 10
            rows.to_csv(path, index=False)
    report = build_report([sweep], ReportOptions(plots=False, html=False, reference="alpha"))
    page = leaderboard_markdown(report, ["pmlbench", "report"])
    section = page.split("## Disambiguation quality (training part)")[1].split("\n## ")[0]
    header, *rows = [line for line in section.splitlines() if line.startswith("| ")]
    assert (
        header == "| dataset | noise | alpha |" and len(rows) == 1 + len(DATASETS) * 2
    )  # rule + rows
    assert "| d1 | rate=0.5 | 0.600 ± 0.100 |" in section
    assert set(report.pairwise["metric"]) == {"average_precision", "hamming_loss"}
