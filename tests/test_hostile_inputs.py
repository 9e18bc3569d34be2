"""Hostile inputs, second round: files that are no regular files, links out of a report's
folder, text that acts where it is written, stored numbers no run can have written, edited
identity fields, signals that end a run, shell forms around the result key, list-valued
parameters, records without input digests, mixed dense and sparse ARFF rows."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from pmlbench.api import compose_config
from pmlbench.core.regular_files import UnreadableFile, read_text
from pmlbench.core.safe_text import csv_cell, from_csv_cell, visible
from pmlbench.errors import PmlbenchError
from pmlbench.report import ReportOptions, build_report
from pmlbench.report.build import write_report
from pmlbench.report.render import markdown_escape, markdown_unescape
from pmlbench.runner.run import run_config
from pmlbench.runner.store import ResultStore, iter_damaged, load_record
from tests.helpers import assert_process_ends, start_slow_external

HOSTILE = "\x1b]0;PWNED\x07\u202e\u2064\U000e0041"  # OSC title, BEL, RLO, invisible plus, tag
RAW = ("\x1b", "\x07", "\u202e", "\u2064", "\U000e0041")
MARKUP = '=HYPERLINK("http://127.0.0.1:9","x") **b** [l](http://127.0.0.1:9/) <i>x</i>'

# An external program that scores every label by its training frequency plus a little of
# each test row's first feature; it reads no parameter, so any value may be given.
PROGRAM = """
import sys
import numpy as np
train, test, out = sys.argv[1:4]
with np.load(train) as tr, np.load(test) as te:
    Y, Xt = tr["Y"].astype(float), te["X"].astype(float)
scores = Y.mean(axis=0)[None, :] + 1e-3 * Xt[:, :1]
np.savez(out, scores=scores)
"""


def _run(overrides: list[str], out: Path, store: Path | None = None):
    config = compose_config(overrides)
    return run_config(config, out, quiet=True, store=None if store is None else ResultStore(store))


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    """Run directories of ML-kNN and ridge on genbase (two splits each), with their store."""
    root = tmp_path_factory.mktemp("hostile_sweep")
    for number, method in enumerate(("mlknn", "ridge")):
        _run(
            [f"method={method}", "dataset=genbase", "protocol.n_splits=2", "tune.grid=null"],
            root / "sweep" / f"{number}_{method}_genbase",
            root / "store",
        )
    return root


def _copy(sweep: Path, target: Path) -> Path:
    shutil.copytree(sweep, target, symlinks=True)
    return target


def _records(store: Path) -> list[Path]:
    return sorted(p for p in store.glob("*.json") if p.name.count(".") == 1)


def _report(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """``pmlbench report`` in a process of its own, stopped after ``timeout`` seconds: a
    hang is a failed test, not a stuck test run."""
    return subprocess.run(
        [sys.executable, "-m", "pmlbench", "report", *args, "--quiet", "--no-plots"],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# ------------------------------------------------------------ regular files, size limits


def test_only_regular_files_within_the_limit_are_read(tmp_path):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.json"
    zero.symlink_to("/dev/zero")
    sparse = tmp_path / "sparse.json"
    with open(sparse, "wb") as handle:
        handle.truncate(1 << 40)  # a terabyte that takes no disk space
    with pytest.raises(UnreadableFile, match=r"not a regular file \(a FIFO\)"):
        read_text(fifo, 1000)
    with pytest.raises(UnreadableFile, match="character device"):
        read_text(zero, 1000)
    with pytest.raises(UnreadableFile, match="1.0 TiB, larger than"):
        read_text(sparse, 64 << 20)
    (tmp_path / "ok.json").write_text("{}")
    assert read_text(tmp_path / "ok.json", 2) == "{}"
    with pytest.raises(FileNotFoundError):
        read_text(tmp_path / "absent.json", 2)


def test_a_report_never_blocks_on_a_fifo_or_reads_a_device(sweep, tmp_path):
    """The report warned about a FIFO named ``<key>.json``, then hung re-reading it for its
    provenance; a link to /dev/zero filled the memory. FIFOs as results.csv, units.json and
    the report's own manifest hung it too."""
    root = _copy(sweep, tmp_path / "copy")
    first, second = _records(root / "store")[:2]
    first.unlink()
    os.mkfifo(first)
    second.unlink()
    second.symlink_to("/dev/zero")
    done = _report(str(root / "store"), "--out", str(tmp_path / "rep"))
    assert done.returncode == 0, done.stderr
    assert f"damaged store file {first}: not a regular file (a FIFO)" in done.stderr
    assert "not a regular file (a character device)" in done.stderr
    assert (tmp_path / "rep" / "report.html").is_file()

    run = root / "sweep" / "0_mlknn_genbase"
    (run / "units.json").unlink()
    os.mkfifo(run / "units.json")
    (tmp_path / "rep" / ".pmlbench_report.json").unlink()
    os.mkfifo(tmp_path / "rep" / ".pmlbench_report.json")
    done = _report(str(root / "sweep"), "--out", str(tmp_path / "rep"))
    assert done.returncode == 0, done.stderr
    assert not stat_is_fifo(tmp_path / "rep" / ".pmlbench_report.json")  # replaced

    (run / "results.csv").unlink()
    os.mkfifo(run / "results.csv")
    done = _report(str(root / "sweep"), "--out", str(tmp_path / "rep2"))
    assert done.returncode == 2
    assert "results.csv: not a regular file (a FIFO)" in done.stderr
    assert "Traceback" not in done.stderr


def stat_is_fifo(path: Path) -> bool:
    import stat

    return stat.S_ISFIFO(os.lstat(path).st_mode)


def test_a_fifo_as_a_data_file_is_named_for_what_it_is(tmp_path):
    os.mkfifo(tmp_path / "data.npz")
    with pytest.raises(PmlbenchError, match=r"data.npz is not a regular file \(a FIFO\)"):
        _run(["dataset=file", f"dataset.path={tmp_path / 'data.npz'}", "method=ridge"], tmp_path)


# ------------------------------------------------------------------ writing inside --out


def test_a_report_never_writes_through_a_linked_folder_or_file(sweep, tmp_path):
    pytest.importorskip("matplotlib")
    other = tmp_path / "other"
    other.mkdir()
    (other / "cd_average_precision.png").write_text("precious")
    out = tmp_path / "rep"
    out.mkdir()
    (out / "plots").symlink_to(other)
    report = build_report([sweep / "store"], ReportOptions(html=False))
    with pytest.raises(PmlbenchError, match="is a symbolic link .* remove the link"):
        write_report(report, out)
    assert (other / "cd_average_precision.png").read_text() == "precious"
    assert sorted(p.name for p in other.iterdir()) == ["cd_average_precision.png"]

    # a figure whose name is a link is replaced, never written through
    from matplotlib.figure import Figure

    from pmlbench.report import plots

    (out / "plots").unlink()
    (out / "plots").mkdir()
    (out / "plots" / "cd_average_precision.png").symlink_to(other / "cd_average_precision.png")
    plots._save(Figure(), out / "plots", "cd_average_precision", ("png",))
    assert (other / "cd_average_precision.png").read_text() == "precious"
    assert not (out / "plots" / "cd_average_precision.png").is_symlink()
    assert (out / "plots" / "cd_average_precision.png").read_bytes().startswith(b"\x89PNG")


# ------------------------------------------------------------------------ one sanitiser


@pytest.mark.parametrize("char", [*RAW, "\u200f", "\u2028", "\x9b", "\ufeff", "\u00ad"])
def test_every_hidden_character_is_shown_as_an_escape(char):
    shown = visible(f"a{char}b")
    assert char not in shown and shown.startswith("a\\") and shown.endswith("b")
    assert visible("tab\tand\nnewline", keep_newlines=True) == "tab\tand\nnewline"
    assert visible("mlknn[k=5] é ✓ 中") == "mlknn[k=5] é ✓ 中"


@pytest.mark.parametrize(
    ("text", "cell"),
    [
        ('=HYPERLINK("http://127.0.0.1:9","x")', '\'=HYPERLINK("http://127.0.0.1:9","x")'),
        ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("-x", "'-x"),
        ("-1.5e3", "-1.5e3"),
        ("'=x", "''=x"),
        ("'plain", "'plain"),
        ("genbase", "genbase"),
    ],
)
def test_a_csv_cell_runs_no_formula_and_reads_back_as_given(text, cell):
    assert csv_cell(text) == cell
    assert from_csv_cell(cell) == text


def test_markdown_text_makes_no_link_and_no_html():
    text = "**b** [l](http://127.0.0.1:9/) <i>x</i> a|b"
    escaped = markdown_escape(text)
    assert "](" not in escaped and "<" not in escaped and "a\\|b" in escaped
    assert markdown_unescape(escaped) == text
    assert markdown_escape("mlknn[k=5]") == "mlknn[k=5]"


def test_the_sweep_s_progress_and_summary_show_overrides_escaped(tmp_path, capsys):
    """A sweep's progress line printed each job's overrides raw: an escape code (clear the
    screen, set the window title) or U+202E in an override value acted on the terminal. The
    line and the summary now show them through pmlbench.core.safe_text.visible."""
    from pmlbench.hydra_app import task
    from pmlbench.hydra_app.progress import sweep_summary
    from pmlbench.runner.format import ERROR_FILE, SWEEP_PROGRESS_FILE

    sweep = tmp_path / "sweep"
    job = sweep / f"0_tag={HOSTILE}"
    job.mkdir(parents=True)
    (job / ERROR_FILE).write_text("stopped")
    (sweep / SWEEP_PROGRESS_FILE).write_text(json.dumps({"total_jobs": 2, "start": 0.0}))
    capsys.readouterr()
    task._sweep_line(sweep, job, ["method=external", f"+method.params.tag='\x1b[2J{HOSTILE}'"])
    line = capsys.readouterr().out
    assert line.startswith("sweep ") and "1/2 jobs" in line, line
    assert not any(c in line for c in RAW), line
    assert "+method.params.tag='\\x1b[2J\\x1b]0;PWNED\\x07\\u202e\\u2064\\U000e0041'" in line
    assert line.rstrip().endswith(": stopped outside any unit (error.txt)"), line
    summary = sweep_summary(sweep, f"store{HOSTILE}")
    assert not any(c in text for text in summary for c in RAW), summary
    assert f"0_tag={visible(HOSTILE)}: error.txt says why" in summary[0]
    assert summary[1].endswith(f" (store: store{visible(HOSTILE)})")


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory) -> Path:
    """Two runs of the external program whose parameter carries escapes, a formula and
    Markdown, beside ridge, into one store, on a dataset whose display name is a formula
    with Markdown and HTML (hidden characters are refused in names)."""
    from pmlbench.datasets.bundled import DATA_DIR

    root = tmp_path_factory.mktemp("hostile_text")
    program = root / "prog.py"
    program.write_text(PROGRAM)
    shutil.copy(DATA_DIR / "genbase.npz", root / "g.npz")
    tag = f"{MARKUP}{HOSTILE}"
    base = [
        "dataset=file",
        f"dataset.path={root / 'g.npz'}",
        f"dataset.display_name='{MARKUP}'",
        "protocol.n_splits=2",
        "tune.grid=null",
    ]
    _run(
        [
            "method=external",
            f"method.command='{{python}} {program} {{train}} {{test}} {{out}}'",
            f"+method.params.tag='{tag}'",
            *base,
        ],
        root / "sweep" / "0_external",
        root / "store",
    )
    _run(["method=ridge", *base], root / "sweep" / "1_ridge", root / "store")
    return root


def test_the_run_s_results_csv_holds_no_raw_text(hostile_run):
    path = hostile_run / "sweep" / "0_external" / "results.csv"
    assert not any(c in path.read_text() for c in RAW)
    tags = pd.read_csv(path, dtype=str)["param_params.tag"]
    assert tags.str.startswith("'=HYPERLINK(").all()  # a spreadsheet shows it as text
    ridge = pd.read_csv(hostile_run / "sweep" / "1_ridge" / "results.csv", dtype=str)
    assert (ridge["dataset"] == "'" + MARKUP).all()  # the display name, as text
    assert (ridge["method"] == "ridge").all()  # plain text is written as it is
    assert ridge["bipartition"].str.startswith("score >= ").all()


@pytest.mark.parametrize("source", ["store", "sweep"])
def test_report_files_hold_no_raw_text_no_formula_no_link(hostile_run, tmp_path, source):
    report = build_report(
        [hostile_run / source], ReportOptions(plots=False, reference="ridge", html=True)
    )
    out = tmp_path / "rep"
    written = write_report(report, out)
    tags = {str(v) for v in report.prepared.records.get("param_params.tag", []) if v == v}
    assert tags and all(t.startswith('=HYPERLINK("http') for t in tags)  # read back as given
    assert set(report.prepared.records["dataset"]) == {MARKUP}
    assert any(p.suffix == ".csv" for p in written) and any(p.suffix == ".md" for p in written)
    for path in written:
        text = path.read_text(encoding="utf-8")
        assert not any(c in text for c in RAW), path.name
        if path.suffix == ".csv":
            cells = [c for row in csv.reader(io.StringIO(text)) for c in row]
            assert not any(c.startswith(("=", "@", "+")) for c in cells), path.name
        if path.suffix == ".md":
            assert "](http" not in text and "<i>" not in text, path.name


# --------------------------------------------------------- stored numbers, edited fields


def _edit_csv(run: Path, change) -> Path:
    frame = pd.read_csv(run / "results.csv", dtype=str, keep_default_na=False)
    change(frame)
    frame.to_csv(run / "results.csv", index=False)
    return run


def _set(column: str, value: str, metric: str = "average_precision"):
    def change(frame: pd.DataFrame) -> None:
        frame.loc[frame["metric"] == metric, column] = value

    return change


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (_set("value", "1e999"), "value of average_precision is inf, not a metric value"),
        (_set("value", "9" * 401), "value of average_precision is inf"),
        (_set("value", "7.0"), "outside the range [0, 1]"),
        (_set("value", "-0.25"), "outside the range [0, 1]"),
        (_set("n_test", "9" * 401), "n_test is a 401-digit number"),
        (_set("fit_seconds", "1e999"), "fit_seconds is inf"),
        (_set("dataset", "medical"), "dataset='medical', but the run.json beside it has"),
        (_set("noise_rate", "2.0"), "noise_rate=2.0, but the run.json beside it has"),
        (_set("method", "ridge"), "method='ridge', but the run.json beside it has"),
        (_set("seed", "7"), "seed=7"),
        (_set("split", "5"), "split 5 is none of those the run.json beside it lists"),
        (_set("higher_is_better", "False"), "higher_is_better=False, but the installed metric"),
        (_set("convention", "sklearn"), "convention='sklearn', but the run.json beside it"),
    ],
)
def test_an_edited_results_csv_is_left_out_with_one_line(sweep, tmp_path, change, problem):
    root = _copy(sweep, tmp_path / "copy")
    edited = _edit_csv(root / "sweep" / "0_mlknn_genbase", change) / "results.csv"
    loaded = build_report([root / "sweep"], ReportOptions(plots=False, html=False))
    assert set(loaded.prepared.records["method"]) == {"ridge"}  # the edited file left out
    damaged = loaded.loaded.failures[loaded.loaded.failures["status"] == "damaged"]
    assert list(damaged["path"]) == [str(edited)]
    assert problem in damaged["error"].iloc[0] and "\n" not in damaged["error"].iloc[0]


def _edit_records(store: Path, change) -> list[Path]:
    paths = _records(store)
    for path in paths:
        record = json.loads(path.read_text())
        if record["unit"]["method"]["name"] == "mlknn":
            change(record)
            path.write_text(json.dumps(record))
    return paths


def _rows(column, value, metric="average_precision"):
    def change(record):
        for row in record["records"]:
            if row["metric"] == metric:
                row[column] = value

    return change


def _run_field(column, value):
    def change(record):
        record["run"][column] = value

    return change


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (_run_field("cpu_seconds", 10**400), "run.cpu_seconds is an integer beyond the range"),
        (_rows("n_test", 10**400), "n_test is a 401-digit number"),
        (_rows("fit_seconds", -1.0), "fit_seconds is -1.0"),
        (_rows("value", 7.0), "outside the range [0, 1]"),
        (_rows("convention", "sklearn"), "convention='sklearn', but its unit has"),
        (_rows("higher_is_better", False), "higher_is_better=False, but the installed metric"),
        (_rows("bipartition", "top_k"), "bipartition='top_k'"),
        (_rows("oracle", True), "oracle=True"),
        (_rows("tuned", "k=3"), "tuned='k=3'"),
    ],
)
def test_an_edited_store_record_is_damaged_for_report_and_run(sweep, tmp_path, change, problem):
    root = _copy(sweep, tmp_path / "copy")
    edited = _edit_records(root / "store", change)
    problems = {d.path: d.problem for d in iter_damaged(root / "store")}
    mlknn = [p for p in edited if p in problems]
    assert len(mlknn) == 2 and all(problem in problems[p] for p in mlknn), problems
    store = ResultStore(root / "store")
    assert store.load(mlknn[0].stem) is None  # a run recomputes it


@pytest.fixture(scope="module")
def tuned(tmp_path_factory) -> Path:
    """A store with one tuned unit: ridge on genbase, its default grid of four points."""
    root = tmp_path_factory.mktemp("hostile_tuned")
    _run(["method=ridge", "dataset=genbase", "protocol.n_splits=1"], root / "run", root / "store")
    return root


# a stand-in replaced by the literal text "1e999" in the record's JSON (Python's json.dumps
# writes infinity as "Infinity")
_HUGE = 123456.5


def _tuning(field, value, inner=None):
    def change(tuning):
        if inner is None:
            tuning[field][0] = value
        else:
            tuning[field][0][inner] = value

    return change


def _tuning_field(field, value):
    def change(tuning):
        tuning[field] = value

    return change


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (_tuning("mean_scores", _HUGE), "score split.tuning.mean_scores[0] is inf, not a metric"),
        (_tuning("mean_scores", 7.0), "mean_scores[0] is 7.0, outside the range [0, 1]"),
        (_tuning("mean_scores", -0.5), "mean_scores[0] is -0.5, outside the range [0, 1]"),
        (_tuning("mean_scores", 10**400), "mean_scores[0] is a 401-digit number, not a metric"),
        (_tuning("mean_scores", "0.5"), "mean_scores[0] is '0.5', not a metric value"),
        (_tuning("fold_scores", _HUGE, 0), "split.tuning.fold_scores[0][0] is inf, not a metric"),
        (_tuning_field("mean_scores", [0.5]), "does not hold a mean and a list of fold scores"),
        (_tuning_field("best_index", 9), "split.tuning.best_index is 9, not a grid point's"),
        (_tuning_field("seconds", _HUGE), "split.tuning.seconds is inf"),
    ],
    ids=[
        "mean-1e999",
        "mean-above-1",
        "mean-below-0",
        "mean-401-digits",
        "mean-text",
        "fold-1e999",
        "means-per-point",
        "best-index",
        "seconds-1e999",
    ],
)
def test_a_stored_tuning_score_out_of_range_is_flagged(tuned, tmp_path, capsys, change, problem):
    """A tuning mean score of 1e999 in a store record was reused and written to run.json as
    Infinity: the one validation of stored records (run and report) now checks the tuning
    scores as it checks a row's value, and a run recomputes the unit, naming the file."""
    root = _copy(tuned, tmp_path / "copy")
    (path,) = _records(root / "store")
    record = json.loads(path.read_text())
    assert record["split"]["tuning"]["mean_scores"]  # a tuned unit: the grid was searched
    assert load_record(path, path.stem, strict=True)[1] is None
    change(record["split"]["tuning"])
    path.write_text(json.dumps(record).replace(repr(_HUGE), "1e999"))
    assert problem in load_record(path, path.stem, strict=True)[1]
    assert [d.problem for d in iter_damaged(root / "store")] == [
        load_record(path, path.stem)[1]
    ]  # a report leaves it out with the same line
    capsys.readouterr()
    _run(
        ["method=ridge", "dataset=genbase", "protocol.n_splits=1"],
        tmp_path / "again",
        root / "store",
    )
    units = json.loads((tmp_path / "again" / "units.json").read_text())["units"]
    assert [u["status"] for u in units] == ["computed"]
    err = capsys.readouterr().err
    assert f"damaged store file {path}: " in " ".join(err.split()) and problem in " ".join(
        err.split()
    )
    assert load_record(path, path.stem, strict=True)[1] is None  # replaced by the recomputed unit


def test_a_file_dataset_s_renamed_record_is_damaged(tmp_path):
    from pmlbench.datasets.bundled import DATA_DIR

    shutil.copy(DATA_DIR / "genbase.npz", tmp_path / "canon.npz")
    _run(
        ["dataset=file", f"dataset.path={tmp_path / 'canon.npz'}", "method=ridge"],
        tmp_path / "run",
        tmp_path / "store",
    )
    path = _records(tmp_path / "store")[0]
    record = json.loads(path.read_text())
    record["dataset"]["name"] = "genbase"
    for row in record["records"]:
        row["dataset"] = "genbase"
    path.write_text(json.dumps(record))
    assert load_record(path, path.stem, strict=True)[1] == (
        "its dataset summary names 'genbase', not 'canon'"
    )


def test_values_whose_mean_overflows_are_refused():
    from pmlbench.report.prepare import prepare

    rows = [
        {"dataset": "d", "noise": "uniform", "noise_rate": 1.0, "method": m, "seed": 0}
        | {"split": s, "metric": "my_score", "value": v, "higher_is_better": True}
        for m, v in (("a", 1.7e308), ("b", 0.5))
        for s in (0, 1)
    ]
    with pytest.raises(PmlbenchError, match="my_score of a on d .* no finite number"):
        prepare(pd.DataFrame(rows))


def test_a_record_without_input_digests_is_recomputed(sweep, tmp_path, capsys):
    root = _copy(sweep, tmp_path / "copy")
    for path in _records(root / "store"):
        record = json.loads(path.read_text())
        record.pop("inputs")
        path.write_text(json.dumps(record))
    _run(
        ["method=mlknn", "dataset=genbase", "protocol.n_splits=2", "tune.grid=null"],
        tmp_path / "again",
        root / "store",
    )
    units = json.loads((tmp_path / "again" / "units.json").read_text())["units"]
    assert [u["status"] for u in units] == ["computed", "computed"]
    assert "hold no digests of their data" in capsys.readouterr().err


def test_a_misspelt_where_value_is_named(sweep):
    with pytest.raises(PmlbenchError, match="--where method=mlnkn matches no result; method"):
        build_report(
            [sweep / "store"],
            ReportOptions(plots=False, html=False, where={"method": ["mlknn", "mlnkn"]}),
        )


# ------------------------------------------------------------------------ list parameters


def test_list_valued_parameters_give_each_configuration_its_own_label(hostile_run, tmp_path):
    program = hostile_run / "prog.py"
    for ks in ("[1,20]", "[20,1]"):
        _run(
            [
                "method=external",
                f"method.command='{{python}} {program} {{train}} {{test}} {{out}}'",
                f"+method.params.ks={ks}",
                "dataset=genbase",
                "protocol.n_splits=2",
                "tune.grid=null",
            ],
            tmp_path / "sweep" / ks,
            tmp_path / "store",
        )
    for source in ("sweep", "store"):
        report = build_report([tmp_path / source], ReportOptions(plots=False, html=False))
        assert sorted(report.prepared.methods) == [
            "external[params.ks=[1,20]]",
            "external[params.ks=[20,1]]",
        ]


def test_conflicting_results_are_named_plainly():
    from pmlbench.report.prepare import prepare

    rows = [
        {"dataset": "d", "noise": "uniform", "noise_rate": 1.0, "method": "a", "seed": 0}
        | {"split": 0, "metric": "my_score", "value": v, "higher_is_better": True, "source": f}
        for v, f in ((0.1, "x/results.csv"), (0.2, "y/results.csv"))
    ]
    with pytest.raises(PmlbenchError) as error:
        prepare(pd.DataFrame(rows))
    message = str(error.value)
    assert "seed=0, split=0" in message and "np.int64" not in message, message


# --------------------------------------------------------------------- the result store


def test_a_store_path_that_cannot_be_a_folder_is_refused_before_any_work(tmp_path):
    """store_location_problem (the one check, run by the CLI's callback and by each job) also
    names a FIFO, resolves a relative value against the starting directory, and creates
    nothing; the CLI's one line is tested in tests/test_cli.py."""
    from pmlbench.hydra_app.directories import store_location_problem

    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "afile").write_text("x")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    refused = {
        "fifo": "'fifo' is a file, not a directory",
        "afile/sub": f"'afile/sub' lies under {str(tmp_path / 'afile')!r}, a file",
        "dangling/sub": "a symbolic link to " + repr(str(tmp_path / "nowhere")),
    }
    for value, problem in refused.items():
        found = store_location_problem(value, tmp_path)
        assert found is not None and problem in found, found
        assert found.startswith(f"results_store={value!r} ") and "\n" not in found
    for value in ("new/store", str(tmp_path / "other"), None, ""):
        assert store_location_problem(value, tmp_path) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "dangling", "fifo"]


# --------------------------------------------------------------------- shell forms, ARFF


@pytest.mark.parametrize(
    ("command", "problem"),
    [
        ('bash -O extglob -c "cd sub && python3 prog.py {train}"', "changes directory"),
        ('bash --rcfile /dev/null -c "python3 prog.py"', "'--rcfile'"),
        ('bash --init-file x -c "python3 prog.py"', "'--init-file'"),
        ('env BASH_ENV=x bash -c "python3 prog.py"', "sets BASH_ENV"),
        ('taskset -c 0 sh -c "python3 prog.py {train}"', "a shell (sh) behind 'taskset'"),
        ('chrt -o 0 sh -c "python3 prog.py"', "behind 'chrt'"),
        ('flock lock sh -c "python3 prog.py"', "behind 'flock'"),
        ('strace -f -o /dev/null sh -c "python3 prog.py"', "behind 'strace'"),
        ('runuser -u root -- sh -c "python3 prog.py"', "behind 'runuser'"),
        ('unshare -- sh -c "python3 prog.py"', "behind 'unshare'"),
        ('script -qec "cd sub && python3 prog.py {train}" /dev/null', "changes directory"),
        ("sh -c 'eval \"cd sub\"; python3 prog.py'", "runs text as commands (eval)"),
        ('sh -c ". ./cdsub.sh && python3 prog.py"', "runs text as commands (.)"),
        ('sh -c "alias go=cd\ngo sub && python3 prog.py"', "runs text as commands (alias)"),
        ('sh -c "python3 prog.py\neval x"', "runs text as commands (eval)"),
        ('sh -c "python3 su*/prog.py {train}"', "matches file names at run time"),
        ("env -iC sub python3 prog.py {train}", "through 'env -iC'"),
    ],
)
def test_shell_forms_hiding_files_from_the_key_are_refused(command, problem):
    from pmlbench.methods import external

    with pytest.raises(PmlbenchError) as error:
        external.check_shell_script(command)
    assert problem in str(error.value) and "\n" not in str(error.value)


@pytest.mark.parametrize(
    "command",
    [
        "octave-cli --eval \"addpath('lib'); my_method('{train}', '{test}', '{out}')\"",
        'sh -c "if [ -f x ]; then python3 prog.py {train}; fi"',
        "sh run.sh {train} {test} {out}",
        "{python} prog.py {out} '$HOME' '*' ';'",
    ],
)
def test_commands_the_key_follows_are_still_accepted(command):
    from pmlbench.methods import external

    external.check_shell_script(command)


SCRIPT_FILES = {
    "cd": '#!/bin/sh\nset -e\ncd sub && python3 prog.py "$@"\n',
    "names": '#!/usr/bin/env bash\npython3 sub/prog.py "$1" "$2" "$3"\n',
    "variable": '#!/bin/sh\npython3 "$HOME/prog.py" "$@"\n',
    "plain": '#!/bin/sh\n# cd sub: a comment\nset -e\nexec python3 -m my_method "$1" "$2" "$3"\n',
}


@pytest.mark.parametrize(
    ("command", "script", "problem"),
    [
        ("sh run.sh {train} {test} {out}", "cd", "changes directory (cd sub)"),
        ("nice bash run.sh {train} {test} {out}", "names", "names 'sub/prog.py'"),
        ("./run.sh {train} {test} {out}", "names", "names 'sub/prog.py'"),
        ("./run.sh {train} {test} {out}", "variable", "builds words at run time"),
        ("sh -c 'sh run.sh {train} {test} {out}'", "cd", "changes directory (cd sub)"),
    ],
)
def test_a_shell_s_script_file_is_followed(tmp_path, monkeypatch, command, script, problem):
    """A script file run by a shell was keyed by its own bytes only: a cd inside it, or a
    program it names, escaped the key, and an edit of sub/prog.py reused stale numbers."""
    from pmlbench.methods import external

    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "prog.py").write_text("print(1)\n")
    (tmp_path / "run.sh").write_text(SCRIPT_FILES[script])
    (tmp_path / "run.sh").chmod(0o755)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PmlbenchError) as error:
        external.check_shell_script(command)
    assert problem in str(error.value) and "run.sh" in str(error.value)
    # in method.workdir as in the working directory
    monkeypatch.chdir(tmp_path.parent)
    with pytest.raises(PmlbenchError, match="run.sh"):
        external.check_shell_script(command, workdir=str(tmp_path))


def test_a_script_file_naming_only_programs_is_accepted(tmp_path, monkeypatch):
    from pmlbench.methods import external

    (tmp_path / "run.sh").write_text(SCRIPT_FILES["plain"])
    (tmp_path / "run.sh").chmod(0o755)
    monkeypatch.chdir(tmp_path)
    external.check_shell_script("sh run.sh {train} {test} {out}")
    external.check_shell_script("./run.sh {train} {test} {out}")


def _external_output_program(tmp_path: Path, scores: str) -> str:
    program = tmp_path / "prog.py"
    program.write_text(
        "import sys, numpy as np\n"
        "X = np.load(sys.argv[2])['X']\n"
        f"np.savez(sys.argv[3], scores={scores})\n"
    )
    return f"{{python}} {program} {{train}} {{test}} {{out}}"


def test_string_scores_from_an_external_program_are_refused(tmp_path):
    import numpy as np

    from pmlbench.errors import PluginError
    from pmlbench.methods.external import ExternalCommand

    X, Y = np.eye(4), np.array([[1, 0], [0, 1], [1, 1], [1, 0]])
    command = _external_output_program(tmp_path, "np.full((X.shape[0], 2), '0.5')")
    model = ExternalCommand(command, workdir=str(tmp_path)).fit(X, Y)
    with pytest.raises(PluginError, match="wrote non-numeric scores"):
        model.decision_function(X)


def test_exchange_files_do_not_pile_up_in_the_workdir(tmp_path):
    import numpy as np

    from pmlbench.methods.external import ExternalCommand

    X, Y = np.eye(4), np.array([[1, 0], [0, 1], [1, 1], [1, 0]])
    command = _external_output_program(tmp_path, "np.zeros((X.shape[0], 2))")
    for _ in range(2):
        ExternalCommand(command, workdir=str(tmp_path)).fit(X, Y).decision_function(X)
    left = sorted(p.name for p in tmp_path.glob("exchange-*/*"))
    assert left == [], left


ARFF_HEAD = """@relation r
@attribute f1 numeric
@attribute f2 numeric
@attribute l1 {L}
@attribute l2 {L}
@data
0.5,0.1,0,1
"""


@pytest.mark.parametrize(
    ("labels", "row", "problem"),
    [
        ("{1,0}", "{0 0.2}", "every omitted label would count as relevant"),
        ("{0,1}", "{0 0.5, 0 0.7}", "gives attribute 0 more than once"),
    ],
)
def test_sparse_rows_after_a_dense_one_are_checked_as_a_sparse_file(tmp_path, labels, row, problem):
    from pmlbench.datasets.arff import load_arff

    path = tmp_path / "mixed.arff"
    path.write_text(ARFF_HEAD.replace("{L}", labels) + "{1 0.3, 2 1}\n" + row + "\n")
    with pytest.raises(PmlbenchError, match=problem):
        load_arff(path, label_count=2)


def test_an_invisible_display_name_is_refused(tmp_path):
    from pmlbench.datasets.files import load_file

    with pytest.raises(PmlbenchError, match=r"display_name='gen\\\\u2064base' is empty or holds"):
        load_file(str(tmp_path / "x.npz"), display_name="gen\u2064base")


# ------------------------------------------------------- hidden characters in plugin names


def test_a_plugin_name_with_hidden_characters_is_neither_offered_nor_echoed(monkeypatch):
    """``pmlbench --help`` and Hydra's unknown-option error printed every method's
    entry-point name raw (ESC, BEL, U+202E; U+2064 and tag characters everywhere)."""
    from types import SimpleNamespace

    from hydra.core.config_store import ConfigStore

    from pmlbench.hydra_app import config_nodes, overrides
    from pmlbench.plugins import registry

    hidden = f"clr{HOSTILE}x"
    fake = SimpleNamespace(distribution="evil", load=lambda: None)
    real = registry.plugins

    def plugins(kind):
        found = dict(real(kind))
        return {**found, hidden: fake} if kind == "method" else found

    monkeypatch.setattr(registry, "plugins", plugins)
    problems = config_nodes.register_config_nodes()
    assert any("it is not offered" in p and not any(c in p for c in RAW) for p in problems)
    assert f"{hidden}.yaml" not in ConfigStore.instance().repo["method"]
    for choice in (hidden, "mlnkn"):
        with pytest.raises(PmlbenchError) as error:
            overrides._check_choice("method", choice)
        assert not any(c in str(error.value) for c in RAW)


# ------------------------------------------------------------------ a malformed method


def test_a_method_with_malformed_constraints_is_named_not_a_traceback(monkeypatch):
    from types import SimpleNamespace

    from pmlbench.methods.ridge import Ridge
    from pmlbench.plugins import registry
    from pmlbench.runner import run as run_module

    class BadConstraints(Ridge):
        parameter_constraints = {"tag": [str]}

    info = SimpleNamespace(
        label="method plugin 'bad' (distribution 'x')", load=lambda: BadConstraints
    )
    monkeypatch.setattr(registry, "get", lambda kind, name: info)
    with pytest.raises(PmlbenchError, match="'bad' .* declares parameter_constraints that are"):
        run_module._check_method_constraints(SimpleNamespace(method={"name": "bad"}))


# ------------------------------------------------------------------ SIGTERM and SIGHUP


@pytest.mark.slow
@pytest.mark.parametrize(
    ("signum", "to_group", "extra"),
    [
        (signal.SIGTERM, False, []),
        (signal.SIGHUP, True, []),
        (signal.SIGTERM, False, ["unit_timeout=500"]),
    ],
    ids=["sigterm", "sighup-group", "sigterm-unit-timeout"],
)
def test_termination_stops_the_external_program_too(tmp_path, signum, to_group, extra):
    """SIGTERM or SIGHUP ended pmlbench at once, leaving the program (in a session of its
    own) running; now it is stopped first, and pmlbench exits with 128 + the signal's
    number after one line (pmlbench.hydra_app.signals)."""
    proc, program = start_slow_external(tmp_path, *extra, signals=(signal.SIGTERM, signal.SIGHUP))
    if to_group:
        os.killpg(proc.pid, signum)
    else:
        os.kill(proc.pid, signum)
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, output
    assert f"error: stopped by {signal.Signals(signum).name}: " in output, output
    assert_process_ends(program, "the terminated run")
