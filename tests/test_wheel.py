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
