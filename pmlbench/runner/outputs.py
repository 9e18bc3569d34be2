"""Writing a run's results: results.csv, run.json and optional per-split predictions.

File names and encodings are those of pmlbench.runner.format.
"""

from __future__ import annotations

import platform
import subprocess
import sys
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Any

from pmlbench.core.atomic import atomic_write, atomic_write_text
from pmlbench.protocol.experiment import ExperimentResult
from pmlbench.runner.format import (
    RESULTS_FILE,
    RUN_RECORD_FILE,
    RUN_RECORD_INDENT,
    predictions_path,
    save_npz,
    tidy_records,
    to_json,
)

PACKAGES = (
    "pmlbench",
    "numpy",
    "scipy",
    "scikit-learn",
    "pandas",
    "statsmodels",
    "hydra-core",
    "omegaconf",
    "rich",
    "threadpoolctl",
)


def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def git_commit() -> str | None:
    """The commit of the pmlbench checkout this code runs from (None when installed)."""
    root = Path(__file__).resolve().parents[2]  # pmlbench/runner/outputs.py -> checkout
    if not (root / ".git").exists():
        return None
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() + ("-dirty" if dirty else "")


def run_record(result: ExperimentResult, config: dict[str, Any]) -> dict[str, Any]:
    """The JSON run record: resolved config, seeds, versions, commit, per-split summaries."""
    return {
        "config": config,
        "dataset": result.dataset_summary,
        "noise": result.noise_name,
        "seeds": [s.seeds for s in result.splits],
        "splits": [
            {
                "split": s.index,
                "n_train": s.n_train,
                "n_test": s.n_test,
                "fit_seconds": s.fit_seconds,
                "predict_seconds": s.predict_seconds,
                "bipartition": s.bipartition,
                "bipartition_fitted": s.bipartition_fitted,
                "tuned": s.tuned,
                "tuning": s.tuning,
                "diagnostics": s.diagnostics,
                "n_degenerate": s.n_degenerate,
            }
            for s in result.splits
        ],
        "versions": package_versions(),
        "git_commit": git_commit(),
        "command": sys.argv,
    }


def write_results(result: ExperimentResult, config: dict[str, Any], out_dir: str | Path) -> Path:
    """Write results.csv, run.json and (if asked) predictions/split_<i>.npz atomically."""
    out_dir = Path(out_dir)
    for split in result.splits:
        if split.arrays:
            atomic_write(
                predictions_path(out_dir, split.index), partial(save_npz, arrays=split.arrays)
            )
    atomic_write_text(
        out_dir / RUN_RECORD_FILE, to_json(run_record(result, config), indent=RUN_RECORD_INDENT)
    )
    # results.csv last: its presence marks a complete run
    atomic_write(out_dir / RESULTS_FILE, lambda p: tidy_records(result).to_csv(p, index=False))
    return out_dir / RESULTS_FILE
