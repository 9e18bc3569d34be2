"""The synthetic results the report benchmarks time are results the report reads in full.

benchmarks/bench_report.py and benchmarks/bench_report_html.py write a paper-sized sweep
(benchmarks/synthetic_results.py) and time the report of it. If the store's reader came to
leave those units out (as damaged records, say), the benchmarks would time a report of
nothing, or stop; these tests keep their inputs valid as the readers change.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from pmlbench.report.sources import load_results

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture
def benchmarks(monkeypatch):
    """Import a benchmark script as its command line does (benchmarks/ first on the path)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    yield importlib.import_module
    for name in ("bench_report", "bench_report_html", "synthetic_results"):
        sys.modules.pop(name, None)


def test_the_html_benchmark_store_is_read_in_full(benchmarks, tmp_path):
    bench = benchmarks("bench_report_html")
    sweep = benchmarks("synthetic_results")
    units, rows = bench.write_store(tmp_path / "store")
    assert (units, rows) == (600, 4200)
    loaded = load_results([tmp_path / "store"])
    assert loaded.failures.empty
    assert len(loaded.records) == rows
    assert set(loaded.records["method"]) == set(sweep.METHODS)
    assert loaded.records.groupby(["dataset", "noise_rate", "method", "split"]).ngroups == units


def test_the_report_benchmark_results_are_read_in_full(benchmarks, tmp_path):
    bench = benchmarks("bench_report")
    rows = bench.write_synthetic(tmp_path / "multirun")
    assert rows == 4200
    loaded = load_results([tmp_path / "multirun"])
    assert loaded.failures.empty and not loaded.incomplete
    assert len(loaded.records) == rows and len(loaded.files) == 120
