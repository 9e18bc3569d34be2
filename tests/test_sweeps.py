"""Multiruns through Hydra's launchers: resume after SIGKILL, failing units, named sweeps,
job directories that name their noise level. (Ctrl-C and SIGTERM: test_interrupt.py.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from pmlbench.runner.status import Status
from pmlbench.runner.store import iter_outcomes, iter_records

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["method=mlknn", "dataset=genbase", "protocol.n_splits=2", "cache_dir=null"]


def sweep_command(tmp_path: Path, sweep: str, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pmlbench",
        "-m",
        *args,
        f"results_store={tmp_path / 'store'}",
        f"hydra.sweep.dir={tmp_path / sweep}",
    ]


def run_sweep(
    tmp_path: Path, sweep: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        sweep_command(tmp_path, sweep, *args),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=600,
    )


FRAGILE = """
from pmlbench.methods.mlknn import MLkNN


class Fragile(MLkNN):
    \"\"\"ML-kNN whose fit raises a ValueError (a bug, not a user error) when explode=1.\"\"\"

    default_tuning_grid = {}  # one fit per unit

    def __init__(self, k=10, s=1.0, explode=0):
        super().__init__(k, s)
        self.explode = explode

    def fit(self, X, Y):
        if self.explode:
            raise ValueError(f"synthetic failure (explode={self.explode})")
        return super().fit(X, Y)
"""


@pytest.fixture(scope="module")
def fragile_env(tmp_path_factory) -> dict[str, str]:
    """An environment with a method plugin ``fragile`` that crashes on request."""
    root = tmp_path_factory.mktemp("fragile_dist")
    (root / "fragile_pml.py").write_text(FRAGILE)
    info = root / "pmlbench_fragile-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pmlbench-fragile\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[pmlbench.methods]\nfragile = fragile_pml:Fragile\n")
    path = os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path}


def unit_statuses(sweep_dir: Path) -> list[str]:
    return [
        u["status"]
        for path in sorted(sweep_dir.glob("*/units.json"))
        for u in json.loads(path.read_text())["units"]
    ]


@pytest.mark.slow
def test_joblib_sweep_killed_midway_resumes_each_unit_once(tmp_path):
    args = [
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2",
        *SMALL,
        "noise.rate=0.5,2.0",
        "method.k=5,10",
        "quiet=true",
    ]
    n_units = 2 * 2 * 2
    proc = subprocess.Popen(
        sweep_command(tmp_path, "first", *args),
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    store = tmp_path / "store"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if store.is_dir() and len(list(store.glob("*.json"))) >= 2:
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the launcher and its joblib workers
    proc.wait()
    done_first = {r["key"] for r in iter_records(store)}
    assert 2 <= len(done_first) < n_units, "the sweep should be interrupted midway"

    second = run_sweep(tmp_path, "second", *args)
    assert second.returncode == 0, second.stderr
    records = list(iter_records(store))
    assert len(records) == n_units == len({r["key"] for r in records})
    statuses = unit_statuses(tmp_path / "second")
    assert statuses.count("computed") == n_units - len(done_first)
    assert statuses.count("cached") == len(done_first)
    for record in records:  # finished units were not rewritten by the second run
        wrote = Path(record["run"]["run_dir"]).parent.name
        assert wrote == ("first" if record["key"] in done_first else "second")
    jobs = sorted((tmp_path / "second").glob("*_mlknn_genbase_uniform_rate*"))
    assert len(jobs) == 4
    for job in jobs:
        assert len(pd.read_csv(job / "results.csv")) == 2 * 7  # stored and computed units

    start = time.monotonic()
    third = run_sweep(tmp_path, "third", *args)
    seconds = time.monotonic() - start
    assert third.returncode == 0, third.stderr
    assert unit_statuses(tmp_path / "third") == ["cached"] * n_units
    assert len(list(iter_records(store))) == n_units
    print(f"third run (nothing to compute): {seconds:.1f} s")


def test_failing_unit_is_recorded_and_the_sweep_goes_on(tmp_path, fragile_env):
    args = ["method=fragile", *SMALL[1:], "method.explode=0,1"]
    proc = run_sweep(tmp_path, "sweep", *args, env=fragile_env)
    assert proc.returncode == 0, proc.stderr
    assert "error:" in proc.stdout and "ValueError" in proc.stdout
    failures = list(iter_outcomes(tmp_path / "store", Status.FAILED))
    assert sorted(f["unit"]["split"] for f in failures) == [0, 1]
    assert all(f["unit"]["method"]["explode"] == 1 for f in failures)
    assert all("Traceback" in f["traceback"] and "synthetic" in f["traceback"] for f in failures)
    assert len(list(iter_records(tmp_path / "store"))) == 2
    ok, bad = sorted((tmp_path / "sweep").glob("*_fragile_genbase_uniform_rate1"))
    assert (ok / "results.csv").exists() and not (bad / "results.csv").exists()
    assert json.loads((bad / "units.json").read_text())["units"][0]["status"] == "failed"


def test_single_run_with_failing_unit_exits_nonzero_in_one_line(tmp_path, fragile_env):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pmlbench",
            "method=fragile",
            *SMALL[1:],
            "method.explode=1",
            "quiet=true",
            f"results_store={tmp_path / 'store'}",
            f"hydra.run.dir={tmp_path / 'run'}",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=fragile_env,
        timeout=600,
    )
    assert proc.returncode == 1
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith("error:")]
    assert "ValueError" in line and "units.json" in line
    assert "Traceback" not in proc.stdout + proc.stderr


@pytest.mark.parametrize(
    "launcher",
    [
        "basic",
        pytest.param("joblib", marks=pytest.mark.slow),
        pytest.param("submitit_local", marks=pytest.mark.slow),
    ],
)
def test_multirun_with_launcher(tmp_path, launcher):
    proc = run_sweep(tmp_path, "sweep", f"hydra/launcher={launcher}", *SMALL, "noise.rate=0.5,2.0")
    assert proc.returncode == 0, proc.stderr
    # job directories name the noise level as reports label it (issue 35 item 7), resolved
    # in the process that runs the job whatever the launcher
    jobs = sorted(p for p in (tmp_path / "sweep").iterdir() if p.is_dir() and p.name[0].isdigit())
    assert [job.name for job in jobs] == [
        "0_mlknn_genbase_uniform_rate0.5",
        "1_mlknn_genbase_uniform_rate2",
    ]
    rates = [pd.read_csv(job / "results.csv")["noise_rate"].unique()[0] for job in jobs]
    assert rates == [0.5, 2.0]
    assert len(list(iter_records(tmp_path / "store"))) == 4


def test_named_sweeps_compose(tmp_path):
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from pmlbench.hydra_app.config_nodes import register_config_nodes
    from pmlbench.hydra_app.config_tree import config_dir

    register_config_nodes()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        paper = compose("config", overrides=["+experiment=paper"], return_hydra_config=True)
        sensitivity = compose(
            "config",
            overrides=[
                "+experiment=paper_sensitivity",
                "+experiment/sensitivity=lambda2",
                "sensitivity_value=0.01",
            ],
        )
        slurm = compose("config", overrides=["hydra/launcher=slurm"], return_hydra_config=True)
    GlobalHydra.instance().clear()
    params = paper.hydra.sweeper.params
    assert set(params["dataset"].split(",")) == {"arts", "bibtex", "corel5k", "genbase", "medical"}
    assert params["noise.rate"].split(",") == ["0.5", "1.0", "1.5", "2.0"]
    assert "pml3er" in params["method"] and "mlknn" in params["method"]
    assert paper.protocol.n_splits == 5
    assert sensitivity.method.lambda2 == 0.01 and sensitivity.method.lambda1 == 1.0
    assert sensitivity.tune.grid.lambda2 is None and sensitivity.noise.rate == 1.0
    launcher = slurm.hydra.launcher
    assert "SlurmLauncher" in launcher._target_
    assert {"partition", "timeout_min", "array_parallelism", "cpus_per_task"} <= set(launcher)


def test_the_paper_experiment_declines_no_unit_up_front():
    """Every method of +experiment=paper runs on every one of the paper's datasets: the
    suite's budget caps are the methods' defaults, and none may decline a unit of the paper's
    comparison. Plain LIFT's cap on labels declines bibtex and corel5k (the tuned suite's
    archive holds those units declined), so the sweep runs LIFT as the preset lift_paper,
    without it; the other methods' units are units the archive holds finished (the same
    description, at the rates the suite shares with the paper)."""
    import numpy as np
    from omegaconf import OmegaConf

    from pmlbench.api import compose_config
    from pmlbench.protocol.experiment import prepare
    from pmlbench.runner.costmodel import CostModel, load_source, unit_signature
    from pmlbench.runner.run import spec_from_config
    from pmlbench.runner.units import describe_units

    archive = ROOT / "docs" / "leaderboard-results.tar.xz"
    finished = {unit_signature(r["unit"]) for r in load_source(archive).records}
    shipped = CostModel.load()
    params = OmegaConf.load(ROOT / "conf" / "experiment" / "paper.yaml").hydra.sweeper.params
    methods, datasets = params["method"].split(","), params["dataset"].split(",")
    assert "lift_paper" in methods and "lift" not in methods

    def first_unit(method: str, dataset: str, rate: float):
        config = compose_config(
            ["+experiment=paper", f"method={method}", f"dataset={dataset}", f"noise.rate={rate}"]
        )
        spec = spec_from_config(config)
        plugins = prepare(spec)
        return plugins, describe_units(spec, plugins.registrations).descriptions[0]

    for dataset in datasets:
        n, _, q = shipped.dataset_size(dataset)
        n_train = n - (n + 1) // 2  # the paper's 50/50 split
        for method in methods:
            for rate in (0.5, 1.0, 2.0):
                plugins, unit = first_unit(method, dataset, rate)
                if method != "lift_paper":
                    assert unit_signature(unit) in finished, (method, dataset, rate)
                    continue
                assert unit["method"]["name"] == "lift" and unit["method"]["max_labels"] is None
                estimator = plugins.method.build(0)
                estimator._check_cost(np.empty((n_train, 1)), np.empty((n_train, q)))
                capped = unit_signature(first_unit("lift", dataset, rate)[1])
                assert (capped in shipped.declined) == (dataset in ("bibtex", "corel5k"))


def test_identical_sweeps_started_together_get_their_own_directories(tmp_path):
    """The default sweep directory ends with a random token: no shared job directories."""
    command = [
        sys.executable,
        "-m",
        "pmlbench",
        "-m",
        *SMALL,
        "noise.rate=0.5,2.0",
        "results_store=null",
        "quiet=true",
    ]
    procs = [
        subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(2)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err.decode()
    sweeps = sorted((tmp_path / "outputs" / "multirun").glob("*/*"))
    assert len(sweeps) == 2, sweeps
    for sweep in sweeps:
        jobs = sorted(sweep.glob("*_mlknn_genbase_uniform_rate*"))
        assert [job.name.split("_")[0] for job in jobs] == ["0", "1"]
        for job in jobs:
            assert len(pd.read_csv(job / "results.csv")) == 2 * 7
            assert json.loads((job / "units.json").read_text())["units"]


@pytest.mark.parametrize("stop", ["results_store", "plain"])
def test_a_job_stopped_before_its_units_is_counted_and_named(tmp_path, stop):
    """A job that stops before its units (a results_store it refuses; PLAIN without PyTorch,
    at preparation) counts as ended in the progress and the summary, which names it; a rerun
    into the same sweep directory that runs it forgets the stop."""
    if stop == "plain" and __import__("importlib").util.find_spec("torch") is not None:
        pytest.skip("PLAIN stops at preparation only without PyTorch")
    (tmp_path / "afile").write_text("not a store")
    store = tmp_path / "store"
    sweep = (
        ["method=mlknn", f"results_store={tmp_path / 'afile'},{store}"]
        if stop == "results_store"
        else ["method=plain,mlknn", f"results_store={store}"]
    )
    common = ["dataset=genbase", "protocol.n_splits=1", "cache_dir=null"]
    command = [sys.executable, "-m", "pmlbench", "-m", *sweep, *common]
    proc = subprocess.run(
        [*command, f"hydra.sweep.dir={tmp_path / 'sweep'}"],
        capture_output=True, text=True, cwd=tmp_path, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    job = "0_" + ("mlknn" if stop == "results_store" else "plain") + "_genbase_uniform_rate1"
    reason = "is a file, not a directory" if stop == "results_store" else "PLAIN needs PyTorch"
    assert reason in (tmp_path / "sweep" / job / "error.txt").read_text()
    progress = [line for line in out.splitlines() if line.startswith("sweep ")]
    assert "1/2 jobs" in progress[0] and "stopped outside any unit (error.txt)" in progress[0]
    assert "2/2 jobs" in progress[1], out
    assert (
        "sweep done: 2 jobs, 1 units: 1 computed, 0 reused from the result store, "
        f"0 declined (n/a), 0 failed, 1 job stopped outside any unit ({job}: error.txt says why)"
    ) in out
    assert "rerunning the sweep retries failures" in out
    if stop == "results_store":  # the same directory again, the job now able to run
        again = subprocess.run(
            [*command[:5], f"results_store={store}", *common,
             f"hydra.sweep.dir={tmp_path / 'sweep'}"],
            capture_output=True, text=True, cwd=tmp_path, timeout=600,
        )  # fmt: skip
        assert again.returncode == 0, again.stdout + again.stderr
        assert not (tmp_path / "sweep" / job / "error.txt").exists()
        # job 1's directory of the first run is still there: 2 jobs, 1 unit reused now
        assert (
            "sweep done: 2 jobs, 2 units: 1 computed, 1 reused from the result store, "
            "0 declined (n/a), 0 failed\n"
        ) in again.stdout
