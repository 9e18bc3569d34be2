"""A new user's first hour: a sweep run twice and a dry run, then the results loaded and
reported as they were computed (each unit once, no unfinished run invented), typos at the top
level answered with a did-you-mean, and a sweep that ends with its summary."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from pmlbench.api import load_results
from pmlbench.report import load_results as report_sources
from pmlbench.runner.format import read_units

SWEEP = [
    "-m",
    "method=mlknn",
    "dataset=genbase",
    "noise.rate=0.5,1.0",
    "protocol.n_splits=2",
    "cache_dir=null",
]
N_UNITS = 2 * 2  # noise rates x splits
N_METRICS = 7


def pmlbench(cwd: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pmlbench", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def reruns(tmp_path_factory) -> dict[str, Path | subprocess.CompletedProcess]:
    """The README's sweep run once, again into another directory, again into the first one,
    and as a dry run, all under one multirun directory with one result store."""
    root = tmp_path_factory.mktemp("first_hour")
    runs, store = root / "multirun", root / "store"
    common = [*SWEEP, f"results_store={store}"]
    first = pmlbench(root, *common, f"hydra.sweep.dir={runs / 'a'}")
    assert first.returncode == 0, first.stdout + first.stderr
    other = pmlbench(root, *common, f"hydra.sweep.dir={runs / 'b'}")
    assert other.returncode == 0, other.stdout + other.stderr
    same = pmlbench(root, *common, f"hydra.sweep.dir={runs / 'a'}")
    assert same.returncode == 0, same.stdout + same.stderr
    dry = pmlbench(root, *common, "dry_run=true", f"hydra.sweep.dir={runs / 'dry'}")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    single_dry = pmlbench(
        root,
        *common[1:3],
        f"results_store={store}",
        "dry_run=true",
        f"hydra.run.dir={runs / 'single_dry'}",
    )
    assert single_dry.returncode == 0, single_dry.stdout + single_dry.stderr
    return {
        "root": root,
        "runs": runs,
        "store": store,
        "first": first,
        "other": other,
        "same": same,
    }


def _unit_ids(records: pd.DataFrame) -> pd.Series:
    return records[["noise_rate", "seed", "split", "metric"]].astype(str).agg("/".join, axis=1)


# --------------------------------------------------------------------------- item 2


def test_load_results_after_reruns_has_each_unit_and_metric_once(reruns):
    runs, store = reruns["runs"], reruns["store"]
    # the rerun into another directory is a second copy of every row on disk
    assert len(sorted(runs.rglob("results.csv"))) == 4
    assert len(report_sources([runs]).records) == 2 * N_UNITS * N_METRICS
    for paths in ([runs], [store], [store, runs], [runs, store], [runs / "a", runs / "a"]):
        records = load_results(paths)
        assert len(records) == N_UNITS * N_METRICS, paths
        assert not _unit_ids(records).duplicated().any(), paths
    # the rows kept are those of the first path read, values unchanged
    from_store = load_results([store, runs], source=True)
    assert from_store["source"].str.startswith(str(store)).all()
    a = load_results(runs / "a").sort_values(["noise_rate", "split", "metric"])
    s = from_store.sort_values(["noise_rate", "split", "metric"])
    assert a["value"].to_numpy().tolist() == s["value"].to_numpy().tolist()


def test_rows_without_a_unit_list_are_the_same_unit_when_their_columns_agree(reruns, tmp_path):
    one = sorted((reruns["runs"] / "a").glob("*/results.csv"))[0]
    for name in ("x", "y"):
        (tmp_path / name).mkdir()
        frame = pd.read_csv(one)
        frame["fit_seconds"] = frame["fit_seconds"] * (2 if name == "y" else 1)  # timed again
        frame.to_csv(tmp_path / name / "results.csv", index=False)
    assert len(load_results(tmp_path)) == 2 * N_METRICS
    # a different value in the metric's range is a different row (pmlbench report names the
    # conflict); a value outside it would be left out as damaged
    frame = pd.read_csv(tmp_path / "y" / "results.csv")
    frame.loc[0, "value"] = 0.75 if frame.loc[0, "value"] == 0.25 else 0.25
    frame.to_csv(tmp_path / "y" / "results.csv", index=False)
    assert len(load_results(tmp_path)) == 2 * N_METRICS + 1


# --------------------------------------------------------------------------- item 3


def test_a_dry_run_leaves_nothing_a_report_counts_as_unfinished(reruns, tmp_path):
    runs = reruns["runs"]
    assert list((runs / "dry").rglob("dry_run.json")), "the sweep's dry run wrote no plan"
    assert (runs / "single_dry" / "dry_run.json").exists()
    loaded = report_sources([runs])
    assert loaded.incomplete == []
    proc = pmlbench(reruns["root"], "report", str(runs), "--out", str(tmp_path / "report"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "incomplete" not in proc.stdout + proc.stderr
    # a run that really stopped before writing anything is still reported
    (runs / "broken" / ".hydra").mkdir(parents=True)
    assert report_sources([runs]).incomplete == [runs / "broken"]


# --------------------------------------------------------------------------- item 6


def test_a_sweep_ends_with_its_summary_and_the_next_command(reruns):
    first, again = reruns["first"].stdout, reruns["same"].stdout
    runs, store = reruns["runs"], reruns["store"]
    assert (
        f"sweep done: 2 jobs, {N_UNITS} units: {N_UNITS} computed, 0 reused from the result "
        "store, 0 declined (n/a), 0 failed" in first
    )
    assert (
        f"sweep done: 2 jobs, {N_UNITS} units: 0 computed, {N_UNITS} reused from the result "
        "store, 0 declined (n/a), 0 failed" in again
    )
    for out in (first, again):
        assert f"results: {runs / 'a'} (store: {store})" in " ".join(out.split())
        assert f"next: pmlbench report {runs / 'a'}" in " ".join(out.split())
        assert " cached" not in out  # one vocabulary
    # per-job lines use the same words
    assert "2 reused" in again
    for entry in read_units(next((runs / "a").glob("0_*"))):
        assert entry["status"] == "cached"  # the file format keeps its status names


# --------------------------------------------------------------------------- item 5


def test_a_bare_command_prints_usage_and_writes_nothing(tmp_path):
    proc = pmlbench(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("pmlbench: benchmark partial multi-label learning")
    assert "Usage:" in proc.stdout and "pmlbench report" in proc.stdout
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["reprot", "outputs"], "unknown command 'reprot'; did you mean 'report'?"),
        (["lst"], "unknown command 'lst'; did you mean 'list'?"),
        (["check_plugin", "x"], "unknown command 'check_plugin'; did you mean 'check-plugin'?"),
        (["methd=mlknn"], "unknown config key 'methd'; did you mean method=mlknn?"),
        (["datset=genbase"], "unknown config key 'datset'; did you mean dataset=genbase?"),
        (["nosie.rate=2"], "unknown config key 'nosie.rate'; did you mean noise.rate=2?"),
        (["methd.k=5"], "unknown config key 'methd.k'; did you mean method.k=5?"),
        (["protocol.nslits=3"], "unknown config key 'protocol.nslits'; did you mean "),
    ],
)
def test_top_level_typos_get_a_did_you_mean(argv, message, tmp_path, monkeypatch, capsys):
    from pmlbench.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    out = capsys.readouterr()
    (line,) = [ln for ln in (out.out + out.err).splitlines() if ln.strip()]
    assert line.startswith("error: ") and message in line
    assert "missing EQUAL" not in line
    if "config key" in message and "protocol" not in message:
        known = line.partition("known keys: ")[2]
        assert {"method", "dataset", "noise", "protocol", "seed"} <= set(
            known.split(" (")[0].split(", ")
        )
    assert list(tmp_path.iterdir()) == []


def test_overrides_still_run_through_python_m_and_the_title_shows_what_changed(tmp_path):
    proc = pmlbench(
        tmp_path,
        "method=ridge",
        "dataset=genbase",
        "protocol.n_splits=1",
        "seed=3",
        "noise.rate=1.0",  # the default: not worth a word
        "results_store=null",
        "cache_dir=null",
        f"hydra.run.dir={tmp_path / 'run'}",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "run" / "results.csv").exists()
    text = " ".join(proc.stdout.split())
    assert "ridge on genbase (protocol.n_splits=1, seed=3, noise uniform, zhang convention)" in text
    tuned = pd.read_csv(tmp_path / "run" / "results.csv")["tuned"].iloc[0]  # lambda2=...
    value = tuned.partition("=")[2]
    shown = str(int(float(value))) if float(value).is_integer() else value
    assert (
        f"tuned on a held-out fold (holdout, 1 of 5 folds): lambda2={shown} (1 of 1 splits)" in text
    )


# --------------------------------------------------------------------------- item 7


def test_changed_settings_are_the_overrides_that_differ_from_the_defaults():
    from pmlbench.api import compose_config
    from pmlbench.hydra_app.overrides import changed_settings

    overrides = [
        "method=mlknn",
        "method.k=15",
        "method.s=1.0",  # mlknn's default
        "dataset=medical",
        "noise.rate=2.0",
        "seed=3",
        "protocol.n_splits=5",  # the default
        "bipartition.rule=top_k",
        "quiet=true",  # changes no number
        "results_store=null",
    ]
    config = compose_config(overrides)
    assert changed_settings(overrides, config) == [
        "method.k=15",
        "noise.rate=2",
        "seed=3",
        "bipartition.rule=top_k",
    ]
    assert changed_settings(["method=mlknn"], compose_config(["method=mlknn"])) == []


def test_tuned_line_counts_the_splits_of_each_chosen_value():
    from types import SimpleNamespace

    from pmlbench.hydra_app.task import tuned_line

    kfold = {"procedure": "kfold", "cv": 5}
    splits = [SimpleNamespace(tuned={"lambda2": v}, tuning=kfold) for v in (100.0, 100.0, 10.0)]
    assert tuned_line(SimpleNamespace(splits=splits)) == (
        "tuned by inner 5-fold cross-validation: lambda2=100 (2 of 3 splits), "
        "lambda2=10 (1 of 3 splits)"
    )
    holdout = [SimpleNamespace(tuned={"k": 5}, tuning={"procedure": "holdout", "cv": 5})]
    assert tuned_line(SimpleNamespace(splits=holdout)) == (
        "tuned on a held-out fold (holdout, 1 of 5 folds): k=5 (1 of 1 splits)"
    )
    assert tuned_line(SimpleNamespace(splits=[SimpleNamespace(tuned={}, tuning={})])) is None


# --------------------------------------------------------------------------- item 4

LIFT = ["method=lift", "dataset=genbase", "protocol.n_splits=1", "cache_dir=null"]


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def test_recorded_cpu_counts_worker_processes_and_the_dry_run_estimate_holds(tmp_path):
    """LIFT trains its labels in joblib worker processes (method.n_jobs=2): nearly all of a
    unit's CPU is spent there, and a unit's record must count it. The kernel's account of
    the processes this test waited for is the measurement."""
    from pmlbench.api import compose_config
    from pmlbench.runner.dryrun import TimingIndex, plan_job
    from pmlbench.runner.run import run_config
    from pmlbench.runner.store import ResultStore, iter_records

    store = ResultStore(tmp_path / "store")
    overrides = [*LIFT, "method.n_jobs=2"]

    def run(seed: int, isolate: bool = True) -> float:
        before = _children_cpu()
        config = compose_config([*overrides, f"seed={seed}"])
        run_config(config, tmp_path / f"run{seed}", quiet=True, store=store, isolate=isolate)
        return _children_cpu() - before

    def recorded(seed: int) -> float:
        (cpu,) = [
            r["run"]["cpu_seconds"] for r in iter_records(store.root) if r["unit"]["seed"] == seed
        ]
        return float(cpu)

    measured = run(0)
    assert measured / 2 <= recorded(0) <= measured * 1.1, (recorded(0), measured)

    plan = plan_job(compose_config([*overrides, "seed=1"]), tmp_path / "dry", store=store)
    (unit,) = plan.units
    estimate = TimingIndex.from_stores([store.root]).estimate(unit.method, unit.dataset)
    assert estimate is not None
    measured = run(1)
    assert measured / 2 <= estimate <= measured * 2, (estimate, measured)

    # in this process (the Python API's default): the workers outlive the unit, and count too.
    # A pool left warm by earlier tests would skip the workers' start-up (imports), which the
    # isolated runs above paid: start from no pool, as they did.
    from joblib.externals.loky import get_reusable_executor

    get_reusable_executor().shutdown(wait=True)
    run(2, isolate=False)
    assert recorded(2) >= measured / 2, (recorded(2), measured)


# --------------------------------------------------------------------------- item 9

NOISY_PLUGIN = '''
import warnings

from sklearn.exceptions import ConvergenceWarning

from pmlbench.methods.mlknn import MLkNN


class Noisy(MLkNN):
    """ML-kNN that warns 18 times per fit (a solver that does not converge) and once more."""

    default_tuning_grid: dict = {}  # one fit per unit

    def fit(self, X, Y):
        for _ in range(18):
            warnings.warn("lbfgs failed to converge", ConvergenceWarning)
        warnings.warn("mean of empty slice", RuntimeWarning)
        return super().fit(X, Y)
'''


def test_warnings_are_recorded_per_unit_and_summarised_once_per_kind(tmp_path):
    import json
    import os

    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "noisy_plugin.py").write_text(NOISY_PLUGIN)
    info = plugins / "noisy_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: noisy-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[pmlbench.methods]\nnoisy = noisy_plugin:Noisy\n")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(plugins), os.environ.get("PYTHONPATH", "")]),
    }
    common = ["dataset=genbase", "protocol.n_splits=2", "cache_dir=null"]
    store = tmp_path / "store"
    single = subprocess.run(
        [sys.executable, "-m", "pmlbench", "method=noisy", *common, f"results_store={store}",
         f"hydra.run.dir={tmp_path / 'run'}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert single.returncode == 0, single.stdout + single.stderr
    output = single.stdout + single.stderr
    lines = [ln for ln in output.splitlines() if ln.startswith("warning: ")]
    assert len(lines) == 2, output
    convergence = next(ln for ln in lines if "ConvergenceWarning" in ln)
    assert "ConvergenceWarning x36 in 2 units" in convergence
    assert "lbfgs failed to converge" in convergence
    assert "RuntimeWarning x2 in 2 units" in next(ln for ln in lines if "RuntimeWarning" in ln)
    assert output.count("lbfgs failed to converge") == 1  # not printed 36 times
    # per unit: units.json, the store record and the run's log
    units = read_units(tmp_path / "run")
    for unit in units:
        (kind,) = [w for w in unit["warnings"] if w["category"] == "ConvergenceWarning"]
        assert kind["count"] == 18 and kind["message"] == "lbfgs failed to converge"
        record = json.loads((store / f"{unit['key']}.json").read_text())
        assert record["run"]["warnings"] == unit["warnings"]
    (log,) = (tmp_path / "run").glob("*.log")
    text = log.read_text()
    assert text.count("ConvergenceWarning x18") == 2 and text.count("RuntimeWarning x1") == 2

    # a sweep summarises them once (rate 1.0 is reused from the store: its units warned before)
    sweep = subprocess.run(
        [sys.executable, "-m", "pmlbench", "-m", "method=noisy", *common, "noise.rate=1.0,2.0",
         f"results_store={store}", f"hydra.sweep.dir={tmp_path / 'sweep'}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert sweep.returncode == 0, sweep.stdout + sweep.stderr
    lines = [ln for ln in sweep.stdout.splitlines() if ln.startswith("warning: ")]
    assert len(lines) == 2, sweep.stdout
    assert "ConvergenceWarning x36 in 2 units" in " ".join(lines)  # the 2 computed units


# --------------------------------------------------------------------------- item 8


def _png_dpi(path: Path) -> float:
    """The resolution a PNG declares (its pHYs chunk, pixels per metre), in dots per inch."""
    import struct

    data = path.read_bytes()
    at = data.index(b"pHYs")
    x, _, unit = struct.unpack(">IIB", data[at + 4 : at + 13])
    assert unit == 1  # metres
    return x * 0.0254


def test_figures_come_as_pdf_svg_and_300_dpi_png_with_captions_outside(reruns, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "report"
    proc = pmlbench(reruns["root"], "report", str(reruns["runs"] / "a"), "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    stem = "noise_average_precision"
    for suffix in (".svg", ".pdf", ".png"):
        assert (out / "plots" / f"{stem}{suffix}").is_file(), suffix
    assert (out / "plots" / f"{stem}.pdf").read_bytes().startswith(b"%PDF")
    assert round(_png_dpi(out / "plots" / f"{stem}.png")) == 300
    captions = (out / "plots" / "captions.md").read_text(encoding="utf-8")
    caption = "Average precision against the noise level"
    assert f"## {stem}" in captions and caption in captions
    assert f"`{stem}.pdf`" in captions
    assert caption in (out / "report.html").read_text(encoding="utf-8")
    assert caption not in (out / "plots" / f"{stem}.svg").read_text(encoding="utf-8")


def test_a_cd_diagram_carries_no_title(tmp_path):
    pytest.importorskip("matplotlib")
    from pmlbench.report.plots import cd_diagram

    title = "Average precision: average ranks over 9 datasets"
    (svg, *_) = cd_diagram(
        ["a", "b", "c"], [1.2, 2.0, 2.8], 1.1, [("a", "b")], title, tmp_path, "cd"
    )
    text = svg.read_text(encoding="utf-8")
    assert "CD = 1.10" in text and "a (1.20)" in text
    assert "average ranks over" not in text


def test_a_cd_diagram_draws_no_block_over_tied_methods(tmp_path):
    """Issue 35 item 5: two methods tied at one average rank share one stem; a clique bar of
    no length over them was drawn as a short block that read as a stray marker."""
    pytest.importorskip("matplotlib")
    from pmlbench.report.plots import cd_diagram

    bar = "stroke-width: 3.5"  # clique bars (lw=3.5); nothing else is drawn that thick
    names = ["a", "b", "c", "d"]
    (svg,) = cd_diagram(names, [1.5, 1.5, 3, 4], 1.4, [("a", "b")], "", tmp_path, "tied", ("svg",))
    assert svg.read_text(encoding="utf-8").count(bar) == 0
    (svg,) = cd_diagram(names, [1.5, 1.7, 3, 4], 1.4, [("a", "b")], "", tmp_path, "near", ("svg",))
    assert svg.read_text(encoding="utf-8").count(bar) == 1


# --------------------------------------------------------------------------- item 1


def test_labels_tell_apart_every_setting_that_differs_and_split_counts_are_stated(tmp_path):
    """The README's tour: PML3ER with bipartition.rule=top_k and 10 splits beside a sweep's
    PML3ER (method's rule, 3 splits) and ML-kNN: no conflict, one label per configuration,
    and a note that the cells average different numbers of splits."""
    from pmlbench.report import ReportOptions, build_report
    from tests.helpers import run_rows, write_run

    def rows(dataset, method, values, **columns):
        out = run_rows(dataset, 1.0, method, values)
        for row in out:
            row.update(columns)
        return out

    for dataset in ("d1", "d2", "d3"):
        write_run(tmp_path, f"sweep_pml3er_{dataset}", rows(dataset, "pml3er", [(0.6, 0.1)] * 3))
        write_run(tmp_path, f"sweep_mlknn_{dataset}", rows(dataset, "mlknn", [(0.5, 0.2)] * 3))
    tour = rows(
        "d1", "pml3er", [(0.7, 0.05)] * 10, bipartition="top_k: k=2 top-scored labels (mean 2.4)"
    )
    write_run(tmp_path, "tour", tour)
    # the ridge control with and without tuning, on a dataset where it subsamples (its test
    # fraction differs from the other datasets', which is no setting of its own)
    for dataset, n_train in (("d1", 100), ("d2", 50)):
        tuned = rows(dataset, "ridge", [(0.4, 0.3)] * 3, tuned="lambda2=100", n_train=n_train)
        write_run(tmp_path, f"ridge_{dataset}", tuned)
    write_run(tmp_path, "ridge_untuned", rows("d1", "ridge", [(0.3, 0.3)] * 3, n_train=100))

    report = build_report([tmp_path], ReportOptions(reference="mlknn", plots=False))
    methods = report.prepared.methods
    assert "pml3er[bipartition=method]" in methods
    assert "pml3er[bipartition=top_k]" in methods
    assert "mlknn" in methods  # one configuration: its plain name
    # ridge tunes lambda2 by default: that configuration keeps the plain name
    assert {"ridge", "ridge[tuning=off]"} <= set(methods)
    assert not any("test_size" in m for m in methods)
    (note,) = [n for n in report.notes if "different numbers of splits" in n]
    assert "10 splits in 1 cell)" in note and "pml3er[bipartition=top_k] on d1" in note


def test_the_printed_next_command_reports_what_the_sweep_computed(reruns, tmp_path):
    """The README's way to report a sweep: the command its summary prints reads the sweep's
    own units, not the exploratory runs the same store also holds."""
    import shlex

    root, store = reruns["root"], reruns["store"]
    explore = pmlbench(
        root, "method=mlknn", "method.k=15", "dataset=genbase", "protocol.n_splits=1",
        "cache_dir=null", f"results_store={store}", f"hydra.run.dir={tmp_path / 'explore'}",
    )  # fmt: skip
    assert explore.returncode == 0, explore.stdout + explore.stderr
    (line,) = [ln for ln in reruns["first"].stdout.splitlines() if ln.startswith("next: ")]
    command = shlex.split(line.removeprefix("next: "))
    assert command[:2] == ["pmlbench", "report"]
    proc = pmlbench(root, *command[1:], "--out", str(tmp_path / "sweep"), "--no-plots")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    table = pd.read_csv(tmp_path / "sweep" / "table2.csv")
    assert set(table["method"]) == {"mlknn"} and set(table["n"]) == {2}
    everything = pmlbench(root, "report", str(store), "--out", str(tmp_path / "all"), "--no-plots")
    assert everything.returncode == 0, everything.stdout + everything.stderr
    table = pd.read_csv(tmp_path / "all" / "table2.csv")
    # the sweep ran ML-kNN's defaults (k tuned): the plain name (issue 35 item 3); setting
    # method.k fixes k
    assert set(table["method"]) == {"mlknn", "mlknn[k=15,tuning=off]"}


def test_a_filter_that_removes_a_whole_method_says_so(tmp_path):
    from pmlbench.report import ReportOptions, build_report
    from tests.helpers import run_rows, write_run

    for dataset in ("d1", "d2"):
        rows = run_rows(dataset, 1.0, "pml3er", [(0.6, 0.1)] * 2)
        for row in rows:
            row["bipartition"] = "top_k: k=2 top-scored labels"
        write_run(tmp_path, f"pml3er_{dataset}", rows)
        write_run(tmp_path, f"mlknn_{dataset}", run_rows(dataset, 1.0, "mlknn", [(0.5, 0.2)] * 2))
        write_run(tmp_path, f"ridge_{dataset}", run_rows(dataset, 1.0, "ridge", [(0.4, 0.2)] * 2))
    options = ReportOptions(where={"bipartition": "method's predict"}, plots=False)
    report = build_report([tmp_path], options)
    assert report.prepared.methods == ["mlknn", "ridge"]
    (note,) = [n for n in report.notes if "left out every result of" in n]
    assert "--where bipartition=method's predict left out every result of pml3er" in note


def test_the_readme_report_names_the_default_configuration_by_the_method(tmp_path):
    """Issue 35 item 3: after the README's tour PML3ER ran with its default rule (threshold
    0.5, top label if empty) and with bipartition.rule=top_k; ``--reference pml3er`` means
    the default, and every label is one word a shell takes unquoted."""
    import re

    from pmlbench.report import ReportOptions, build_report
    from tests.helpers import run_rows, write_run

    default = "score >= 0.5, top label if empty"
    grid = "[1,10,100,1000]"  # a tuned parameter's column holds its grid (issue 35 item 7)
    for dataset in ("d1", "d2"):
        rows = run_rows(dataset, 1.0, "pml3er", [(0.6, 0.1)] * 3)
        for row in rows:
            row.update(bipartition=default, tuned="lambda2=100", param_lambda2=grid)
        write_run(tmp_path, f"pml3er_{dataset}", rows)
        write_run(tmp_path, f"mlknn_{dataset}", run_rows(dataset, 1.0, "mlknn", [(0.5, 0.2)] * 3))
    tour = run_rows("d1", 1.0, "pml3er", [(0.7, 0.05)] * 3)
    for row in tour:
        row.update(bipartition="top_k: k=2 top-scored labels (mean 2.4)", tuned="lambda2=1")
        row.update(param_lambda2=grid)
    write_run(tmp_path, "tour", tour)
    report = build_report([tmp_path], ReportOptions(reference="pml3er", plots=False))
    assert report.prepared.methods == ["pml3er", "mlknn", "pml3er[bipartition=top_k]"]
    assert all(re.fullmatch(r"[\w.+=,\[\]-]+", m) for m in report.prepared.methods)


# ------------------------------------------------------------------ the README's tour (item 1)

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_section(title: str) -> str:
    """The text of the README section ``## <title>``, up to the next ``## `` heading."""
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def readme_commands(section: str) -> list[list[str]]:
    """The ``python -m pmlbench`` and ``pmlbench`` commands of a section's indented code
    lines, as argument lists (comments dropped, continuation lines joined)."""
    import shlex

    lines, joined = [], ""
    for line in section.splitlines():
        if not line.startswith("    "):
            continue
        joined += line.strip().removesuffix("\\") + " " if line.endswith("\\") else line.strip()
        if not line.endswith("\\"):
            lines.append(joined)
            joined = ""
    commands = []
    for line in lines:
        words = shlex.split(line, comments=True)
        if words[:3] == ["python", "-m", "pmlbench"]:
            commands.append(words[3:])
        elif words[:1] == ["pmlbench"]:
            commands.append(words[1:])
    return commands


def tour_units(arguments: list[str]) -> int:
    """The units a tour command computes at most: jobs (the product of its sweep lists) x
    splits; 0 for a dry run and for a sub-command."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    multirun = "-m" in arguments
    overrides = [a for a in arguments if a != "-m"]
    if not overrides or "=" not in overrides[0] or "dry_run=true" in overrides:
        return 0
    jobs, splits = 1, 5  # protocol.n_splits' default
    for override in OverridesParser.create().parse_overrides(overrides):
        if multirun and override.is_sweep_override():
            jobs *= sum(1 for _ in override.sweep_string_iterator())
        if override.get_key_element() == "protocol.n_splits":
            splits = int(override.value())
    return jobs * splits


def test_the_tour_runs_no_named_experiment_and_stays_small():
    """Issue 35 item 1: the "five-minute tour" held the paper's 600-unit sweep (26 min).
    The tour's commands together compute 115 units at most (their measured CPU time is in
    the README); the paper experiment and the suite have sections of their own."""
    tour = readme_section("A five-minute tour")
    assert "+experiment=" not in tour
    commands = readme_commands(tour)
    assert ["list"] in commands and any(c[:1] == ["report"] for c in commands)
    units = [tour_units(c) for c in commands]
    assert sum(units) <= 115, list(zip(commands, units, strict=True))
    # the dry run shown is the one of the tour's own sweep
    sweeps = [c for c in commands if "-m" in c]
    assert [c for c in sweeps if "dry_run=true" in c] == [
        [*c, "dry_run=true"] for c in sweeps if "dry_run=true" not in c
    ]


def test_the_readme_names_a_tour_job_directory_as_the_sweep_does():
    """Issue 35 item 7: the job directory the tour names is the one the sweep writes (its
    noise level included): Hydra's basic sweeper numbers the product of the lists in
    command-line order, and conf/config.yaml's ``hydra.sweep.subdir`` names the job."""
    import itertools
    import re

    from omegaconf import OmegaConf

    from pmlbench.api import compose_config
    from pmlbench.hydra_app.resolvers import register_resolvers

    tour = readme_section("A five-minute tour")
    (sweep,) = [c for c in readme_commands(tour) if "-m" in c and "dry_run=true" not in c]
    lists = [o.partition("=") for o in sweep if "=" in o]
    jobs = list(itertools.product(*[v.split(",") for _, _, v in lists]))
    (named,) = re.findall(r"`((\d+)_\w+)`", tour)
    overrides = [f"{k}={v}" for (k, _, _), v in zip(lists, jobs[int(named[1])], strict=True)]
    config = OmegaConf.load(README.parent / "conf" / "config.yaml")
    subdir = OmegaConf.to_container(config.hydra.sweep, resolve=False)["subdir"]
    register_resolvers()
    job = OmegaConf.create({**compose_config(overrides), "hydra": {"job": {"num": named[1]}}})
    job.subdir = subdir
    assert job.subdir == named[0]


def test_the_paper_experiment_has_its_own_section_with_its_dry_run_and_measured_time():
    section = readme_section("The paper experiment")
    commands = readme_commands(section)
    assert commands == [
        ["-m", "+experiment=paper", "dry_run=true"],
        ["-m", "+experiment=paper", "hydra/launcher=joblib"],
    ]
    # the time is docs/scaling.md's measurement, with the commit it was taken at
    import re

    scaling = (README.parent / "docs" / "scaling.md").read_text(encoding="utf-8")
    paper = scaling.split("## The paper experiment", 1)[1].split("\n## ", 1)[0]
    wall, cpu = re.search(r"\*\*(\d+ min \d+ s) of wall time, ([\d,]+) CPU seconds", paper).groups()
    assert f"**{wall} of wall time and {cpu} CPU seconds**" in section
    commit = re.search(r"at commit (\w+)", paper).group(1)
    assert f"at commit {commit}" in section


def test_the_readme_keeps_its_set_up_and_test_commands():
    text = README.read_text(encoding="utf-8")
    setup = readme_section("Set-up (two commands on a fresh machine)")
    assert (
        '\n    pip install -e ".[test,launchers,plots]" -e ./plugins/pmlbench-example && '
        "python -m pmlbench method=pml3er dataset=bibtex\n" in text
    )
    assert "\n    python -m pytest -q\n" in setup


def test_the_paper_dry_run_estimate_the_readme_gives_is_the_dry_runs(tmp_path, monkeypatch, capsys):
    """The README's paper section states the dry run's estimate from an empty store, and
    docs/sweeps.md shows its summary line: both are what the dry run prints today (a refitted
    cost model changes them)."""
    import re

    from pmlbench.cli.main import main

    monkeypatch.chdir(tmp_path)
    argv = ["-m", "+experiment=paper", "dry_run=true", "quiet=true", "cache_dir=null",
            f"results_store={tmp_path / 'store'}",
            f"hydra.sweep.dir={tmp_path / 'sweep'}"]  # fmt: skip
    assert main(argv) == 0
    summary = capsys.readouterr().out.splitlines()[-1]
    (estimate,) = re.findall(r"; estimated (.+?) CPU for the 600 to compute", summary)
    section = " ".join(readme_section("The paper experiment").split())
    assert f"it estimates **{estimate} of CPU time** for the 600 units" in section
    sweeps = (README.parent / "docs" / "sweeps.md").read_text(encoding="utf-8")
    assert f"\n    {summary}\n" in sweeps
