"""``pmlbench report --bayesian``: the Bayesian tables agree with an independent computation.

The report is made by the command line from hand-made results.csv files; every number of
bayes.csv, bayes_across.csv and bayes_wtl.csv is then recomputed from those files with plain
pandas and pmlbench.stats.bayesian called directly (and the correlated t-test once more from
its closed form with scipy.stats.t, the signed-rank test against baycomp when installed).
"""

from __future__ import annotations

import importlib.util
import json
import re
from itertools import product
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pmlbench.cli.main import main as cli_main
from pmlbench.stats.bayesian import (
    bayesian_outcome,
    bayesian_signed_rank,
    correlated_bayesian_ttest,
)
from tests.helpers import METRICS, run_rows, write_run

ROPE = 0.01
THRESHOLD = 0.95
N_TRAIN, N_TEST = 120, 40  # rho = 1/4: the correction is not the k-fold one
HAS_BAYCOMP = importlib.util.find_spec("baycomp") is not None


@pytest.fixture(scope="module")
def multirun(tmp_path_factory) -> Path:
    """ref, far (clearly worse), twin (within the ROPE of ref) and wobbly (undecided) on three
    datasets at two noise rates, five splits each; n_test/n_train = 1/3."""
    root = tmp_path_factory.mktemp("bayes") / "multirun"
    rng = np.random.default_rng(7)
    job = 0
    for dataset, rate in product(["d1", "d2", "d3"], [0.5, 1.0]):
        base = rng.uniform(0.5, 0.7, size=5)
        shifts = {
            "ref": np.zeros(5),
            "far": -0.08 + rng.normal(0, 0.005, size=5),
            "twin": rng.normal(0, 0.0005, size=5),
            "wobbly": rng.normal(0, 0.03, size=5),
        }
        for method, shift in shifts.items():
            ap = base + shift
            hl = 0.3 - ap / 4
            rows = run_rows(dataset, rate, method, list(zip(ap, hl, strict=True)))
            for row in rows:
                row["n_train"], row["n_test"] = N_TRAIN, N_TEST
            write_run(root, f"{job}_{method}_{dataset}", rows)
            job += 1
    return root


@pytest.fixture(scope="module")
def report(multirun, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bayes") / "report"
    args = ["report", str(multirun), "--out", str(out), "--reference", "ref", "--bayesian"]
    assert cli_main([*args, "--rope", str(ROPE), "--no-plots", "--quiet"]) == 0
    return out


def _results(root: Path) -> pd.DataFrame:
    return pd.concat([pd.read_csv(p) for p in sorted(root.rglob("results.csv"))])


def independent_ttests(root: Path) -> pd.DataFrame:
    """Per (baseline, metric, dataset, rate): the correlated Bayesian t-test of ref against the
    baseline over the matched splits, by the library function and by its closed form."""
    frame = _results(root)
    rows = []
    for (dataset, rate, metric), group in frame.groupby(["dataset", "noise_rate", "metric"]):
        higher = bool(group["higher_is_better"].iloc[0])
        ref = group[group["method"] == "ref"].set_index(["seed", "split"])
        for method in sorted(set(group["method"]) - {"ref"}):
            other = group[group["method"] == method].set_index(["seed", "split"])
            a, b = ref["value"].align(other["value"], join="inner")
            result = correlated_bayesian_ttest(
                a.to_numpy(), b.to_numpy(), N_TRAIN, N_TEST, rope=ROPE, higher_is_better=higher
            )
            # closed form: mu ~ t(J - 1, mean(d), (1/J + n_test/n_train) var(d)), d oriented
            d = (a.to_numpy() - b.to_numpy()) * (1 if higher else -1)
            j = len(d)
            scale = np.sqrt((1 / j + N_TEST / N_TRAIN) * np.var(d, ddof=1))
            p_ref = stats.t.sf(ROPE, j - 1, loc=d.mean(), scale=scale)
            p_other = stats.t.cdf(-ROPE, j - 1, loc=d.mean(), scale=scale)
            rows.append(
                {
                    "baseline": method,
                    "metric": metric,
                    "dataset": dataset,
                    "rate": rate,
                    "n": j,
                    "mean_difference": float(np.mean(a.to_numpy() - b.to_numpy())),
                    "p_reference_better": result.p_a_better,
                    "p_equivalent": result.p_equivalent,
                    "p_baseline_better": result.p_b_better,
                    "closed_reference_better": p_ref,
                    "closed_equivalent": 1 - p_ref - p_other,
                    "closed_baseline_better": p_other,
                    "outcome": result.outcome(THRESHOLD),
                }
            )
    return pd.DataFrame(rows).sort_values(["baseline", "metric", "dataset", "rate"])


def _level_rate(level: str) -> float:
    return float(re.fullmatch(r"rate=(.*)", level).group(1))


def test_per_dataset_probabilities_agree_with_an_independent_computation(multirun, report):
    table = pd.read_csv(report / "bayes.csv")
    assert list(table.columns) == [
        "baseline",
        "metric",
        "dataset",
        "level",
        "n",
        "reference_mean",
        "baseline_mean",
        "mean_difference",
        "rope",
        "p_reference_better",
        "p_equivalent",
        "p_baseline_better",
        "outcome",
    ]
    table["rate"] = table["level"].map(_level_rate)
    table = table.sort_values(["baseline", "metric", "dataset", "rate"]).reset_index(drop=True)
    expected = independent_ttests(multirun).reset_index(drop=True)
    assert len(table) == len(expected) == 3 * 2 * 3 * 2  # baselines x metrics x datasets x rates
    for column in ["baseline", "metric", "dataset", "rate", "n", "outcome"]:
        assert table[column].tolist() == expected[column].tolist(), column
    assert (table["rope"] == ROPE).all()
    for column in ["mean_difference", "p_reference_better", "p_equivalent", "p_baseline_better"]:
        np.testing.assert_allclose(table[column], expected[column], rtol=1e-12, atol=1e-15)
    for side in ["reference_better", "equivalent", "baseline_better"]:
        np.testing.assert_allclose(
            table[f"p_{side}"], expected[f"closed_{side}"], rtol=1e-9, atol=1e-12
        )
    # the designed cases: far loses everywhere, twin is practically equivalent everywhere
    outcomes = table.groupby("baseline")["outcome"].agg(set)
    assert outcomes["far"] == {"win"} and outcomes["twin"] == {"tie"}
    assert "undecided" in outcomes["wobbly"]


def test_across_datasets_signed_rank_agrees(multirun, report):
    frame = _results(multirun)
    means = frame.groupby(["metric", "dataset", "noise_rate", "method"])["value"].mean().unstack()
    table = pd.read_csv(report / "bayes_across.csv")
    assert len(table) == 3 * 2
    for row in table.itertuples(index=False):
        # one block per dataset (the report's default --blocks): the mean over its noise rates
        pair = means.loc[row.metric][["ref", row.baseline]].groupby(level="dataset").mean()
        result = bayesian_signed_rank(
            pair["ref"].to_numpy(),
            pair[row.baseline].to_numpy(),
            rope=ROPE,
            higher_is_better=METRICS[row.metric],
            seed=0,
        )
        assert row.n_datasets == len(pair) == 3
        assert row.mean_difference == pytest.approx(result.mean_difference, rel=1e-12)
        assert (row.p_reference_better, row.p_equivalent, row.p_baseline_better) == (
            result.p_a_better,
            result.p_equivalent,
            result.p_b_better,
        )
        assert row.outcome == bayesian_outcome(
            result.p_a_better, result.p_equivalent, result.p_b_better, THRESHOLD
        )
        if HAS_BAYCOMP:  # Benavoli et al.'s implementation: Monte Carlo, so to 0.01
            import baycomp

            x, y = pair["ref"].to_numpy(), pair[row.baseline].to_numpy()
            if not METRICS[row.metric]:
                x, y = y, x
            # (P(x better), P(equivalent), P(y better)): baycomp's differences are y - x
            probs = baycomp.SignedRankTest.probs(x, y, rope=ROPE, random_state=1)
            np.testing.assert_allclose(
                (row.p_reference_better, row.p_equivalent, row.p_baseline_better),
                probs,
                atol=0.01,
            )
    verdicts = table.set_index(["baseline", "metric"])["outcome"]
    assert set(verdicts.loc["far"]) == {"win"} and set(verdicts.loc["twin"]) == {"tie"}


def test_bayesian_win_tie_loss_counts(multirun, report):
    wtl = pd.read_csv(report / "bayes_wtl.csv")
    assert list(wtl.columns) == ["baseline", "metric", "win", "tie", "loss", "undecided"]
    expected = independent_ttests(multirun)
    for row in wtl.itertuples(index=False):
        mine = expected[expected["baseline"] == row.baseline]
        if row.metric != "total":
            mine = mine[mine["metric"] == row.metric]
        counts = mine["outcome"].value_counts()
        assert (row.win, row.tie, row.loss, row.undecided) == tuple(
            int(counts.get(o, 0)) for o in ("win", "tie", "loss", "undecided")
        ), row
    assert set(wtl["metric"]) == {*METRICS, "total"}


def test_bayesian_files_summary_and_page(report):
    for name in ["bayes.md", "bayes.tex", "bayes_wtl.md", "bayes_wtl.tex"]:
        assert (report / name).is_file(), name
    wtl_md = (report / "bayes_wtl.md").read_text()
    totals = pd.read_csv(report / "bayes_wtl.csv").query("metric == 'total'")
    for row in totals.itertuples(index=False):
        assert f"{row.win}/{row.tie}/{row.loss}/{row.undecided}" in wtl_md
    bayes_md = (report / "bayes.md").read_text()
    first = pd.read_csv(report / "bayes.csv").iloc[0]
    assert f"| {first.p_reference_better:.3f} | {first.p_equivalent:.3f} |" in bayes_md
    summary = (report / "summary.md").read_text()
    assert "## Bayesian comparisons" in summary
    assert "ref vs far: per PML dataset and metric, practically better in 12" in summary
    # the page embeds the same counts
    page = (report / "report.html").read_text(encoding="utf-8")
    data = json.loads(re.search(r'id="report-data">(.*?)</script>', page, re.S).group(1))
    methods = data["methods"]
    on_page = {(methods[r[0]], r[1]): tuple(r[2:]) for r in data["bayes"]["wtl"]}
    metrics = [m[0] for m in data["metrics"]]
    for row in pd.read_csv(report / "bayes_wtl.csv").itertuples(index=False):
        m = -1 if row.metric == "total" else metrics.index(row.metric)
        assert on_page[(row.baseline, m)] == (row.win, row.tie, row.loss, row.undecided)
    assert 'id="bayes-section"' in page


def test_wtl_md_shows_effect_sizes_beside_p_values(report):
    comparisons = pd.read_csv(report / "comparisons.csv")
    text = (report / "wtl.md").read_text()
    assert "| dataset | noise | vs | splits | difference ± SE | Cohen's d | p | outcome |" in text
    for row in comparisons.itertuples(index=False):
        se_places = max(3, 1 - int(np.floor(np.log10(row.standard_error))))
        difference = f"{row.mean_difference:+.{se_places}f} ± {row.standard_error:.{se_places}f}"
        line = (
            f"| {row.dataset} | {row.level} | {row.baseline} | {row.n} | {difference} | "
            f"{row.cohens_d:+.2f} | {row.pvalue:.3g} | {row.outcome} |"
        )
        assert line in text, line
    # the counts of wtl.csv are those of the comparisons, unchanged
    wtl = pd.read_csv(report / "wtl.csv")
    assert list(wtl.columns) == ["baseline", "metric", "win", "tie", "loss"]


def test_bayesian_options_are_checked(multirun, tmp_path, capsys):
    out = str(tmp_path / "r")
    assert cli_main(["report", str(multirun), "--out", out, "--bayesian", "--no-plots"]) == 2
    assert "--bayesian compares the reference" in capsys.readouterr().err
    args = ["report", str(multirun), "--out", out, "--reference", "ref", "--bayesian"]
    assert cli_main([*args, "--rope", "-0.1", "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert "--rope must be a finite width >= 0" in err and "Traceback" not in err
    # without --bayesian no Bayesian file is written
    assert cli_main(["report", str(multirun), "--out", out, "--no-plots", "--quiet"]) == 0
    assert not list(Path(out).glob("bayes*"))
