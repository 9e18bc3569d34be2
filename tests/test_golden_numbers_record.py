"""benchmarks/golden_numbers.py's ``record`` without running a sweep: the commands it runs are
replaced by a stand-in that writes what the sweep and the report would, so this checks which
files it writes and when it skips the report (tests/test_golden_numbers.py runs it for real).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "golden_numbers.py"


@pytest.fixture
def golden(monkeypatch):
    """The script as a module, its subprocess calls recorded and answered with files."""
    spec = importlib.util.spec_from_file_location("golden_numbers", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    calls: list[list[str]] = []

    def run(command, **kwargs):
        calls.append(command)
        if "report" in command:  # pmlbench report <sweep> ... --out <dir>
            out = Path(command[command.index("--out") + 1])
            out.mkdir()
            (out / "wtl.csv").write_text("method,wins\nb,1\n")
            return
        sweep = Path(next(a for a in command if a.startswith("hydra.sweep.dir=")).split("=")[1])
        methods = next(a for a in command if a.startswith("method=")).split("=")[1].split(",")
        for index, method in enumerate(methods):
            job = sweep / f"{index}_{method}_genbase_uniform_rate1"
            job.mkdir(parents=True)
            (job / "results.csv").write_text("metric,value,fit_seconds\nap,0.5,1.25\n")

    monkeypatch.setattr(module.subprocess, "run", run)
    module.calls = calls
    return module


def test_one_method_writes_its_runs_and_skips_the_report(golden, tmp_path, capsys):
    golden.record(tmp_path / "out", ["pmndp"])
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "run_pmndp_genbase_uniform_rate1.csv"
    ]
    assert (tmp_path / "out" / "run_pmndp_genbase_uniform_rate1.csv").read_text() == (
        "metric,value\nap,0.5\n"  # without the timing column
    )
    assert len(golden.calls) == 1  # the sweep, no report
    assert capsys.readouterr().out.splitlines() == [
        "no report_* files: the report compares pmndp with other methods",
        f"1 files in {tmp_path / 'out'}",
    ]


def test_two_methods_write_the_runs_and_the_report(golden, tmp_path):
    golden.record(tmp_path / "out", ["pml_lrig", "pmndp"])
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "report_wtl.csv",
        "run_pml_lrig_genbase_uniform_rate1.csv",
        "run_pmndp_genbase_uniform_rate1.csv",
    ]
    report = golden.calls[1]
    assert report[report.index("--reference") + 1] == "pml_lrig"
