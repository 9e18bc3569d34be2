"""Writing a run's results: results.csv, run.json and optional per-split predictions."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from pmlbench.core.atomic import atomic_write, atomic_write_text
from pmlbench.protocol.experiment import ExperimentResult
from pmlbench.runner.format import tidy_records

RESULTS_FILE = "results.csv"
RECORD_FILE = "run.json"
PREDICTIONS_DIR = "predictions"
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
    root = Path(__file__).resolve().parent.parent
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
                out_dir / PREDICTIONS_DIR / f"split_{split.index}.npz",
                lambda p, a=split.arrays: _save_npz(p, a),
            )
    atomic_write_text(
        out_dir / RECORD_FILE,
        json.dumps(run_record(result, config), indent=2, default=_json_default),
    )
    # results.csv last: its presence marks a complete run
    atomic_write(out_dir / RESULTS_FILE, lambda p: tidy_records(result).to_csv(p, index=False))
    return out_dir / RESULTS_FILE


def _save_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    with open(path, "wb") as handle:
        np.savez_compressed(handle, **arrays)


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)
