"""Writing a run's results: results.csv, run.json and optional per-split predictions.

File names and encodings are those of pmlbench.runner.format.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd

from pmlbench.core.atomic import atomic_write, atomic_write_text
from pmlbench.core.safe_text import csv_frame
from pmlbench.protocol.experiment import NATURAL_NOISE, ExperimentResult
from pmlbench.runner.format import (
    LIBRARY_SEPARATOR,
    NOISE_PREFIX,
    PARAM_PREFIX,
    RESULTS_FILE,
    RUN_RECORD_FILE,
    RUN_RECORD_INDENT,
    parameter_columns,
    predictions_path,
    save_npz,
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
    """Versions of Python and the packages that compute a result, plus the machine's CPU and
    BLAS/LAPACK libraries (:func:`machine_description`)."""
    versions = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    versions.update(machine_description())
    return versions


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo on Linux, else what the platform module says)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def machine_description() -> dict[str, str]:
    """``cpu`` (model, logical cores) and ``blas`` (each loaded BLAS/LAPACK library with its
    version and the kernel it runs, as threadpoolctl reports them, sorted).

    The kernel names where a number could have come from: pmlbench's results do not depend
    on it (docs/protocol.md, "Reproducibility"), and this is how a user checks that claim.
    """
    import numpy.linalg  # noqa: F401  (loads numpy's BLAS, so that it is listed)
    import scipy.linalg  # noqa: F401  (loads scipy's BLAS/LAPACK)
    from threadpoolctl import threadpool_info

    libraries = []
    for info in threadpool_info():
        if info.get("user_api") != "blas":
            continue
        name = str(info.get("internal_api") or info.get("prefix") or "blas")
        kernel = info.get("architecture") or "unknown kernel"
        entry = f"{name} {info.get('version') or '?'} ({kernel})"
        if entry not in libraries:
            libraries.append(entry)
    return {
        "cpu": f"{cpu_model()}, {os.cpu_count() or '?'} logical cores",
        # sorted: processes of the same code load them in varying orders
        "blas": LIBRARY_SEPARATOR.join(sorted(libraries)) or "none found",
    }


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


def tidy_records(result: ExperimentResult) -> pd.DataFrame:
    """The rows of results.csv: one per split x metric with the run's identifying columns (a
    tuned parameter's column holds its grid, pmlbench.runner.format.parameter_columns)."""
    spec = result.spec
    noise_columns = (
        {} if result.noise_name == NATURAL_NOISE else parameter_columns(spec.noise, NOISE_PREFIX)
    )
    method_columns = parameter_columns(spec.method, PARAM_PREFIX, (spec.tune or {}).get("grid"))
    rows = []
    for split in result.splits:
        for name, value in split.values.items():
            metric = result.metrics[name]
            rows.append(
                {
                    "dataset": result.dataset_summary["name"],
                    "noise": result.noise_name,
                    **noise_columns,
                    "method": spec.method["name"],
                    **method_columns,
                    "seed": spec.seed,
                    "split": split.index,
                    "metric": name,
                    "value": value,
                    "higher_is_better": metric.higher_is_better,
                    "convention": spec.metric_convention,
                    "bipartition": split.bipartition,
                    "tuned": ";".join(f"{k}={v}" for k, v in sorted(split.tuned.items())),
                    "oracle": bool(split.tuning.get("oracle", False)),
                    "n_train": split.n_train,
                    "n_test": split.n_test,
                    "n_degenerate": split.n_degenerate,
                    "fit_seconds": split.fit_seconds,
                    "predict_seconds": split.predict_seconds,
                    # training-side measures of the split (disambiguation_auc, ...)
                    **split.training_measures,
                }
            )
    return pd.DataFrame(rows)


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


def clear_results(out_dir: str | Path, keep: set[int] | frozenset[int] = frozenset()) -> None:
    """Remove results.csv, run.json and the predictions of splits not in ``keep`` that an
    earlier run left in ``out_dir`` (a fixed ``hydra.run.dir`` or ``hydra.sweep.dir`` reused):
    a run whose units now fail or time out must not leave the old numbers beside its
    units.json."""
    out_dir = Path(out_dir)
    if not keep:
        for name in (RESULTS_FILE, RUN_RECORD_FILE):
            (out_dir / name).unlink(missing_ok=True)
    for path in predictions_path(out_dir, 0).parent.glob("split_*.npz"):
        index = path.stem.removeprefix("split_")
        if not (index.isdigit() and int(index) in keep):
            path.unlink(missing_ok=True)


def write_results(result: ExperimentResult, config: dict[str, Any], out_dir: str | Path) -> Path:
    """Write results.csv, run.json and (if asked) predictions/split_<i>.npz atomically;
    predictions of other splits left by an earlier run in ``out_dir`` are removed.

    results.csv (:func:`tidy_records`) is written once, its text as CSV cells that act on
    nothing (pmlbench.core.safe_text.csv_frame: hidden characters escaped, no cell a
    spreadsheet runs as a formula): a plugin's parameter default, a user's parameter value
    or a dataset's name may hold an escape sequence or ``=HYPERLINK(...)``."""
    out_dir = Path(out_dir)
    clear_results(out_dir, keep={split.index for split in result.splits})
    for split in result.splits:
        if split.arrays:
            atomic_write(
                predictions_path(out_dir, split.index), partial(save_npz, arrays=split.arrays)
            )
    atomic_write_text(
        out_dir / RUN_RECORD_FILE, to_json(run_record(result, config), indent=RUN_RECORD_INDENT)
    )
    # results.csv last: its presence marks a complete run
    rows = csv_frame(tidy_records(result))
    atomic_write(out_dir / RESULTS_FILE, lambda p: rows.to_csv(p, index=False))
    return out_dir / RESULTS_FILE
