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
    assert "interrupted" in capsys.readouterr().err
