"""``pmlbench report --leaderboard``: the page written from the reduced suite's store.

The reduced suite (tests/test_suite.py: mlknn and ridge on emotions at noise rate 1 and on
mirflickr5k with its natural candidates, 2 splits, plus NLR refusing emotions up front) is
run once per session; its report and leaderboard are written by
``pmlbench report store --reference mlknn --leaderboard docs/leaderboard.md --out report``.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pmlbench.report.render import metric_name
from tests.helpers import (
    LEADERBOARD,
    REDUCED_METHODS,
    REFERENCE,
    REPORT_ARGS,
    pipe_tables,
    reduced_suite,
    report_with_leaderboard,
)

pytestmark = pytest.mark.slow

DATASETS = {"emotions": "rate=1", "mirflickr5k": "natural"}
METHODS = [*REDUCED_METHODS, "nlr"]


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return reduced_suite(tmp_path_factory.getbasetemp() / "reduced_suite")


@pytest.fixture(scope="module")
def page(root) -> str:
    return (root / LEADERBOARD).read_text(encoding="utf-8")


def _sections(page: str) -> dict[str, str]:
    """``## heading`` -> the text under it."""
    parts = re.split(r"^## (.+)$", page, flags=re.M)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


def _metric_section(page: str, metric: str) -> str:
    for heading, text in _sections(page).items():
        if heading.startswith(metric_name(metric) + " "):
            return text
    raise AssertionError(f"no section for {metric}")


def test_every_method_and_dataset_is_in_every_metric_table(root, page):
    table2 = pd.read_csv(root / "report" / "table2.csv")
    for metric in dict.fromkeys(table2["metric"]):
        header, *rows = pipe_tables(_metric_section(page, metric))[0]
        assert header == ["dataset", "noise", *METHODS]
        assert {(r[0], r[1]) for r in rows} == set(DATASETS.items())


def test_the_numbers_are_those_of_table2_csv(root, page):
    table2 = pd.read_csv(root / "report" / "table2.csv")
    checked = 0
    for metric, rows in table2.groupby("metric", sort=False):
        header, *cells = pipe_tables(_metric_section(page, metric))[0]
        shown = {(r[0], r[1], m): c for r in cells for m, c in zip(header[2:], r[2:], strict=True)}
        for row in rows.itertuples(index=False):
            text = f"{row.mean:.3f} ± {'–' if np.isnan(row.std) else f'{row.std:.3f}'}"
            assert shown[row.dataset, row.level, row.method] == (
                f"**{text}**" if row.best else text
            )
            checked += 1
        assert shown["emotions", DATASETS["emotions"], "nlr"] == "n/a"
        assert shown["mirflickr5k", "natural", "nlr"] == "–"
    assert checked == 7 * 2 * 2


def _holm(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values, written out."""
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    adjusted, running = [0.0] * len(pvalues), 0.0
    for step, i in enumerate(order):
        running = max(running, (len(pvalues) - step) * pvalues[i])
        adjusted[i] = min(1.0, running)
    return adjusted


def _corrected_wtl(root: Path) -> pd.DataFrame:
    """The reference's win/tie/loss by the corrected resampled t-test (Nadeau & Bengio 2003),
    computed here from the records with scipy's t distribution, Holm-corrected within the
    pair's metric over its PML datasets: metric, baseline, win, tie, loss. Each dataset of
    the reduced suite has one noise level, so these are also the counts over datasets."""
    from scipy import stats

    from pmlbench.runner.store import load_records

    records = load_records(root / "store")
    rows = []
    key = ["metric", "dataset", "noise", "seed", "split"]
    wide = records.pivot_table(index=key, columns="method", values="value").dropna()
    sizes = records.groupby(key)[["n_train", "n_test", "higher_is_better"]].first()
    for (metric, _, _), group in wide.groupby(level=[0, 1, 2]):
        d = (group[REFERENCE] - group["ridge"]).to_numpy()
        ratio = (sizes.loc[group.index, "n_test"] / sizes.loc[group.index, "n_train"]).mean()
        higher = bool(sizes.loc[group.index, "higher_is_better"].iloc[0])
        if np.all(d == d[0]):
            p = 1.0 if d[0] == 0 else 0.0
        else:
            t = d.mean() / np.sqrt((1 / len(d) + ratio) * d.var(ddof=1))
            p = 2 * stats.t.sf(abs(t), len(d) - 1)
        better = d.mean() > 0 if higher else d.mean() < 0
        rows.append((metric, p, d.mean() == 0, better))
    frame = pd.DataFrame(rows, columns=["metric", "p", "zero", "better"])
    frame["p_holm"] = frame.groupby("metric")["p"].transform(lambda p: _holm(list(p)))
    frame["outcome"] = np.where(
        (frame["p_holm"] >= 0.05) | frame["zero"], "tie", np.where(frame["better"], "win", "loss")
    )
    counts = frame.groupby("metric")["outcome"].value_counts().unstack(fill_value=0)
    counts = counts.reindex(columns=["win", "tie", "loss"], fill_value=0)
    counts.loc["total"] = counts.sum()
    return counts.reset_index().assign(baseline="ridge")


def test_ranks_friedman_diagram_and_win_tie_loss_are_the_reports(root, page):
    friedman = pd.read_csv(root / "report" / "friedman.csv")
    ranks = pd.read_csv(root / "report" / "ranks.csv")
    wtl = _corrected_wtl(root)
    assert "corrected resampled t-test" in page
    for row in friedman.itertuples(index=False):
        text = _metric_section(page, row.metric)
        assert f"Friedman chi2_F = {row.chi2:.3f} (p = {row.pvalue:.3g})" in text
        assert f"Nemenyi critical difference = {row.nemenyi_cd:.3f}" in text
        tables = pipe_tables(text)
        average = {m: r for m, r in tables[1][1:]}
        for rank in ranks[ranks["metric"] == row.metric].itertuples(index=False):
            assert average[rank.method] == f"{rank.average_rank:.3f}"
        link = f"leaderboard/cd_{row.metric}.svg"
        assert f"]({link})" in text
        assert (root / "docs" / link).read_text().startswith("<?xml")
        header, line = tables[2]
        assert header == [f"{REFERENCE} vs", "ridge"]
        matrix = tables[3]  # the multi-comparison matrix: nlr has no result to compare
        assert matrix[0][0] == "" and sorted(matrix[0][1:]) == sorted([REFERENCE, "ridge"])
        assert sorted(r[0] for r in matrix[1:]) == sorted([REFERENCE, "ridge"])
        counts = wtl[(wtl["metric"] == row.metric) & (wtl["baseline"] == "ridge")].iloc[0]
        text = f"{counts.win}/{counts.tie}/{counts.loss}"
        assert line == [metric_name(row.metric), f"{text} ({text})"]
    total = wtl[wtl["metric"] == "total"].iloc[0]
    overview = _sections(page)["Overview"]
    text = f"{total.win}/{total.tie}/{total.loss}"
    assert f"| total | {text} ({text}) |" in overview
    assert "Holm-corrected within each method pair and metric" in overview


def test_the_page_names_its_tests_and_shows_the_disambiguation_table(page):
    overview = _sections(page)["Overview"]
    for name in ("Wilcoxon signed-rank", "Holm", "corrected resampled t-test", "hierarchical"):
        assert name in overview
    disambiguation = _sections(page)["Disambiguation quality (training part)"]
    assert "disambiguation AUC" in disambiguation


def test_not_applicable_and_missing_units_are_listed(page):
    sections = _sections(page)
    header, *rows = pipe_tables(sections["Not applicable"])[0]
    assert header == ["method", "dataset", "noise", "splits", "reason"]
    assert [r[:4] for r in rows] == [["nlr", "emotions", DATASETS["emotions"], "0, 1"]]
    assert "method.max_order=10" in rows[0][4]
    header, *rows = pipe_tables(sections["Missing and failed units"])[0]
    assert rows == [
        [
            "missing",
            "nlr on mirflickr5k (natural)",
            "no result and no record of its units",
            "",
        ]
    ]


def test_the_command_and_versions_are_at_the_top(page):
    import numpy
    import scipy
    import sklearn

    top = page.split("\n## ", 1)[0]
    assert f"pmlbench report {' '.join(REPORT_ARGS)}\n" in top
    assert (
        "python -m pmlbench -m +experiment=suite method=mlknn,ridge "
        "+experiment/suite_case=emotions_rate1.0,mirflickr5k" in top
    )
    versions = {row[0]: row[1] for row in pipe_tables(top)[-1][1:]}
    assert versions["numpy"] == numpy.__version__
    assert versions["scipy"] == scipy.__version__
    assert versions["scikit-learn"] == sklearn.__version__
    assert "pmlbench" in versions
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", page), "a date makes the page differ per run"
    assert str(Path.cwd()) not in page and "/tmp" not in page


def test_the_same_command_writes_the_same_files(root):
    folder = root / "docs" / "leaderboard"
    before = {p.name: p.read_bytes() for p in [root / LEADERBOARD, *sorted(folder.iterdir())]}
    assert len(before) == 1 + 7
    (folder / "cd_stale_metric.svg").write_text("<svg/>")
    proc = report_with_leaderboard(root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    after = {p.name: p.read_bytes() for p in [root / LEADERBOARD, *sorted(folder.iterdir())]}
    assert after == before


def test_from_python_and_without_figures(root, tmp_path):
    from pmlbench.report import ReportOptions, build_report
    from pmlbench.report.leaderboard import unfinished_units, write_leaderboard

    report = build_report([root / "store"], ReportOptions(plots=False, metrics=["hamming_loss"]))
    written = write_leaderboard(report, tmp_path / "board.md", ["pmlbench", "report", "x"])
    assert written == [tmp_path / "board.md"]
    text = written[0].read_text()
    assert "No reference method given" in text and "Win/tie/loss of" not in text
    assert "![" not in text and "Friedman chi2_F" in text
    assert "## average precision" not in text and "## Hamming loss ↓" in text
    units = unfinished_units(report)
    assert (
        list(units[["dataset", "level", "method", "status"]].itertuples(index=False))
        == [("emotions", DATASETS["emotions"], "nlr", "not_applicable")] * 2
    )
