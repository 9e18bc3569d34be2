"""An installed wheel carries the config tree and the datasets and runs without a checkout."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pandas as pd

from tests.helpers import installed_wheel  # noqa: F401 - a fixture, built once per module

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_contains_config_and_data(installed_wheel):  # noqa: F811 - the imported fixture
    wheel, _ = installed_wheel
    names = zipfile.ZipFile(wheel).namelist()
    assert "pmlbench/conf/config.yaml" in names
    bundled = sorted((ROOT / "pmlbench" / "datasets" / "data").glob("*.npz"))
    assert len(bundled) >= 19  # the paper's 5, the 10 more benchmarks, 4 real PML sets
    for path in bundled:
        assert f"pmlbench/datasets/data/{path.name}" in names
    for name in ("delicious", "corel16k001", "mirflickr5k"):
        assert f"pmlbench/datasets/data/{name}.npz" in names
    # the dry run's cost model and its sweeper
    assert "pmlbench/runner/costmodel/cost_model.json" in names
    assert "hydra_plugins/pmlbench_dry_run/pmlbench_dry_run.py" in names


def test_installed_wheel_runs_outside_the_checkout(installed_wheel, tmp_path):  # noqa: F811
    _, site = installed_wheel
    env = {**os.environ, "PYTHONPATH": str(site)}
    where = subprocess.run(
        [
            sys.executable,
            "-c",
            "import pmlbench.hydra_app.config_tree as a; print(a.__file__); print(a.config_dir())",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    module_file, conf = where.stdout.split()
    assert module_file.startswith(str(site)) and conf.startswith(str(site)), where.stdout
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pmlbench",
            "method=mlknn",
            "dataset=genbase",
            "protocol.n_splits=2",
            "quiet=true",
            f"hydra.run.dir={tmp_path / 'run'}",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    assert len(pd.read_csv(tmp_path / "run" / "results.csv")) == 2 * 7
    dry = subprocess.run(
        [sys.executable, "-m", "pmlbench", "-m", "method=mlknn,lift", "dataset=genbase",
         "dry_run=true", "results_store=null", f"hydra.sweep.dir={tmp_path / 'dry'}"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600,
    )  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    summary = dry.stdout.splitlines()[-1]
    assert summary.startswith("dry run: 10 units: ") and "from the cost model fitted to" in summary
    assert summary.endswith("; 2 jobs") and "unknown" not in summary
    # planned by the wheel's dry-run sweeper, which launches no job (no .hydra/ record)
    jobs = [p for p in (tmp_path / "dry").iterdir() if p.is_dir()]
    assert len(jobs) == 2 and all((p / "dry_run.json").is_file() for p in jobs)
    assert not any((p / ".hydra").exists() for p in jobs)
