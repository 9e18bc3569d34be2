"""Running one piece of pmlbench code with a given source tree, for benchmarks that compare a
baseline commit's code with this tree's in the same run."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path


def exit_on_sigterm() -> None:
    """Turn SIGTERM into ``SystemExit``, so that a stopped benchmark kills the unit it is
    running (``subprocess.run`` kills its child on any exception) instead of leaving it."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


class TreeRunFailed(RuntimeError):
    """The code exited non-zero with ``tree``'s pmlbench; the message is its last error line."""


def run_in_tree(tree: Path, code: str, args: list[str]) -> dict:
    """Run ``code`` (``python -c``) with ``tree``'s pmlbench first on ``PYTHONPATH``, in a
    fresh process with one BLAS thread and ``tree`` as working directory, and return the JSON
    object of its last output line. ``code`` gets a temporary directory as ``sys.argv[1]``
    and ``args`` after it; it must print ``"source": pmlbench.__file__``, which is checked to
    lie in ``tree``."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        ),
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    with tempfile.TemporaryDirectory() as out:
        done = subprocess.run(
            [sys.executable, "-c", code, out, *args],
            env=env,
            cwd=tree,
            capture_output=True,
            text=True,
        )
    if done.returncode != 0:
        raise TreeRunFailed((done.stderr.strip().splitlines() or ["(no output)"])[-1])
    record = json.loads(done.stdout.strip().splitlines()[-1])
    if not Path(record["source"]).resolve().is_relative_to(tree.resolve()):
        raise SystemExit(f"{tree} is not the tree that ran: pmlbench from {record['source']}")
    return record


def largest_difference(a: dict[str, float], b: dict[str, float]) -> tuple[float, str]:
    """The largest |a - b| over the metrics both have (NaN equal to NaN), and which."""
    worst, where = 0.0, "-"
    for name in sorted(set(a) & set(b)):
        x, y = a[name], b[name]
        if math.isnan(x) and math.isnan(y):
            continue
        gap = abs(x - y) if not (math.isnan(x) or math.isnan(y)) else math.inf
        if gap > worst:
            worst, where = gap, name
    return worst, where
