"""Units that do not finish: not applicable (the method refuses up front) and timed out
(``unit_timeout``): how they are recorded, retried, reported, and what the job exits with."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pmlbench.errors import NotApplicable, PluginError, PmlbenchError
from pmlbench.report.sources import load_results
from pmlbench.runner.format import (
    STORE_NOT_APPLICABLE_SUFFIX,
    STORE_TIMEOUT_SUFFIX,
    load_npz,
    predictions_path,
    read_units,
    store_record_files,
)
from pmlbench.runner.run import retries_timeout, run_config
from pmlbench.runner.status import Status
from pmlbench.runner.store import (
    ResultStore,
    iter_outcomes,
    iter_records,
    load_unfinished,
)
from pmlbench.runner.timeout import (
    REMOTE_TRACEBACK,
    UnitTimedOut,
    call_with_timeout,
    check_unit_timeout,
)
from tests.helpers import plugin_env


def pmlbench(
    tmp_path: Path, *args: str, env: dict[str, str], quiet: bool = True
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pmlbench", *args, f"quiet={str(quiet).lower()}", "cache_dir=null"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=600,
    )


def job_units(sweep: Path) -> dict[str, list[dict]]:
    return {job.parent.name: read_units(job.parent) for job in sorted(sweep.glob("*/units.json"))}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (killed, not yet reaped by its new parent) counts as gone
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z")


# ----------------------------------------------------------------------------- the limit


def test_unit_timeout_is_a_positive_number_or_null():
    assert check_unit_timeout(None) is None
    assert check_unit_timeout(2) == 2.0
    for bad in (0, -1, "soon", True):
        with pytest.raises(PmlbenchError, match=r"^unit_timeout must be a number in \(0, inf\)"):
            check_unit_timeout(bad)


def test_a_unit_in_a_child_returns_its_value_or_raises_its_error():
    result = call_with_timeout(lambda: np.arange(5) * 2, 30)
    np.testing.assert_array_equal(result.value, [0, 2, 4, 6, 8])
    assert result.wall_seconds > 0 and result.cpu_seconds >= 0

    def refuse():
        raise NotApplicable("cap 10 labels; set method.cap=null")

    with pytest.raises(NotApplicable, match="cap 10 labels") as caught:
        call_with_timeout(refuse, 30)
    assert "in refuse" in getattr(caught.value, REMOTE_TRACEBACK)

    class Unpicklable(Exception):
        def __init__(self, a, b):
            super().__init__(a)

    def odd():
        raise Unpicklable("odd", 2)

    with pytest.raises(RuntimeError, match="Unpicklable: odd"):
        call_with_timeout(odd, 30)

    with pytest.raises(PluginError, match="ended without a result .exit code 3"):
        call_with_timeout(lambda: os._exit(3), 30)


def test_a_slow_unit_is_stopped_with_its_process_group(tmp_path):
    marker = tmp_path / "grandchild.pid"

    def slow():
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        marker.write_text(str(child.pid))
        time.sleep(60)

    start = time.monotonic()
    with pytest.raises(UnitTimedOut) as caught:
        call_with_timeout(slow, 1)
    assert time.monotonic() - start < 2.5
    assert 1 <= caught.value.elapsed < 2.5
    assert str(caught.value).startswith("timed out after 1.0 s (unit_timeout=1)")
    time.sleep(0.2)
    assert not alive(int(marker.read_text())), "a process the unit started outlived it"


def test_a_program_in_a_session_of_its_own_is_stopped_too(tmp_path):
    """The external adapter starts its program in a new session (outside the unit's process
    group); a unit timeout must still stop it and what it started."""
    marker = tmp_path / "program.pid"

    def slow():
        program = subprocess.Popen(
            ["sh", "-c", f"sleep 60 & echo $! > {marker}; wait"], start_new_session=True
        )
        program.wait()

    with pytest.raises(UnitTimedOut):
        call_with_timeout(slow, 1)
    time.sleep(0.2)
    assert marker.exists() and not alive(int(marker.read_text())), "the program outlived it"


def test_timed_out_units_are_retried_only_above_their_elapsed_time():
    record = {"unit_timeout": 1, "elapsed_seconds": 1.02}
    assert not retries_timeout(record, 1.0)
    assert retries_timeout(record, 2.0)
    assert retries_timeout(record, None)  # no limit: it runs to the end


# ------------------------------------------------------------- same numbers with a limit


def config(**changes) -> dict:
    from pmlbench.api import compose_config

    overrides = ["method=mlknn", "dataset=genbase", "protocol.n_splits=2", "cache_dir=null"]
    return compose_config(overrides + [f"{k}={v}" for k, v in changes.items()])


@pytest.mark.parametrize("method", ["mlknn", "pml3er"])
def test_a_limit_changes_no_number(tmp_path, method):
    cfg = config(method=method, save_predictions="true")
    without = run_config(cfg, tmp_path / "without", quiet=True)
    limited = run_config(cfg, tmp_path / "limited", quiet=True, unit_timeout=600)
    columns = [
        c
        for c in pd.read_csv(tmp_path / "without" / "results.csv").columns
        if not c.endswith("_seconds")
    ]
    pd.testing.assert_frame_equal(
        pd.read_csv(tmp_path / "without" / "results.csv")[columns],
        pd.read_csv(tmp_path / "limited" / "results.csv")[columns],
    )
    assert [s.values for s in without.splits] == [s.values for s in limited.splits]
    for split in range(2):
        a = load_npz(predictions_path(tmp_path / "without", split))
        b = load_npz(predictions_path(tmp_path / "limited", split))
        assert a.keys() == b.keys()
        for name in a:
            np.testing.assert_array_equal(a[name], b[name])
    units = read_units(tmp_path / "limited")
    assert [u["status"] for u in units] == ["computed"] * 2
    assert all(u["cpu_seconds"] > 0 and u["wall_seconds"] > 0 for u in units)


# ------------------------------------------------------------------ not applicable


@pytest.mark.parametrize("unit_timeout", [None, 60])
def test_not_applicable_units_are_recorded_and_not_retried(tmp_path, monkeypatch, unit_timeout):
    from pmlbench.methods.mlknn import MLkNN

    calls = tmp_path / "calls"
    calls.mkdir()

    def refuse(self, X, Y):
        (calls / f"{os.getpid()}-{time.time_ns()}").write_text("")
        raise NotApplicable("mlknn is capped at 10 labels here; set method.k=3 to lift it")

    monkeypatch.setattr(MLkNN, "fit", refuse)
    store = ResultStore(tmp_path / "store")
    cfg = config()
    result = run_config(
        cfg, tmp_path / "first", quiet=True, store=store, unit_timeout=unit_timeout
    )  # no UnitsFailed: n/a is not a failure
    assert result.splits == []
    assert not (tmp_path / "first" / "results.csv").exists()
    units = read_units(tmp_path / "first")
    assert [u["status"] for u in units] == ["not_applicable"] * 2
    assert all(u["reason"].startswith("mlknn is capped at 10 labels") for u in units)
    records = list(iter_outcomes(store.root, Status.NOT_APPLICABLE))
    assert sorted(r["unit"]["split"] for r in records) == [0, 1]
    assert {r["status"] for r in records} == {"not_applicable"} and len(records) == 2
    assert len(list(store.root.glob(f"*{STORE_NOT_APPLICABLE_SUFFIX}"))) == 2
    assert store_record_files(store.root) == []  # n/a files are not finished units
    assert len(list(calls.iterdir())) == 2

    run_config(cfg, tmp_path / "second", quiet=True, store=store, unit_timeout=unit_timeout)
    assert len(list(calls.iterdir())) == 2, "a rerun tried an n/a unit again"
    units = read_units(tmp_path / "second")
    assert [u["status"] for u in units] == ["not_applicable"] * 2
    assert all(u["from_store"] for u in units)

    monkeypatch.undo()  # the method now accepts the input; recompute=true tries again
    run_config(cfg, tmp_path / "third", quiet=True, store=store, recompute=True)
    assert [u["status"] for u in read_units(tmp_path / "third")] == ["computed"] * 2
    assert list(iter_outcomes(store.root, Status.NOT_APPLICABLE)) == []
    assert list(store.root.glob(f"*{STORE_NOT_APPLICABLE_SUFFIX}")) == []
    assert len(list(iter_records(store.root))) == 2


# ------------------------------------------------------------------- whole sweeps


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    return plugin_env(tmp_path_factory.mktemp("status_plugins"))


def test_sweep_with_a_slow_and_a_refusing_method_goes_on(tmp_path, env):
    pids = tmp_path / "pids"
    pids.mkdir()
    env = {**env, "PICKY_PID_DIR": str(pids)}
    sweep = [
        "-m",
        "method=picky",
        "dataset=genbase",
        "protocol.n_splits=2",
        "method.sleep=0,60",
        "method.refuse=0,1",
        "unit_timeout=1",
        f"results_store={tmp_path / 'store'}",
    ]
    start = time.monotonic()
    first = f"hydra.sweep.dir={tmp_path / 'first'}"
    proc = pmlbench(tmp_path, *sweep, first, env=env, quiet=False)
    seconds = time.monotonic() - start
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # job 2's two units would sleep 60 s each; a busy machine takes over a minute without them
    assert seconds < 120, "the sleeping units were not stopped"
    assert "Traceback" not in proc.stdout + proc.stderr

    # jobs: 0 sleep=0 refuse=0, 1 sleep=0 refuse=1, 2 sleep=60 refuse=0, 3 sleep=60 refuse=1
    statuses = {
        job: [u["status"] for u in units] for job, units in job_units(tmp_path / "first").items()
    }
    assert list(statuses.values()) == [
        ["computed", "computed"],
        ["not_applicable", "not_applicable"],
        ["timed_out", "timed_out"],
        ["not_applicable", "not_applicable"],
    ]
    timed_out = job_units(tmp_path / "first")["2_picky_genbase_uniform_rate1"]
    assert all(1 <= u["elapsed_seconds"] < 2.5 and u["unit_timeout"] == 1 for u in timed_out)
    assert (tmp_path / "first" / "0_picky_genbase_uniform_rate1" / "results.csv").exists()
    for number in (1, 2, 3):
        job = f"{number}_picky_genbase_uniform_rate1"
        assert not (tmp_path / "first" / job / "results.csv").exists()
    # the sleeping children were killed, not left to sleep
    assert len(list(pids.iterdir())) == 2
    assert not any(alive(int(p.name)) for p in pids.iterdir())

    lines = proc.stdout.splitlines()
    na = [ln for ln in lines if ln.startswith("n/a:")]
    assert (
        na
        == [
            "n/a: 2 units (splits 0, 1): picky refuses every input (cap: refuse=1); "
            "set method.refuse=0"
        ]
        * 2
    )
    errors = [ln for ln in lines if ln.startswith("error:")]
    assert len(errors) == 1 and "unit_timeout=1" in errors[0]
    assert any("2 timed out" in ln for ln in lines if ln.startswith("sweep "))
    assert sum("2 n/a" in ln for ln in lines if ln.startswith("sweep ")) == 2

    store = tmp_path / "store"
    timeouts = list(iter_outcomes(store, Status.TIMED_OUT))
    assert len(timeouts) == 2 and all(1 <= t["elapsed_seconds"] < 2.5 for t in timeouts)
    assert all(t["run"]["wall_seconds"] == t["elapsed_seconds"] for t in timeouts)
    assert len(list(iter_outcomes(store, Status.NOT_APPLICABLE))) == 4
    assert len(list(iter_records(store))) == 2
    unfinished = load_unfinished(store)
    assert sorted(unfinished["status"]) == ["not_applicable"] * 4 + ["timed_out"] * 2

    # the report lists them, from the sweep directory and from the store alike
    for source in (tmp_path / "first", store):
        loaded = load_results([source])
        assert sorted(loaded.failures["status"]) == ["not_applicable"] * 4 + ["timed_out"] * 2
        reasons = loaded.failures.set_index("status")["error"]
        assert reasons["not_applicable"].str.contains("picky refuses").all()
        assert reasons["timed_out"].str.contains("unit_timeout=1").all()
        assert set(loaded.records["split"]) == {0, 1}

    # the same command again: nothing is tried again, nothing rewritten
    before = {p.name: p.read_bytes() for p in store.iterdir()}
    start = time.monotonic()
    again = pmlbench(tmp_path, *sweep, f"hydra.sweep.dir={tmp_path / 'second'}", env=env)
    assert again.returncode == 0, again.stdout + again.stderr
    assert time.monotonic() - start < 120  # no unit sleeps again (checked below by its pid)
    assert {p.name: p.read_bytes() for p in store.iterdir()} == before
    assert len(list(pids.iterdir())) == 2  # no unit slept again
    second = job_units(tmp_path / "second")
    assert [u["status"] for u in second["0_picky_genbase_uniform_rate1"]] == ["cached"] * 2
    assert [u["status"] for u in second["1_picky_genbase_uniform_rate1"]] == ["not_applicable"] * 2
    assert [u["status"] for u in second["2_picky_genbase_uniform_rate1"]] == ["timed_out"] * 2
    assert all(u["from_store"] for u in second["2_picky_genbase_uniform_rate1"])


def test_single_runs_exit_0_when_not_applicable_and_2_when_timed_out(tmp_path, env):
    refused = pmlbench(
        tmp_path,
        "method=picky",
        "dataset=genbase",
        "protocol.n_splits=1",
        "method.refuse=1",
        f"results_store={tmp_path / 'store'}",
        f"hydra.run.dir={tmp_path / 'refused'}",
        env=env,
    )
    assert refused.returncode == 0, refused.stdout + refused.stderr
    assert "n/a: split 0: picky refuses every input" in refused.stdout
    assert "error" not in refused.stdout + refused.stderr

    slow = pmlbench(
        tmp_path,
        "method=picky",
        "dataset=genbase",
        "protocol.n_splits=1",
        "method.sleep=60",
        "unit_timeout=1",
        f"results_store={tmp_path / 'store'}",
        f"hydra.run.dir={tmp_path / 'slow'}",
        env=env,
    )
    assert slow.returncode == 2, slow.stdout + slow.stderr
    (line,) = [ln for ln in slow.stdout.splitlines() if ln.startswith("error:")]
    assert line.startswith("error: timed out after 1.")
    assert "raise unit_timeout" in line and "Traceback" not in slow.stdout + slow.stderr

    bad = pmlbench(tmp_path, "unit_timeout=-1", f"hydra.run.dir={tmp_path / 'bad'}", env=env)
    assert bad.returncode == 2
    assert "error: unit_timeout must be a number in (0, inf) or null, got -1" in bad.stdout


def test_outcome_files_replace_each_other(tmp_path):
    store = ResultStore(tmp_path)
    base = {"key": "k" * 32, "unit": {"split": 0}}
    store.save_outcome({**base, "status": "failed", "error": "boom"})
    store.save_outcome({**base, "status": "timed_out", "elapsed_seconds": 1.0})
    assert [p.name for p in tmp_path.iterdir()] == ["k" * 32 + STORE_TIMEOUT_SUFFIX]
    store.save_outcome({**base, "status": "not_applicable", "reason": "cap"})
    assert [p.name for p in tmp_path.iterdir()] == ["k" * 32 + STORE_NOT_APPLICABLE_SUFFIX]
    assert store.load_outcome("k" * 32, Status.TIMED_OUT) is None
    assert store.load_outcome("k" * 32, Status.NOT_APPLICABLE)["reason"] == "cap"
    store.save({**base, "status": "done", "records": []})
    assert [p.name for p in tmp_path.iterdir()] == ["k" * 32 + ".json"]
    assert store.load_outcome("k" * 32, Status.NOT_APPLICABLE) is None
    assert json.loads((tmp_path / ("k" * 32 + ".json")).read_text())["status"] == "done"
