"""``pmlbench report``: loading, Table 2, win/tie/loss files, failures, plots, end to end."""

from __future__ import annotations

import importlib.util
import json
from itertools import product
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pmlbench.cli.main import main as cli_main
from pmlbench.errors import PmlbenchError
from pmlbench.report import ReportOptions, build_report, load_results, prepare, write_report
from pmlbench.report.render import metric_name
from tests.helpers import METRICS, run_rows, write_run

HAS_MPL = importlib.util.find_spec("matplotlib") is not None


@pytest.fixture
def multirun(tmp_path) -> Path:
    """3 methods x 2 datasets x 2 noise rates x 3 splits with hand-chosen numbers."""
    root = tmp_path / "multirun"
    rng = np.random.default_rng(0)
    job = 0
    for dataset, rate in product(["d1", "d2"], [0.5, 1.0]):
        base = rng.uniform(0.5, 0.7, size=3)
        for method, shift in [("ref", 0.1), ("near", 0.0), ("far", -0.1)]:
            noise = rng.normal(0, 0.02, size=3) if method != "near" else np.zeros(3)
            ap = base + shift + noise
            hl = 0.5 - ap / 10
            if method == "near" and dataset == "d2":
                ap, hl = base + 0.1, 0.5 - (base + 0.1) / 10  # equal to ref's base: ties
            write_run(
                root,
                f"{job}_{method}_{dataset}",
                run_rows(dataset, rate, method, list(zip(ap, hl, strict=True))),
            )
            job += 1
    return root


def independent_wtl(root: Path, reference: str, alpha: float = 0.05) -> pd.DataFrame:
    """Win/tie/loss recomputed from the results.csv files with plain pandas + scipy."""
    frame = pd.concat([pd.read_csv(p) for p in sorted(root.rglob("results.csv"))])
    counts = {}
    for (_, _, metric), rows in frame.groupby(["dataset", "noise_rate", "metric"]):
        ref = rows[rows["method"] == reference].set_index(["seed", "split"])["value"]
        higher = bool(rows["higher_is_better"].iloc[0])
        for method in sorted(set(rows["method"]) - {reference}):
            other = rows[rows["method"] == method].set_index(["seed", "split"])["value"]
            a, b = ref.align(other, join="inner")
            d = a.to_numpy() - b.to_numpy()
            if np.all(d == 0):
                result = "tie"
            else:
                p = 0.0 if np.all(d == d[0]) else stats.ttest_rel(a, b).pvalue
                better = d.mean() > 0 if higher else d.mean() < 0
                result = ("win" if better else "loss") if p < alpha else "tie"
            key = (method, metric)
            counts.setdefault(key, {"win": 0, "tie": 0, "loss": 0})[result] += 1
    rows = [{"baseline": m, "metric": k, **v} for (m, k), v in counts.items()]
    return pd.DataFrame(rows).sort_values(["baseline", "metric"]).reset_index(drop=True)


def _without_totals(wtl: pd.DataFrame) -> pd.DataFrame:
    out = wtl[wtl["metric"] != "total"].sort_values(["baseline", "metric"])
    return out.reset_index(drop=True).astype({"win": int, "tie": int, "loss": int})


def test_report_files_and_independent_wtl(multirun, tmp_path):
    out = tmp_path / "report"
    report = build_report([multirun], ReportOptions(reference="ref", plots=False))
    write_report(report, out)
    for name in [
        "table2.md",
        "table2.tex",
        "table2.csv",
        "wtl.md",
        "wtl.tex",
        "wtl.csv",
        "summary.md",
        "stats.md",
        "unmatched.csv",
        "failures.csv",
        "ranks.csv",
    ]:
        assert (out / name).is_file(), name
    wtl = pd.read_csv(out / "wtl.csv")
    assert list(wtl.columns) == ["baseline", "metric", "win", "tie", "loss"]
    pd.testing.assert_frame_equal(_without_totals(wtl), independent_wtl(multirun, "ref"))
    totals = wtl[wtl["metric"] == "total"].set_index("baseline")
    per_metric = wtl[wtl["metric"] != "total"].groupby("baseline")[["win", "tie", "loss"]].sum()
    pd.testing.assert_frame_equal(totals[["win", "tie", "loss"]], per_metric, check_names=False)
    # wtl.tex: the same counts, a row per metric, then the total in a block of its own
    lines = (out / "wtl.tex").read_text().splitlines()
    top, first, second = (
        lines.index(r"\toprule"),
        *[i for i, line in enumerate(lines) if line == r"\midrule"],
    )
    assert lines[second + 2] == r"\bottomrule"

    def cells_of(line: str) -> list[str]:
        return [c.strip().replace(r"\_", "_") for c in line.removesuffix(r"\\").split("&")]

    baselines = cells_of(lines[top + 1])[1:]
    tex_cells = {}
    for line in [*lines[first + 1 : second], lines[second + 1]]:
        label, *values = cells_of(line)
        tex_cells.update({(b, label): v for b, v in zip(baselines, values, strict=True)})
    assert cells_of(lines[second + 1])[0] == "total"
    assert tex_cells == {
        (r.baseline, "total" if r.metric == "total" else metric_name(r.metric)): (
            f"{r.win}/{r.tie}/{r.loss}"
        )
        for r in wtl.itertuples(index=False)
    }
    # 'near' equals 'ref' exactly on d2 (2 noise levels x 2 metrics): ties, not NaN
    near = report.comparisons.comparisons.query("baseline == 'near' and dataset == 'd2'")
    assert (near["outcome"] == "tie").all() and near["pvalue"].notna().all()
    assert pd.read_csv(out / "unmatched.csv").empty
    summary = (out / "summary.md").read_text()
    assert (
        "ref is significantly better than far on 4 of 4 PML datasets in average precision"
        in summary
    )


def test_table2_means_std_and_bold_ties(multirun, tmp_path):
    report = build_report([multirun], ReportOptions(reference="ref", plots=False))
    table = report.table2
    raw = pd.concat([pd.read_csv(p) for p in multirun.rglob("results.csv")])
    sel = raw[
        (raw["dataset"] == "d1")
        & (raw["noise_rate"] == 0.5)
        & (raw["method"] == "far")
        & (raw["metric"] == "average_precision")
    ]["value"]
    row = table[
        (table["dataset"] == "d1")
        & (table["level"] == "rate=0.5")
        & (table["method"] == "far")
        & (table["metric"] == "average_precision")
    ].iloc[0]
    assert row["mean"] == pytest.approx(sel.mean())
    assert row["std"] == pytest.approx(np.std(sel, ddof=1))
    # on d2, ref and near have equal means: both bold, in both directions
    for metric in METRICS:
        d2 = table[(table["dataset"] == "d2") & (table["metric"] == metric)]
        best = d2[d2["best"]]
        assert set(best["method"]) == {"ref", "near"}, metric
    # d1: ref best for AP (higher), and for Hamming loss (lower)
    d1 = table[(table["dataset"] == "d1") & table["best"]]
    assert set(d1["method"]) == {"ref"}
    out = tmp_path / "r"
    write_report(report, out)
    tex = (out / "table2.tex").read_text()
    assert all(s in tex for s in (r"\toprule", r"\midrule", r"\bottomrule", r"\textbf{"))
    md = (out / "table2.md").read_text()
    assert "| d1 | rate=0.5 | **" in md and "## average precision ↑" in md
    assert "## Hamming loss ↓" in md


def test_unmatched_split_is_reported(multirun, tmp_path):
    # drop split 2 of 'far' on d1 at rate 0.5
    run = next(p for p in multirun.iterdir() if p.name.endswith("_far_d1"))
    frame = pd.read_csv(run / "results.csv")
    frame[frame["split"] != 2].to_csv(run / "results.csv", index=False)
    report = build_report([multirun], ReportOptions(reference="ref", plots=False))
    unmatched = report.comparisons.unmatched
    assert set(
        zip(
            unmatched["baseline"],
            unmatched["dataset"],
            unmatched["level"],
            unmatched["split"],
            unmatched["only_in"],
            strict=True,
        )
    ) == {("far", "d1", "rate=0.5", 2, "ref")}
    assert any("1 splits only in ref" in w for w in report.warnings)
    out = tmp_path / "r"
    write_report(report, out)
    assert len(pd.read_csv(out / "unmatched.csv")) == 2  # two metrics
    assert "only in ref" in (out / "summary.md").read_text()
    pd.testing.assert_frame_equal(
        _without_totals(pd.read_csv(out / "wtl.csv")), independent_wtl(multirun, "ref")
    )


def test_failures_and_incomplete_runs_are_listed(multirun, tmp_path):
    garbled = multirun / "99_far_d3"
    garbled.mkdir()
    (garbled / "units.json").write_text('{"units": [')
    (garbled / "failed.json").write_text(json.dumps({"error": "no writer makes this file"}))
    logged = multirun / "98_ref_d3"
    logged.mkdir()
    (logged / "units.json").write_text(
        json.dumps(
            {
                "units": [
                    {
                        "key": "k",
                        "split": 1,
                        "status": "failed",
                        "error": "RuntimeError: no convergence",
                    },
                    {"key": "k2", "split": 0, "status": "computed"},
                ]
            }
        )
    )
    (multirun / "97_near_d3" / ".hydra").mkdir(parents=True)
    loaded = load_results([multirun])
    errors = list(loaded.failures["error"])
    assert errors[0] == "RuntimeError: no convergence" and errors[1].startswith("unreadable:")
    assert len(errors) == 2  # a failed.json is no pmlbench file and is not read
    assert loaded.incomplete == [multirun / "97_near_d3"]
    report = build_report([multirun], ReportOptions(plots=False))
    out = tmp_path / "r"
    write_report(report, out)
    assert len(pd.read_csv(out / "failures.csv")) == 2
    summary = (out / "summary.md").read_text()
    assert "RuntimeError: no convergence" in summary and "incomplete run" in summary


def test_store_failures_name_the_unit_with_its_parameters(tmp_path):
    from pmlbench.runner.store import ResultStore
    from pmlbench.runner.units import content_key

    store = ResultStore(tmp_path / "store")
    rows = run_rows("d1", 1.0, "ref", [(0.6, 0.1)])
    unit = {"schema": 2, "dataset": {"name": "d1"}, "metrics": [r["metric"] for r in rows]}
    unit["split"] = 0
    done = content_key(unit)
    store.save(  # a record as strict as a run's (report readers check it as a run does)
        {
            "key": done,
            "status": "done",
            "unit": unit,
            "records": rows,
            "split": {"index": 0, "values": {r["metric"]: r["value"] for r in rows}},
            "dataset": {"name": "d1"},
            "noise": "uniform",
        }
    )
    store.save_outcome(
        {
            "key": "bad",
            "status": "failed",
            "unit": {
                "dataset": {"name": "d1"},
                "noise": {"name": "uniform", "rate": 1.0},
                "method": {"name": "mlknn", "k": 3, "grid": [1, 2]},
                "seed": 0,
                "split": 1,
            },
            "error": "ValueError: boom",
        }
    )
    loaded = load_results([tmp_path / "store"])
    assert loaded.records["source"].tolist() == [str(tmp_path / "store" / f"{done}.json")] * 2
    (failure,) = loaded.failures.to_dict(orient="records")
    assert {k: failure[k] for k in ("path", "unit", "error", "status")} == {
        "path": str(tmp_path / "store" / "bad.failed.json"),
        # a list-valued parameter is a column too (JSON text), as in the finished units' rows
        "unit": (
            "mlknn on d1 (uniform, noise_rate=1.0, param_k=3, param_grid=[1,2]), seed 0, split 1"
        ),
        "error": "ValueError: boom",
        "status": "failed",
    }


def test_method_configurations_get_distinct_labels(tmp_path):
    rows = []
    for k, shift in [(5, 0.0), (7, 0.05)]:
        rows += run_rows(
            "d1",
            1.0,
            "mlknn",
            [(0.6 + shift + i / 100, 0.1) for i in range(3)],
            params={"param_k": k},
        )
    write_run(tmp_path, "run", rows)
    prepared = prepare(load_results([tmp_path]).records)
    assert prepared.methods == ["mlknn[k=5]", "mlknn[k=7]"]
    # neither is ML-kNN's default (k=10): the bare name is ambiguous
    with pytest.raises(PmlbenchError, match="configurations"):
        build_report([tmp_path], ReportOptions(reference="mlknn", plots=False))
    # beside the default (k tuned over its default grid, which its column holds), the
    # default keeps the bare name: --reference names it
    default = run_rows("d1", 1.0, "mlknn", [(0.5, 0.1)] * 3, {"param_k": "[5,10,15,20]"})
    for row in default:
        row["tuned"] = "k=15"
    write_run(tmp_path, "default", default)
    report = build_report([tmp_path], ReportOptions(reference="mlknn", plots=False))
    assert report.prepared.methods == ["mlknn", "mlknn[k=5,tuning=off]", "mlknn[k=7,tuning=off]"]


def test_bad_inputs_are_one_line_errors(multirun, tmp_path):
    with pytest.raises(PmlbenchError, match="does not exist"):
        load_results([tmp_path / "nope"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(PmlbenchError, match="no results.csv"):
        load_results([tmp_path / "empty"])
    # the same unit twice with different numbers
    clash = tmp_path / "clash"
    write_run(clash, "a", run_rows("d1", 1.0, "m", [(0.5, 0.1), (0.6, 0.2)]))
    write_run(clash, "b", run_rows("d1", 1.0, "m", [(0.5, 0.1), (0.7, 0.2)]))
    with pytest.raises(PmlbenchError, match="conflicting results"):
        build_report([clash], ReportOptions(plots=False))
    # mixed conventions need a filter
    mixed = tmp_path / "mixed"
    write_run(mixed, "a", run_rows("d1", 1.0, "m", [(0.5, 0.1), (0.6, 0.2)]))
    other = pd.DataFrame(run_rows("d1", 1.0, "n", [(0.5, 0.1), (0.6, 0.2)]))
    other["convention"] = "sklearn"
    (mixed / "b").mkdir()
    other.to_csv(mixed / "b" / "results.csv", index=False)
    with pytest.raises(PmlbenchError, match="--where convention="):
        build_report([mixed], ReportOptions(plots=False))
    assert build_report([mixed], ReportOptions(plots=False, where={"convention": "zhang"}))
    with pytest.raises(PmlbenchError, match="no results for metrics"):
        build_report([multirun], ReportOptions(plots=False, metrics=["coverage"]))


def test_cli(multirun, tmp_path, capsys):
    out = tmp_path / "cli"
    code = cli_main(
        [
            "report",
            str(multirun),
            "--out",
            str(out),
            "--reference",
            "ref",
            "--correction",
            "holm",
            "--test",
            "corrected",
            "--no-plots",
            "--metrics",
            "average_precision",
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "average precision" in printed and "win/tie/loss of ref" in printed
    # the last line names the page to open (issue 35 item 7)
    assert f"files into {out}; open {out / 'report.html'}" in printed
    wtl = pd.read_csv(out / "wtl.csv")
    assert set(wtl["metric"]) == {"average_precision", "total"}
    assert (
        cli_main(
            ["report", str(multirun), "--out", str(out), "--reference", "nobody", "--no-plots"]
        )
        == 2
    )
    assert "reference method 'nobody'" in capsys.readouterr().err


@pytest.mark.skipif(not HAS_MPL, reason="matplotlib (the plots extra) is not installed")
def test_plots_cd_noise_and_sensitivity(multirun, tmp_path):
    # a one-at-a-time sweep of lambda1 with lambda2 fixed, and one point of lambda2
    for dataset in ["d1", "d2"]:
        rows = []
        for lam in [0.001, 0.1, 10.0]:
            rows += run_rows(
                dataset,
                1.0,
                "pml3er",
                [(0.5 + np.log10(lam) / 100, 0.1)] * 2,
                params={"param_lambda1": lam, "param_lambda2": 1.0},
            )
        rows += run_rows(
            dataset,
            1.0,
            "pml3er",
            [(0.55, 0.1)] * 2,
            params={"param_lambda1": 1.0, "param_lambda2": 100.0},
        )
        write_run(multirun, f"sens_{dataset}", rows)
    report = build_report([multirun], ReportOptions(metrics=["average_precision"]))
    written = write_report(report, tmp_path / "r")
    names = {p.name for p in written}
    assert {
        "cd_average_precision.svg",
        "cd_average_precision.png",
        "noise_average_precision.svg",
        "noise_average_precision.png",
        "sensitivity_pml3er_lambda1_average_precision.svg",
    } <= names
    assert not any("lambda2" in n for n in names)  # two values only: not a sweep
    svg = (tmp_path / "r" / "plots" / "cd_average_precision.svg").read_text()
    # bars from the pairwise Wilcoxon-Holm tests by default: no Nemenyi CD bar
    assert "CD = " not in svg and "ref" in svg
    # the figure carries no title: its caption (which test decides the bars) is beside it
    captions = (tmp_path / "r" / "plots" / "captions.md").read_text()
    assert "Wilcoxon" in captions and "Wilcoxon" not in svg
    options = ReportOptions(metrics=["average_precision"], posthoc="nemenyi")
    write_report(build_report([multirun], options), tmp_path / "n")
    svg = (tmp_path / "n" / "plots" / "cd_average_precision.svg").read_text()
    assert "CD = " in svg and "ref" in svg


@pytest.mark.slow
def test_end_to_end_real_runs(tmp_path):
    """pml3er and mlknn on genbase at two noise rates, reported and recomputed independently."""
    from pmlbench.runner.run import run_config

    root = tmp_path / "multirun"
    for job, (method, rate) in enumerate(product(["pml3er", "mlknn"], [0.5, 1.0])):
        config = {
            "dataset": {"name": "genbase"},
            "noise": {"name": "uniform", "rate": rate},
            "method": {"name": method},
            "tune": {"grid": {}},
            "metrics": ["average_precision", "hamming_loss", "ranking_loss"],
            "metric_convention": "zhang",
            "seed": 0,
            "protocol": {"n_splits": 3},
        }
        run_config(config, root / f"{job}_{method}_genbase", quiet=True)
    out = tmp_path / "report"
    assert (
        cli_main(
            [
                "report",
                str(root),
                "--out",
                str(out),
                "--reference",
                "pml3er",
                "--no-plots",
                "--quiet",
            ]
        )
        == 0
    )
    wtl = pd.read_csv(out / "wtl.csv")
    pd.testing.assert_frame_equal(_without_totals(wtl), independent_wtl(root, "pml3er"))
    assert int(wtl[wtl["metric"] == "total"][["win", "tie", "loss"]].sum(axis=1).iloc[0]) == 6
    table = pd.read_csv(out / "table2.csv")
    assert set(table["level"]) == {"rate=0.5", "rate=1"}
    assert len(table) == 2 * 2 * 3


def _mixed_noise_runs(root: Path) -> None:
    """d1 with uniform noise at two rates, without noise and with a second parameterised
    model; d3 with natural candidates (no noise columns at all), two methods each."""

    def rows(dataset, method, noise, params, shift):
        out = run_rows(dataset, 1.0, method, [(0.6 + shift + 0.01 * s, 0.1) for s in range(3)])
        for row in out:
            del row["noise_rate"]
            row.update({"noise": noise, **params})
        return out

    levels = [
        ("uniform", {"noise_rate": 0.5}),
        ("uniform", {"noise_rate": 1.0}),
        ("none", {}),
        ("cooccurrence", {"noise_rate": 1.0, "noise_smoothing": 0.01}),
    ]
    job = 0
    for method, shift in [("a", 0.05), ("b", 0.0)]:
        for noise, params in levels:
            write_run(root, f"{job}_{method}_d1", rows("d1", method, noise, params, shift))
            job += 1
        write_run(root, f"{job}_{method}_d3", rows("d3", method, "natural", {}, shift))
        job += 1


def test_report_mixes_noise_models_and_natural_candidates(tmp_path):
    """Each noise model with its own parameters is a level of its own; natural has none."""
    root = tmp_path / "mixed"
    _mixed_noise_runs(root)
    report = build_report([root], ReportOptions(reference="a", plots=HAS_MPL, bayesian=True))
    written = write_report(report, tmp_path / "out")
    p = report.prepared
    assert p.blocks == [
        ("d1", "cooccurrence(rate=1)"),
        ("d1", "none"),
        ("d1", "uniform(rate=0.5)"),
        ("d1", "uniform(rate=1)"),
        ("d3", "natural"),
    ]
    assert p.level_noise["uniform(rate=1)"] == "uniform" and p.level_noise["natural"] == "natural"
    assert p.level_values["natural"] == {} and p.level_values["none"] == {}
    table = pd.read_csv(tmp_path / "out" / "table2.csv")
    raw = pd.concat([pd.read_csv(f) for f in sorted(root.rglob("results.csv"))])
    assert len(table) == len(p.blocks) * 2 * 2  # blocks x methods x metrics
    assert table["n"].eq(3).all()
    expected = raw.groupby(["dataset", "method", "metric"])["value"].mean()
    for row in table.itertuples(index=False):
        assert row.mean == pytest.approx(expected[(row.dataset, row.method, row.metric)])
    wtl = pd.read_csv(tmp_path / "out" / "wtl.csv")
    assert wtl.query("metric == 'total'")[["win", "tie", "loss"]].sum(axis=1).item() == 10
    assert (tmp_path / "out" / "report.html").is_file()
    assert (tmp_path / "out" / "bayes_wtl.csv").is_file()
    if HAS_MPL:
        # uniform's two rates make a curve; the other models are not drawn on its axis
        assert {"noise_average_precision.svg"} <= {f.name for f in written}
        svg = (tmp_path / "out" / "plots" / "noise_average_precision.svg").read_text()
        assert "d1" in svg and "cooccurrence" not in svg


def test_noise_levels_are_labelled_by_the_parameters_that_differ(tmp_path):
    """The suite's labels: uniform at three rates with one rounding rule reads ``rate=0.5``;
    a model at a single level keeps every parameter, so nothing is lost on its own."""

    def runs(root: Path, rates: list[float]) -> None:
        job = 0
        for method, shift in [("a", 0.05), ("b", 0.0)]:
            for rate in rates:
                rows = run_rows(
                    "d1", rate, method, [(0.6 + shift + 0.01 * s, 0.1) for s in range(3)]
                )
                for row in rows:
                    row["noise_rounding"] = "half_up"
                write_run(root, f"{job}_{method}_d1", rows)
                job += 1
            natural = run_rows("d2", 1.0, method, [(0.5 + shift, 0.1) for _ in range(3)])
            for row in natural:
                del row["noise_rate"]
                row["noise"] = "natural"
            write_run(root, f"{job}_{method}_d2", natural)
            job += 1

    runs(tmp_path / "three", [0.5, 1.0, 2.0])
    report = build_report([tmp_path / "three"], ReportOptions(reference="a", plots=False))
    assert report.prepared.blocks == [
        ("d1", "rate=0.5"),
        ("d1", "rate=1"),
        ("d1", "rate=2"),
        ("d2", "natural"),
    ]
    assert report.prepared.level_values["rate=2"] == {"rate": 2.0}
    runs(tmp_path / "one", [1.0])
    report = build_report([tmp_path / "one"], ReportOptions(reference="a", plots=False))
    # one level reads as it does beside others (issue 35 item 7): the defaults stay unsaid
    assert report.prepared.blocks == [("d1", "rate=1"), ("d2", "natural")]
    write_report(report, tmp_path / "out1")
    assert "rounding" not in (tmp_path / "out1" / "table2.tex").read_text(encoding="utf-8")
    # a parameter off its default is named
    for path in (tmp_path / "one").rglob("results.csv"):
        frame = pd.read_csv(path)
        frame.loc[frame["dataset"] == "d1", "noise_rounding"] = "floor"
        frame.to_csv(path, index=False)
    report = build_report([tmp_path / "one"], ReportOptions(reference="a", plots=False))
    assert report.prepared.blocks == [("d1", "rate=1, rounding=floor"), ("d2", "natural")]


def test_mixed_noise_report_of_real_runs(tmp_path):
    """The reproduction of issue 12: genbase with uniform noise and without, mlknn and ridge."""
    from pmlbench.runner.run import run_config

    root = tmp_path / "multirun"
    for job, (method, noise) in enumerate(
        product(["mlknn", "ridge"], [{"name": "uniform", "rate": 1.0}, {"name": "none"}])
    ):
        config = {
            "dataset": {"name": "genbase"},
            "noise": noise,
            "method": {"name": method},
            "tune": {"grid": {}},
            "metrics": ["average_precision", "hamming_loss"],
            "metric_convention": "zhang",
            "seed": 0,
            "protocol": {"n_splits": 2},
        }
        run_config(config, root / f"{job}_{method}_genbase", quiet=True)
    out = tmp_path / "report"
    args = ["report", str(root), "--out", str(out), "--reference", "mlknn", "--quiet"]
    assert cli_main([*args, *([] if HAS_MPL else ["--no-plots"])]) == 0
    table = pd.read_csv(out / "table2.csv")
    levels = sorted(set(table["level"]))
    assert len(levels) == 2 and levels[0] == "none" and levels[1].startswith("uniform(rate=1")
    assert len(table) == 2 * 2 * 2
    assert pd.read_csv(out / "wtl.csv").query("metric == 'total'")["tie"].notna().all()


_NO_MATPLOTLIB = """
import importlib.abc, sys

class Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "{module}" or name.startswith("{module}."):
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, Missing())
from pmlbench.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def _without(module: str, args: list[str], cwd: Path):
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-c", _NO_MATPLOTLIB.format(module=module), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_report_without_matplotlib_writes_the_tables(multirun, tmp_path):
    out = tmp_path / "report"
    done = _without("matplotlib", ["report", str(multirun), "--out", str(out), "--quiet"], tmp_path)
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "matplotlib" in line]
    assert warnings == [
        "warning: figures skipped: they need matplotlib: pip install 'pmlbench[plots]' "
        "(or pass --no-plots); the tables are written"
    ]
    assert "Traceback" not in done.stderr
    for name in ["table2.md", "table2.csv", "stats.md", "summary.md", "report.html"]:
        assert (out / name).is_file(), name
    assert not (out / "plots").exists()
    assert "pip install 'pmlbench[plots]'" in (out / "summary.md").read_text()


def test_parquet_holds_the_records_the_report_used(multirun, tmp_path):
    pytest.importorskip("pyarrow")
    out = tmp_path / "report"
    args = ["report", str(multirun), "--out", str(out), "--format", "parquet"]
    assert cli_main([*args, "--no-plots", "--no-html", "--quiet"]) == 0
    records = pd.read_parquet(out / "results.parquet")
    prepared = prepare(load_results([multirun]).records)
    pd.testing.assert_frame_equal(records, prepared.records, check_dtype=False)
    raw = pd.concat([pd.read_csv(f) for f in sorted(multirun.rglob("results.csv"))])
    assert len(records) == len(raw)
    assert {"level", "method_name", "source"} <= set(records.columns)
    assert records["value"].sum() == pytest.approx(raw["value"].sum())


def test_parquet_of_mixed_column_types(tmp_path):
    """A parameter that is a number for one method and text for another still writes."""
    pytest.importorskip("pyarrow")
    root = tmp_path / "runs"
    values = [(0.6, 0.1), (0.62, 0.11)]
    write_run(root, "0_a", run_rows("d1", 1.0, "a", values, params={"param_solver": 3}))
    write_run(root, "1_b", run_rows("d1", 1.0, "b", values, params={"param_solver": "qr"}))
    out = tmp_path / "report"
    args = ["report", str(root), "--out", str(out), "--format", "parquet"]
    assert cli_main([*args, "--no-plots", "--no-html", "--quiet"]) == 0
    records = pd.read_parquet(out / "results.parquet")
    assert sorted(set(records["param_solver"].astype(str))) == ["3", "qr"]


def test_parquet_without_pyarrow_is_a_one_line_error(multirun, tmp_path):
    out = tmp_path / "report"
    done = _without(
        "pyarrow",
        ["report", str(multirun), "--out", str(out), "--format", "parquet", "--no-plots"],
        tmp_path,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "error: --format parquet needs pyarrow: pip install 'pmlbench[parquet]'"
    )
    assert not out.exists()  # checked before any work


@pytest.mark.parametrize(
    "options, message",
    [
        ({"alpha": 1.5}, "--alpha must be a number in (0, 1), got 1.5"),
        ({"test": "welch"}, "--test must be one of 'ttest', 'corrected', got 'welch'"),
        ({"blocks": "noise"}, "--blocks must be one of 'dataset', 'level', got 'noise'"),
        (
            {"leaderboard_test": "x"},
            "--leaderboard-test must be one of 'ttest', 'corrected', got 'x'",
        ),
        ({"digits": 11}, "--digits must be an integer in [0, 10], got 11"),
        ({"rope": -0.1}, "--rope must be a finite width >= 0 on the metric's scale, got -0.1"),
        ({"formats": ("parquet", "csv")}, "--format must be one of 'parquet', got 'csv'"),
        (
            {"reference": "a", "hierarchical": True},
            "--hierarchical is a Bayesian comparison: add --bayesian",
        ),
    ],
)
def test_report_options_name_the_option_the_value_and_the_fix(options, message):
    """ReportOptions is checked by pmlbench.core.parameters' constraints: one line naming the
    option as the command spells it, the value given and what it may be."""
    with pytest.raises(PmlbenchError) as raised:
        ReportOptions(**options)
    assert str(raised.value) == message


def test_repeated_where_filters_on_one_column_keep_either_value(multirun, tmp_path, capsys):
    """``--where method=ref --where method=far`` kept only the last filter (far alone)."""
    from pmlbench.report.prepare import apply_filters

    records = load_results([multirun]).records
    both = apply_filters(records, {"method": ["ref", "far"]})
    assert sorted(both["method"].unique()) == ["far", "ref"]
    narrowed = apply_filters(records, {"method": ["ref", "far"], "dataset": "d1"})
    assert sorted(narrowed["method"].unique()) == ["far", "ref"]
    assert narrowed["dataset"].unique().tolist() == ["d1"]
    out = tmp_path / "two"
    argv = ["report", str(multirun), "--out", str(out), "--no-plots", "--where", "method=ref"]
    assert cli_main([*argv, "--where", "method=far"]) == 0
    shown = set(pd.read_csv(out / "table2.csv")["method"])
    assert shown == {"ref", "far"}
    with pytest.raises(PmlbenchError, match="--where method=x or method=y"):
        apply_filters(records, {"method": ["x", "y"]})


def test_a_manifest_cannot_delete_through_a_linked_folder(tmp_path):
    """``--out rep`` with ``rep/plots`` a link to another folder and a manifest listing
    ``plots/secret.txt`` deleted that folder's file: every path is resolved first and must
    lie inside ``--out``."""
    from pmlbench.report.outdir import MANIFEST, replace_previous

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "secret.txt").write_text("keep")
    out = tmp_path / "rep"
    (out / "figures").mkdir(parents=True)
    (out / "plots").symlink_to(elsewhere, target_is_directory=True)
    (out / "figures" / "old.svg").write_text("stale")
    (out / MANIFEST).write_text(
        '{"files": ["plots/secret.txt", "figures/old.svg", "figures/../../elsewhere/secret.txt"]}'
    )
    replace_previous(out, [])
    assert (elsewhere / "secret.txt").read_text() == "keep"
    assert not (out / "figures" / "old.svg").exists()  # its own stale file still goes


def test_protocol_settings_read_empty_columns_without_a_pandas_warning():
    """Issue 35 item 7: results.csv's ``tuned`` column read back as all-NaN floats (no
    method tuned) made ``fillna("")`` raise a Pandas4Warning; bipartition descriptions
    become one word a shell takes unquoted."""
    import warnings

    from pmlbench.report.prepare import protocol_settings

    records = pd.DataFrame(
        {
            "tuned": [np.nan, np.nan, np.nan],
            "bipartition": ["score >= 0.5, top label if empty", "top_k: k=2 (mean 2.4)", "x"],
        }
    )
    records.loc[2, "bipartition"] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        settings = protocol_settings(records)
    assert list(settings["tuning"]) == ["off"] * 3
    assert list(settings["bipartition"]) == ["threshold+nonempty", "top_k", ""]


def test_one_average_rank_per_report(tmp_path):
    """Issue 35 item 4: the average rank is defined once (stats.md, the page) and every place
    shows the Friedman test's numbers; the Nemenyi CD is printed only where Nemenyi draws the
    diagrams' bars; a Friedman test with all blocks alike prints no ``inf``."""
    from pmlbench.report.across import rank_definition
    from pmlbench.report.html import page_data

    root = tmp_path / "runs"
    # two datasets x two noise levels: per row a wins three of four rows, per dataset
    # (the default blocks, means over levels) a and b win one dataset each
    values = {
        ("d1", 0.5): (0.60, 0.50),
        ("d1", 1.0): (0.60, 0.50),
        ("d2", 0.5): (0.60, 0.50),
        ("d2", 1.0): (0.10, 0.50),
    }
    for job, ((dataset, rate), (a, b)) in enumerate(values.items()):
        for method, v in (("a", a), ("b", b)):
            rows = run_rows(dataset, rate, method, [(v + s / 1000, 0.1) for s in range(3)])
            write_run(root, f"{job}_{method}_{dataset}_{rate}", rows)
    report = build_report([root], ReportOptions(reference="a", plots=False))
    r = report.ranks["average_precision"]
    assert dict(zip(r.friedman.methods, r.friedman.average_ranks, strict=True)) == {
        "a": 1.5,
        "b": 1.5,
    }
    data = page_data(report)
    (row,) = [x for x in data["ranks"] if x[0] == 0]
    assert row[1] == [1.5, 1.5] and row[2] == 2 and row[5] is None  # no CD: Wilcoxon bars
    assert data["rankUnit"] == "datasets"
    out = tmp_path / "out"
    write_report(report, out)
    stats = (out / "stats.md").read_text(encoding="utf-8")
    assert rank_definition("dataset") in stats and "Nemenyi CD" not in stats
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "Average ranks: a 1.50, b 1.50" in summary
    page = (out / "report.html").read_text(encoding="utf-8")
    assert rank_definition("dataset") in page.replace("&#x27;", "'")
    # Table 2's footer reads the Friedman ranks (D.ranks), not a mean over its rows
    assert "average rank over " in page and 'rows)</td>"' not in page
    # with --posthoc nemenyi the CD is the diagrams' and is printed
    nemenyi = build_report([root], ReportOptions(reference="a", plots=False, posthoc="nemenyi"))
    assert page_data(nemenyi)["ranks"][0][5] == pytest.approx(r.critical_difference)
    write_report(nemenyi, tmp_path / "nemenyi")
    assert "Nemenyi CD = " in (tmp_path / "nemenyi" / "stats.md").read_text(encoding="utf-8")
    # every block ranks a first: F_F would be inf
    same = tmp_path / "same"
    for dataset in ("d1", "d2", "d3"):
        for method, v in (("a", 0.6), ("b", 0.5)):
            rows = run_rows(dataset, 1.0, method, [(v + s / 1000, 0.1) for s in range(3)])
            write_run(same, f"{method}_{dataset}", rows)
    alike = build_report([same], ReportOptions(reference="a", plots=False))
    write_report(alike, tmp_path / "alike")
    for name in ("summary.md", "stats.md"):
        text = (tmp_path / "alike" / name).read_text(encoding="utf-8")
        assert "inf" not in text.replace("info", "") and "F_F unbounded" in text


def test_the_provenance_of_a_filtered_report_counts_only_the_results_it_shows(multirun):
    """With ``--where dataset=d1`` the report's provenance (the leaderboard's "from results
    computed by" and its files per command) names the d1 runs only, not every file read."""
    from pmlbench.report.provenance import provenance

    d1 = sorted(p for p in multirun.rglob("results.csv") if "_d1" in p.parent.name)
    assert len(d1) == 6  # 3 methods x 2 noise rates
    report = build_report([multirun], ReportOptions(where={"dataset": "d1"}, plots=False))
    assert set(report.loaded.records["dataset"]) == {"d1"}
    assert provenance(report.loaded, ["pmlbench"])["sources"] == len(d1)
    everything = build_report([multirun], ReportOptions(plots=False))
    assert provenance(everything.loaded, ["pmlbench"])["sources"] == 2 * len(d1)
