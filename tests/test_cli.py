"""The command line end to end: the paper's protocol on genbase with ML-kNN."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pmlbench.datasets.bundled import genbase
from pmlbench.metrics.builtin import PAPER_METRICS
from pmlbench.noise.uniform import noise_counts
from tests.reference import bipartition_metrics, matlab_ranking_metrics


def pmlbench(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run the CLI with no result store and no shared-work cache: every run computes afresh."""
    isolated = [] if args[:1] == ("list",) else ["results_store=null", "cache_dir=null"]
    return subprocess.run(
        [sys.executable, "-m", "pmlbench", *args, *isolated],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
    )


@pytest.fixture(scope="module")
def genbase_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    runs = []
    for name, extra in (("a", ["save_predictions=true"]), ("b", [])):
        out = root / name
        proc = pmlbench(
            "method=mlknn", "dataset=genbase", "quiet=true", f"hydra.run.dir={out}", *extra
        )
        runs.append((proc, out))
    return runs


def test_paper_protocol_run_writes_results(genbase_runs):
    proc, out = genbase_runs[0]
    assert proc.returncode == 0, proc.stderr
    results = pd.read_csv(out / "results.csv")
    assert len(results) == 5 * 7
    assert sorted(results["split"].unique()) == [0, 1, 2, 3, 4]
    assert set(results["metric"]) == set(PAPER_METRICS)
    for column in (
        "dataset",
        "noise",
        "noise_rate",
        "method",
        "split",
        "metric",
        "value",
        "fit_seconds",
        "predict_seconds",
        "bipartition",
        "convention",
    ):
        assert column in results.columns
    assert (results["dataset"] == "genbase").all() and (results["noise_rate"] == 1.0).all()
    for metric in PAPER_METRICS:
        assert metric in proc.stdout
    record = json.loads((out / "run.json").read_text())
    assert record["config"]["method"]["name"] == "mlknn"
    assert len(record["seeds"]) == 5 and record["versions"]["numpy"]
    assert "git_commit" in record


def test_same_command_gives_identical_numbers(genbase_runs):
    (_, a), (_, b) = genbase_runs
    values_a = pd.read_csv(a / "results.csv")["value"].to_numpy()
    values_b = pd.read_csv(b / "results.csv")["value"].to_numpy()
    np.testing.assert_array_equal(values_a, values_b)


def test_saved_predictions_allow_independent_rescoring(genbase_runs):
    _, out = genbase_runs[0]
    results = pd.read_csv(out / "results.csv")
    data = genbase()
    files = sorted((out / "predictions").glob("split_*.npz"))
    assert len(files) == 5
    for path in files:
        split = int(path.stem.split("_")[1])
        with np.load(path, allow_pickle=False) as z:
            assert sorted(z.files) == sorted(
                ["train_idx", "test_idx", "y_train_candidates", "scores", "y_pred"]
            )
            train, test = z["train_idx"], z["test_idx"]
            candidates, scores, y_pred = z["y_train_candidates"], z["scores"], z["y_pred"]
        assert len(np.intersect1d(train, test)) == 0 and len(train) + len(test) == data.n_instances
        truth = data.Y[train]
        assert np.all(candidates >= truth)
        added = (candidates.astype(int) - truth).sum(axis=1)
        np.testing.assert_array_equal(
            added, noise_counts(truth.sum(axis=1), truth.shape[1], 1.0, "half_up")
        )
        expected = {
            **matlab_ranking_metrics(data.Y[test], scores),
            **bipartition_metrics(data.Y[test], y_pred),
        }
        got = results[results["split"] == split].set_index("metric")["value"]
        for metric in PAPER_METRICS:
            assert got[metric] == pytest.approx(expected[metric], abs=1e-12), metric


def test_list_shows_every_kind():
    proc = pmlbench("list")
    assert proc.returncode == 0, proc.stderr
    for name in (
        "mlknn",
        "genbase",
        "bibtex",
        "yeastbp",
        "uniform",
        "none",
        "average_precision",
        "coverage",
    ):
        assert name in proc.stdout


def test_list_descriptions_are_whole_and_help_is_plain_text(capsys):
    """Issue 35 item 7: a description is the docstring's first paragraph, not its first
    (wrapped) line, and ``--help`` shows no reST markup."""
    from pmlbench.cli.commands import check_plugin, list_plugins, report

    rows = {r["name"]: r["description"] for r in list_plugins.plugin_rows("method")}
    assert rows["nlr"].endswith("remove binary noisy labels from the candidates.")
    assert rows["pml_ld"].endswith("as the authors' main.m.")
    assert not any("``" in d for d in rows.values())
    for module in (list_plugins, check_plugin, report):
        with pytest.raises(SystemExit):
            module.main(["--help"])
        shown = capsys.readouterr().out
        assert "usage: pmlbench" in shown
        assert "``" not in shown and ":mod:" not in shown


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("method=mlknnn", "unknown method 'mlknnn'"),
        ("dataset=genbse", "did you mean 'genbase'"),
        (
            "metric_convention=matlab",
            "metric_convention must be one of 'zhang', 'sklearn', got 'matlab'",
        ),
        ("noise.rate=-0.5", "noise.rate must be a number in [0, inf), got -0.5"),
        ("metrics=[average_precison]", "unknown metric 'average_precison'"),
        ("method.kk=3", "method 'mlknn' has no parameter 'kk'; its parameters: k, s"),
        ("metrics=[]", "set metrics=[average_precision,...]"),  # printed literally, no markup
    ],
)
def test_bad_input_gets_one_line_error(tmp_path, override, message):
    proc = pmlbench(override, "quiet=true", f"hydra.run.dir={tmp_path}")
    assert proc.returncode != 0
    output = proc.stdout + proc.stderr
    assert message in output
    assert "Traceback" not in output
    assert not (tmp_path / "results.csv").exists()


def test_real_pml_dataset_uses_its_candidates(tmp_path):
    proc = pmlbench(
        "method=mlknn",
        "dataset=yeastmf",
        "protocol.n_splits=2",
        "quiet=true",
        f"hydra.run.dir={tmp_path}",
    )
    assert proc.returncode == 0, proc.stderr
    results = pd.read_csv(tmp_path / "results.csv")
    assert (results["noise"] == "natural").all()
    assert (results["n_degenerate"] > 0).all()  # many yeast instances have no true label


def test_help_describes_pmlbench():
    proc = subprocess.run(
        [sys.executable, "-m", "pmlbench", "--help"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("pmlbench: benchmark partial multi-label learning")
    assert "powered by Hydra" not in proc.stdout
    for command in ("pmlbench list", "pmlbench check-plugin", "pmlbench report", "-m"):
        assert command in proc.stdout
    assert "method: " in proc.stdout and "mlknn" in proc.stdout  # the config groups


def test_one_split_run_prints_no_spread(tmp_path):
    proc = pmlbench(
        "method=mlknn", "dataset=genbase", "protocol.n_splits=1", f"hydra.run.dir={tmp_path}"
    )
    assert proc.returncode == 0, proc.stderr
    assert "average_precision" in proc.stdout
    assert "nan" not in proc.stdout and "±" not in proc.stdout


def test_plugin_text_reaches_the_terminal_escaped_in_list_and_check_plugin(monkeypatch, capsys):
    """Entry-point names, distribution names, docstrings and import errors are the plugin's
    text: clear-screen, window-title and colour codes and bidi overrides must be shown as
    escapes by `pmlbench list` and `pmlbench check-plugin`, never acted on."""
    from dataclasses import dataclass
    from types import SimpleNamespace

    from pmlbench.cli.commands import check_plugin, list_plugins
    from pmlbench.plugins import registry

    hostile = "\x1b[2J\x1b]0;owned\x07\x1b[31m\u202e\u200f"

    @dataclass
    class Hostile:
        name: str
        value: str

        @property
        def dist(self):
            return SimpleNamespace(metadata={"Name": f"dist{hostile}"})

        def load(self):
            raise ImportError(f"boom{hostile}")

    entry = Hostile(f"evil{hostile}", "evil_module:Evil")
    monkeypatch.setattr(registry, "entry_points", lambda group: [entry])
    registry.plugins.cache_clear()
    try:
        assert list_plugins.main(["method"]) == 0
        assert check_plugin.main([entry.name, "--kind", "method"]) == 1
    finally:
        registry.plugins.cache_clear()
    out = capsys.readouterr().out
    assert "evil" in out and "boom" in out
    for raw in ("\x1b", "\x07", "\u202e", "\u200f"):
        assert raw not in out, repr(raw)
    assert "\\x1b" in out and "\\u202e" in out


def test_version_names_pmlbench_and_an_interrupt_exits_130(monkeypatch, capsys):
    """`pmlbench --version` printed Hydra's version; Ctrl-C ended with status 2 (a usage
    error's) instead of the shell's 130."""
    import importlib

    from pmlbench import __version__

    cli = importlib.import_module("pmlbench.cli.main")

    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.startswith(f"pmlbench {__version__} (Hydra ")

    def interrupted(argv):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "run_hydra", interrupted)
    assert cli.main(["method=mlknn"]) == 130
    assert capsys.readouterr().err.startswith("error: stopped by SIGINT: ")


@pytest.mark.parametrize(("signum", "status"), [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_real_signal_ends_a_command_in_one_line_with_the_shells_status(
    monkeypatch, capsys, signum, status
):
    """Issue 35 item 6: SIGTERM ended the process on the spot (Python's default), leaving a
    joblib sweep's workers running; it now stops the command as Ctrl-C does. The handlers
    are the command's: they are put back when it returns (tests/test_interrupt.py sends real
    signals to real sweeps)."""
    import importlib
    import os
    import signal
    import time

    cli = importlib.import_module("pmlbench.cli.main")
    number = signal.Signals[signum]
    before = signal.getsignal(number)
    if before not in (signal.SIG_DFL, signal.default_int_handler):
        pytest.skip(f"{signum} has a handler of the test runner's")

    def run_hydra(argv):
        os.kill(os.getpid(), number)  # kill <pid>, or Ctrl-C
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the handler raises at the next instruction
            time.sleep(0.01)
        raise AssertionError("the signal did not stop the command")

    monkeypatch.setattr(cli, "run_hydra", run_hydra)
    assert cli.main(["method=mlknn", "results_store=null"]) == status
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (
        f"error: stopped by {signum}: the running units were stopped (results_store=null: "
        "none is stored)"
    )
    assert signal.getsignal(number) is before
    # a sub-command says only what stopped it
    monkeypatch.setattr(cli, "SUBCOMMANDS", {"list": "tests.test_cli:_signal_self"})
    monkeypatch.setenv("PMLBENCH_TEST_SIGNAL", signum)
    assert cli.main(["list"]) == status
    assert capsys.readouterr().err == f"error: stopped by {signum}\n"


def _signal_self(argv):
    import os
    import signal
    import time

    os.kill(os.getpid(), signal.Signals[os.environ["PMLBENCH_TEST_SIGNAL"]])
    time.sleep(60)
    raise AssertionError("the signal did not stop the command")


def test_sigterm_in_a_joblib_worker_crosses_back_to_the_command():
    """A job stopped by SIGTERM in a worker process raises Terminated there; joblib sends it
    back pickled, and it must still name its signal."""
    import pickle

    from pmlbench.hydra_app.signals import Terminated, exit_status, signal_name

    again = pickle.loads(pickle.dumps(Terminated()))
    assert isinstance(again, KeyboardInterrupt)
    assert (signal_name(again), exit_status(again), str(again)) == ("SIGTERM", 143, "SIGTERM")
    assert (signal_name(KeyboardInterrupt()), exit_status(KeyboardInterrupt())) == ("SIGINT", 130)


@pytest.mark.parametrize(
    ("launcher", "submitted", "line"),
    [
        ("hydra/launcher=joblib", None, "the running units were stopped, finished ones are in"),
        ("hydra/launcher=basic", None, "the running units were stopped, finished ones are in"),
        ("hydra/launcher=slurm", "slurm", "SLURM jobs were not cancelled (squeue lists them"),
        ("hydra/launcher=submitit_local", "local", "submitit jobs run on unless the signal"),
    ],
)
def test_a_stopped_sweep_of_a_submitit_launcher_says_its_jobs_run_on(launcher, submitted, line):
    """SLURM jobs (and submitit's local ones, children of submitit's own processes) are not
    the command's to stop: the one line says so instead of "the running units were stopped".
    The callback conf/config.yaml registers notes the launcher, whatever selects it."""
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher", reason="needs .[launchers]")
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher", reason="needs .[launchers]")
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.utils import instantiate

    from pmlbench.cli.main import stopped_line
    from pmlbench.hydra_app.config_nodes import register_config_nodes
    from pmlbench.hydra_app.config_tree import config_dir
    from pmlbench.hydra_app.signals import forget_submitted_jobs, submitted_jobs

    register_config_nodes()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        config = compose("config", [launcher], return_hydra_config=True)
    GlobalHydra.instance().clear()
    callback = instantiate(config.hydra.callbacks.submitted_jobs)
    try:
        callback.on_multirun_start(config=config)
        assert submitted_jobs() == submitted
        text = stopped_line(KeyboardInterrupt(), ["-m", "method=mlknn"], submitted_jobs())
        assert text.startswith("stopped by SIGINT: ") and line in text
        callback.on_multirun_end(config=config)
        assert submitted_jobs() is None
    finally:
        forget_submitted_jobs()


@pytest.mark.parametrize("where", ["file", "dangling link", "under a file", "under a link"])
def test_a_results_store_that_cannot_be_a_directory_is_refused_before_any_work(tmp_path, where):
    """A results_store that is a regular file, a symbolic link to nothing, or a path under
    either stops the command in one line naming the key, the value and the fix, before any
    directory is made or unit run (it was a Hydra traceback, or a unit computed and then
    not stored)."""
    (tmp_path / "afile").write_text("not a store")
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")
    value = {
        "file": "afile",
        "dangling link": "link",
        "under a file": "afile/store",
        "under a link": "link/store",
    }[where]
    for sweep in ([], ["-m"]):
        proc = subprocess.run(
            [sys.executable, "-m", "pmlbench", *sweep, "method=mlknn", "protocol.n_splits=1",
             f"results_store={value}", "cache_dir=null", f"hydra.run.dir={tmp_path / 'run'}",
             f"hydra.sweep.dir={tmp_path / 'sweep'}"],
            capture_output=True, text=True, cwd=tmp_path, timeout=600,
        )  # fmt: skip
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert proc.stdout == "", proc.stdout
        (line,) = proc.stderr.splitlines()
        assert line.startswith(f"error: results_store={value!r} "), line
        assert line.endswith(
            "set results_store to a directory (created when missing), or null for no store"
        )
        if "link" in where:
            assert f"a symbolic link to {str(tmp_path / 'nowhere')!r}, which does not exist" in line
        else:
            assert "a file, not a directory" in line
        assert not (tmp_path / "run").exists() and not (tmp_path / "sweep").exists()
        assert not (tmp_path / "nowhere").exists()
    assert (tmp_path / "afile").read_text() == "not a store"
