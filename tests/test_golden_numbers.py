"""No structural change may change a number: the fixed runs of benchmarks/golden_numbers.py
(every built-in method on genbase and medical, two splits, and their report) must reproduce
the reference dump in tests/golden/ exactly, timing columns aside.

When a change is meant to change numbers (a corrected statistic, a fixed method), re-record
the reference in the same commit and say which files changed and why:

    python benchmarks/golden_numbers.py record tests/golden
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def test_fixed_runs_reproduce_the_reference_numbers(tmp_path):
    script = ROOT / "benchmarks" / "golden_numbers.py"
    subprocess.run(
        [sys.executable, str(script), "record", str(tmp_path / "now")],
        check=True,
        capture_output=True,
    )
    compare = subprocess.run(
        [
            sys.executable,
            str(script),
            "compare",
            str(ROOT / "tests" / "golden"),
            str(tmp_path / "now"),
        ],
        capture_output=True,
        text=True,
    )
    assert compare.returncode == 0, compare.stdout
