"""Helpers shared by several test modules (one home, so no test module imports another).

- synthetic run directories for the report's tests: :data:`METRICS`, :func:`run_rows`,
  :func:`write_run`;
- a plugin distribution for the status tests (method ``picky``, dataset ``guarded``):
  :func:`plugin_env`;
- the pipe tables of a Markdown page: :func:`pipe_tables`;
- the benchmark suite's sweep lists and the reduced suite with its leaderboard, run once
  per session: :func:`suite_params`, :func:`suite_cases`, :func:`reduced_suite`,
  :func:`report_with_leaderboard`;
- the installed wheel: the :func:`installed_wheel` fixture;
- a run stopped by a signal while its external program sleeps: :func:`start_slow_external`,
  :func:`assert_process_ends`.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

from pmlbench.hydra_app.config_tree import config_dir

ROOT = Path(__file__).resolve().parent.parent

# ------------------------------------------------------------------ run directories

METRICS = {"average_precision": True, "hamming_loss": False}


def run_rows(dataset, rate, method, values, params=None, splits=None):
    rows = []
    for split, metric_values in zip(splits or range(len(values)), values, strict=True):
        for (metric, higher), value in zip(METRICS.items(), metric_values, strict=True):
            rows.append(
                {
                    "dataset": dataset,
                    "noise": "uniform",
                    "noise_rate": rate,
                    "method": method,
                    **(params or {}),
                    "seed": 0,
                    "split": split,
                    "metric": metric,
                    "value": value,
                    "higher_is_better": higher,
                    "convention": "zhang",
                    "bipartition": "method's predict",
                    "tuned": "",
                    "oracle": False,
                    "n_train": 100,
                    "n_test": 100,
                    "n_degenerate": 0,
                    "fit_seconds": 0.1,
                    "predict_seconds": 0.01,
                }
            )
    return rows


def write_run(root: Path, name: str, rows: list[dict]) -> Path:
    run = root / name
    run.mkdir(parents=True)
    pd.DataFrame(rows).to_csv(run / "results.csv", index=False)
    return run


# ------------------------------------------------------------------ status plugins

TEST_PLUGINS = '''
import os
import time
from pathlib import Path

from pmlbench.datasets.bundled import genbase
from pmlbench.errors import NotApplicable
from pmlbench.methods.mlknn import MLkNN


class Picky(MLkNN):
    """ML-kNN that refuses every input (refuse=1) or sleeps before fitting (sleep seconds);
    untuned by default, so that a unit is one fit."""

    default_tuning_grid: dict = {}

    def __init__(self, k=10, s=1.0, sleep=0.0, refuse=0):
        super().__init__(k, s)
        self.sleep = sleep
        self.refuse = refuse

    def fit(self, X, Y):
        if self.refuse:
            raise NotApplicable("picky refuses every input (cap: refuse=1); set method.refuse=0")
        if self.sleep:
            pid_dir = os.environ.get("PICKY_PID_DIR")
            if pid_dir:
                Path(pid_dir, str(os.getpid())).write_text("")
            time.sleep(self.sleep)
        return super().fit(X, Y)


def guarded():
    """genbase, leaving a mark in $GUARDED_MARKS for every load; raises under $GUARDED_FORBID."""
    marks = os.environ.get("GUARDED_MARKS")
    if marks:
        Path(marks).mkdir(parents=True, exist_ok=True)
        Path(marks, f"{os.getpid()}-{time.time_ns()}").write_text("")
    if os.environ.get("GUARDED_FORBID"):
        raise RuntimeError("the guarded dataset was loaded")
    return genbase()
'''


def plugin_env(root: Path, **extra: str) -> dict[str, str]:
    """An environment with the test plugins installed: method ``picky`` and dataset
    ``guarded`` (a distribution on PYTHONPATH, found through its entry points)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "status_plugins.py").write_text(TEST_PLUGINS)
    info = root / "pmlbench_status_plugins-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: pmlbench-status-plugins\nVersion: 0.1\n"
    )
    (info / "entry_points.txt").write_text(
        "[pmlbench.methods]\npicky = status_plugins:Picky\n\n"
        "[pmlbench.datasets]\nguarded = status_plugins:guarded\n"
    )
    path = os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, **extra}


# ------------------------------------------------------------------ Markdown tables


def pipe_tables(text: str) -> list[list[list[str]]]:
    """Every pipe table of ``text`` as rows of cells (header first, rule dropped)."""
    tables, current = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            if not all(re.fullmatch(r":?-+:?", c) for c in cells):
                current.append(cells)
        elif current:
            tables.append(current)
            current = []
    return tables


# ------------------------------------------------------------------ the benchmark suite

SUITE_FILE = config_dir() / "experiment" / "suite.yaml"
CASE_KEY = "+experiment/suite_case"
# built-in methods with no recorded time in any source of the shipped cost model (a method
# added after the suite's run): the dry run estimates them by the fallback rule, and says so,
# until the model is refitted once their units are computed (scripts/fit_cost_model.py)
NOT_YET_RECORDED: frozenset[str] = frozenset()
REDUCED_METHODS = ("mlknn", "ridge")
REDUCED_CASES = ("emotions_rate1.0", "mirflickr5k")
# a method that refuses a case up front (NLR above its max_order): an n/a unit in the store
REFUSING = ("method=nlr", "method.max_order=10", f"{CASE_KEY}=emotions_rate1.0")
REFERENCE = "mlknn"
LEADERBOARD = "docs/leaderboard.md"


def suite_params() -> dict[str, str]:
    """The sweep lists of suite.yaml, as Hydra's sweeper reads them."""
    params = OmegaConf.load(SUITE_FILE).hydra.sweeper.params
    return {str(k): str(v) for k, v in params.items()}


def suite_cases() -> list[str]:
    """The cases of the suite, in the order of suite.yaml's list."""
    return [c.strip() for c in suite_params()[CASE_KEY].split(",")]


def run_pmlbench(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """``python -m pmlbench ARGS`` in ``cwd``."""
    return subprocess.run(
        [sys.executable, "-m", "pmlbench", *args],
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=600,
    )


REPORT_ARGS = (
    "store",
    "--reference",
    REFERENCE,
    "--leaderboard",
    LEADERBOARD,
    "--out",
    "report",
    "--quiet",
)


def report_with_leaderboard(root: Path) -> subprocess.CompletedProcess:
    """``pmlbench report store --reference mlknn --leaderboard docs/leaderboard.md --out
    report`` in ``root``."""
    return run_pmlbench(root, "report", *REPORT_ARGS)


def reduced_suite(root: Path) -> Path:
    """Run the reduced suite and its report with the leaderboard into ``root`` once per test
    session (both test modules use it; the second finds it done)."""
    done = root / "done"
    if done.exists():
        return root
    root.mkdir(parents=True, exist_ok=True)
    common = ("results_store=store", "cache_dir=null", "quiet=true", "protocol.n_splits=2")
    sweep = run_pmlbench(
        root,
        "-m",
        "+experiment=suite",
        f"method={','.join(REDUCED_METHODS)}",
        f"{CASE_KEY}={','.join(REDUCED_CASES)}",
        *common,
        "hydra.sweep.dir=sweep",
    )
    assert sweep.returncode == 0, sweep.stdout + sweep.stderr
    refused = run_pmlbench(
        root, "-m", "+experiment=suite", *REFUSING, *common, "hydra.sweep.dir=nlr"
    )
    assert refused.returncode == 0, refused.stdout + refused.stderr
    assert "n/a: 2 units" in refused.stdout
    report = report_with_leaderboard(root)
    assert report.returncode == 0, report.stdout + report.stderr
    done.write_text("")
    return root


# ------------------------------------------------------------------ the wheel


@pytest.fixture(scope="module")
def installed_wheel(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp / "dist"),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if build.returncode != 0 and "No module named 'hatchling'" in build.stderr:
        pytest.skip("hatchling is not installed (pip install -e '.[test]' brings it)")
    assert build.returncode == 0, build.stderr
    wheel = next((tmp / "dist").glob("pmlbench-*.whl"))
    site = tmp / "site"
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(site),
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert install.returncode == 0, install.stderr
    return wheel, site


def relative_error(actual, expected, floor: float = 1e-6) -> float:
    """Largest |actual − expected| relative to the expected entry, for comparisons with a
    reference run of the authors' code; entries below ``floor`` x the largest expected entry
    are compared with that floor instead (a relative error near zero means nothing)."""
    actual, expected = np.asarray(actual, dtype=float), np.asarray(expected, dtype=float)
    scale = floor * np.abs(expected).max()
    return float(np.max(np.abs(actual - expected) / np.maximum(np.abs(expected), scale)))


def regenerated_reference(
    fixtures: Path, source_variable: str, repository: str, tmp_path: Path, *cases: str
):
    """Run ``fixtures/make_reference.py`` (the authors' code in Octave) into ``tmp_path`` and
    load what it wrote, for the optional tests that compare a fresh Octave run with the
    committed reference. Skips without ``octave-cli`` or without ``source_variable`` naming a
    copy (checkout or bare git directory) of ``repository``. ``cases`` narrows the run."""
    if shutil.which("octave-cli") is None:
        pytest.skip("octave-cli is not installed (Debian package 'octave')")
    source = os.environ.get(source_variable)
    if not source:
        pytest.skip(f"set {source_variable} to a checkout of {repository} to regenerate")
    out = tmp_path / "reference.npz"
    narrow = ["--cases", *cases] if cases else []
    subprocess.run(
        [sys.executable, str(fixtures / "make_reference.py"), "--source", source]
        + ["--out", str(out), *narrow],
        check=True,
        capture_output=True,
    )
    return np.load(out)


# ------------------------------------------------------------------ signals and programs


def start_slow_external(
    tmp_path: Path, *extra: str, signals: tuple[int, ...] = (signal.SIGINT,)
) -> tuple[subprocess.Popen, int]:
    """A ``pmlbench`` run, in a session of its own, whose external program writes its process
    id and sleeps; returns the run's process and the program's id once it is sleeping.
    ``signals`` are set to their default action in the run (a test runner may ignore them)."""
    pidfile = tmp_path / "program.pid"
    script = tmp_path / "slow.py"
    script.write_text(
        f"import os, time\nopen({str(pidfile)!r}, 'w').write(str(os.getpid()))\ntime.sleep(300)\n"
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pmlbench",
            "method=external",
            f"method.command='{{python}} {script} {{train}} {{test}} {{out}}'",
            "dataset=genbase",
            "protocol.n_splits=1",
            "results_store=null",
            "tune.grid=null",
            "quiet=true",
            f"hydra.run.dir={tmp_path / 'run'}",
            *extra,
        ],
        cwd=tmp_path,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=lambda: [signal.signal(s, signal.SIG_DFL) for s in signals],
    )
    deadline = time.monotonic() + 180
    while not pidfile.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    assert pidfile.exists(), proc.communicate()[0]
    time.sleep(0.5)
    return proc, int(pidfile.read_text())


def assert_process_ends(pid: int, what: str) -> None:
    """The process ``pid`` ends within ten seconds (a kill is asynchronous); else it is
    killed and the test fails, saying that it outlived ``what``."""
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    raise AssertionError(f"the external program outlived {what}")
