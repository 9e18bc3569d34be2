"""A sweep through the SLURM launcher on a real one-node cluster: one array task cancelled
midway with scancel (every process of it ends, the held unit's pool included, and the store
holds nothing of the held unit), the same command run again, every unit stored exactly once.

Needs a running cluster whose node sinfo shows idle; on Debian, as root::

    apt-get install slurm-wlm munge
    scripts/slurm_local_cluster.sh start

(.ci/run does both.) Skipped otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from pmlbench.runner.status import Status
from pmlbench.runner.store import iter_outcomes, iter_records

pytest.importorskip("hydra_plugins.hydra_submitit_launcher", reason="needs .[launchers]")

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "slurm_local_cluster.sh"
STATE_DIR = Path(os.environ.get("PMLBENCH_SLURM_DIR", "/var/tmp/pmlbench-slurm"))
NOISE_RATES = ["0.5", "1.0", "1.5"]
# each job's directory names its noise level (conf/config.yaml's hydra.sweep.subdir)
JOB_DIRS = [f"{n}_gated_genbase_uniform_rate{r}" for n, r in enumerate(["0.5", "1", "1.5"])]
N_SPLITS = 2
N_METRICS = 7


def cluster_state() -> str | None:
    """The state sinfo reports for the first node, or None without a cluster."""
    if shutil.which("sinfo") is None:
        return None
    try:
        out = subprocess.run(
            ["sinfo", "-h", "-N", "-o", "%T"], capture_output=True, text=True, timeout=20
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = out.stdout.split()
    return lines[0] if out.returncode == 0 and lines else None


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        cluster_state() not in ("idle", "mixed"),
        reason=(
            "no idle SLURM node: install Debian's packages slurm-wlm munge and start a "
            f"one-node cluster with {SCRIPT.relative_to(SCRIPT.parents[1])} start"
        ),
    ),
]

GATED = """
import os
import time
from pathlib import Path

from joblib.externals.loky import get_reusable_executor

from pmlbench.methods.mlknn import MLkNN


def _hold(gate, marks):
    \"\"\"Wait in a worker process of the unit's own pool while the gate is closed.\"\"\"
    (Path(marks) / str(os.getpid())).touch()
    deadline = time.monotonic() + 600
    while (Path(gate) / "closed").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    return os.getpid()


class Gated(MLkNN):
    \"\"\"ML-kNN whose second fit in an array task waits while the file ``<gate>/closed``
    exists, in two loky worker processes of its own, after writing its pid to
    ``<gate>/waiting/<array job id>_<task id>``: a job held midway, its first unit stored and
    its second not, with a pool as LIFT's or PARTICLE-VLS's. ``gate`` names a directory,
    which unit keys do not cover (a file named in the config would be, and opening the gate
    would change them). Fits are counted in files (``<gate>/fitted/<job>``): each unit runs
    in a forked child, where a class attribute would start again from zero.\"\"\"

    default_tuning_grid = {}  # one fit per unit

    def __init__(self, k=10, s=1.0, gate=""):
        super().__init__(k, s)
        self.gate = gate

    def fit(self, X, Y):
        gate = Path(self.gate) / "closed"
        job = os.environ.get("SLURM_ARRAY_JOB_ID", "") + "_" + os.environ.get(
            "SLURM_ARRAY_TASK_ID", ""
        )
        fitted = Path(self.gate) / "fitted" / job if self.gate else None
        again = fitted is not None and fitted.exists()
        if fitted is not None:
            fitted.parent.mkdir(exist_ok=True)
            fitted.touch()
        if again and gate.exists():
            marks = Path(self.gate) / "pool" / job
            marks.mkdir(parents=True, exist_ok=True)
            pool = get_reusable_executor(max_workers=2)
            held = [pool.submit(_hold, self.gate, str(marks)) for _ in range(2)]
            deadline = time.monotonic() + 600
            while len(list(marks.glob("*"))) < 2:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            waiting = Path(self.gate) / "waiting"
            waiting.mkdir(exist_ok=True)
            (waiting / job).write_text(str(os.getpid()))
            for future in held:
                future.result()
        return super().fit(X, Y)
"""


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    """A method plugin ``gated`` (an installed distribution on PYTHONPATH, which sbatch passes
    on to the jobs) and the script's sacct stand-in first on PATH (no accounting here)."""
    root = tmp_path / "gated_dist"
    root.mkdir()
    (root / "gated_pml.py").write_text(GATED)
    info = root / "pmlbench_gated-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pmlbench-gated\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[pmlbench.methods]\ngated = gated_pml:Gated\n")
    path = os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])
    search = os.environ.get("PATH", "")
    if (STATE_DIR / "bin" / "sacct").is_file():
        search = os.pathsep.join([str(STATE_DIR / "bin"), search])
    return {**os.environ, "PYTHONPATH": path, "PATH": search}


def run(*command: str) -> str:
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{' '.join(command)}: {exc}\n"
    return proc.stdout + proc.stderr


def diagnostics(tmp_path: Path) -> str:
    """squeue, the daemons' logs, the launcher's output and the jobs' logs."""
    parts = ["--- squeue --states=all", run("squeue", "--states=all", "-o", "%i %T %r %M %N")]
    for log in [
        STATE_DIR / "slurmctld.log",
        STATE_DIR / "slurmd.log",
        tmp_path / "first.log",
        *sorted((tmp_path / "sweep" / ".submitit").glob("*/*_log.*")),
    ]:
        if log.is_file():
            lines = log.read_text(errors="replace").splitlines()[-25:]
            parts += [f"--- last lines of {log}", "\n".join(lines)]
    return "\n".join(parts)


def wait_for(what: str, condition, seconds: float, tmp_path: Path, proc=None) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if proc is not None and proc.poll() is not None:
            pytest.fail(
                f"the sweep exited ({proc.returncode}) while waiting for {what}\n"
                + diagnostics(tmp_path)
            )
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} after {seconds:.0f} s\n" + diagnostics(tmp_path))
        time.sleep(0.2)


def task_state(job: str) -> str:
    out = run("squeue", "--states=all", "-h", "-o", "%T", "-j", job).split()
    return out[0] if out else "GONE"


def job_processes(job: str) -> dict[int, str]:
    """pid -> command line of every process of array task ``job`` (``<array>_<task>``): those
    whose environment holds its SLURM_ARRAY_JOB_ID and SLURM_ARRAY_TASK_ID, which every
    process the task starts inherits, whatever session it moved to (Linux /proc)."""
    array, task = job.split("_")
    wanted = {f"SLURM_ARRAY_JOB_ID={array}".encode(), f"SLURM_ARRAY_TASK_ID={task}".encode()}
    found = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if wanted <= set((entry / "environ").read_bytes().split(b"\0")):
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
                found[int(entry.name)] = command.decode(errors="replace")[:160]
        except OSError:  # ended while we looked
            continue
    return found


def still_running(pid: int, command: str) -> bool:
    """Whether ``pid`` is still the process seen with ``command`` and not a zombie waiting
    for its parent (its number may have been reused by then)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        now = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return False
    return state != "Z" and now.decode(errors="replace")[:160] == command


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def test_slurm_sweep_cancelled_midway_resumes_each_unit_once(tmp_path, env):
    gate_dir = tmp_path / "gate"
    gate_dir.mkdir()
    gate = gate_dir / "closed"
    gate.touch()
    store = tmp_path / "store"
    command = [
        sys.executable,
        "-m",
        "pmlbench",
        "-m",
        "method=gated",
        f"method.gate={gate_dir}",
        "dataset=genbase",
        f"noise.rate={','.join(NOISE_RATES)}",
        f"protocol.n_splits={N_SPLITS}",
        "hydra/launcher=slurm",
        "hydra.launcher.cpus_per_task=1",
        "hydra.launcher.mem_gb=1",
        "hydra.launcher.timeout_min=10",
        f"results_store={store}",
        f"cache_dir={tmp_path / 'cache'}",
        f"hydra.sweep.dir={tmp_path / 'sweep'}",
        "quiet=true",
    ]
    n_jobs, n_units = len(NOISE_RATES), len(NOISE_RATES) * N_SPLITS
    waiting = gate_dir / "waiting"

    # 1. the sweep; its jobs stop in their second split while the gate exists
    start = time.monotonic()
    with open(tmp_path / "first.log", "w") as log:
        first = subprocess.Popen(
            command, cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT
        )
    try:
        wait_for("array task held midway", lambda: any(waiting.glob("*")), 600, tmp_path, first)
        held = sorted(waiting.iterdir())[0]
        job, pid = held.name, int(held.read_text())
        task = int(job.split("_")[1])
        state = task_state(job)
        assert state == "RUNNING", f"{job} is {state}\n" + diagnostics(tmp_path)

        # the task's processes: the job's own, the held unit's child and its pool's workers
        running = job_processes(job)
        pool = {int(p.name) for p in (gate_dir / "pool" / job).iterdir()}
        assert {pid, *pool} <= set(running), (pid, pool, running)

        # 2. scancel it midway, wait until all its processes are gone, then let the others
        # finish
        subprocess.run(["scancel", job], check=True, timeout=30)
        wait_for(
            f"end of every process of cancelled task {job} (unit pid {pid})",
            lambda: not job_processes(job) and task_state(job) not in ("RUNNING", "COMPLETING"),
            120,
            tmp_path,
        )
        assert not [p for p, command in running.items() if still_running(p, command)], running
        cancelled_state = task_state(job)
        # nothing partial in the store: no temporary file, nothing of the held unit
        assert not [f.name for f in store.iterdir() if not f.name.endswith(".json")]
        assert not [
            r
            for r in iter_records(store)
            if r["run"]["run_dir"].endswith(f"/{JOB_DIRS[task]}") and r["unit"]["split"] == 1
        ]
        gate.unlink()
        first.wait(timeout=300)
    except subprocess.TimeoutExpired:
        pytest.fail(
            "the first sweep did not end after its array ended (no sacct stand-in on PATH?)\n"
            + diagnostics(tmp_path)
        )
    finally:
        gate.unlink(missing_ok=True)  # on failure too: no job stays held
        if first.poll() is None:
            first.kill()
            first.wait()
    first_seconds = time.monotonic() - start
    output = (tmp_path / "first.log").read_text()
    assert cancelled_state == "CANCELLED", diagnostics(tmp_path)
    assert first.returncode == 1, "a sweep with a cancelled job should fail\n" + output
    errors = [line for line in output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"({job}: CANCELLED)" in errors[0], output
    assert "Traceback" not in output, output
    done = {r["key"]: r for r in iter_records(store)}
    assert len(done) == n_units - 1, "all but the cancelled unit\n" + diagnostics(tmp_path)
    held_units = {
        r["unit"]["split"]
        for r in done.values()
        if r["run"]["run_dir"].endswith(f"/{JOB_DIRS[task]}")
    }
    assert held_units == {0}, f"task {task} was cancelled after its split 0, before its split 1"

    # 3. the same command again: only the cancelled unit is computed
    start = time.monotonic()
    rerun_from = time.time()
    second = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    second_seconds = time.monotonic() - start
    assert second.returncode == 0, second.stdout + second.stderr + diagnostics(tmp_path)

    files = sorted(p.name for p in store.iterdir())
    assert len([f for f in files if f.endswith(".json")]) == n_units, files
    assert not [f for f in files if f.endswith(".tmp")], f"temporary files left: {files}"
    assert not list(iter_outcomes(store, Status.FAILED))
    records = list(iter_records(store))
    assert len(records) == n_units == len({r["key"] for r in records})
    units = {(r["unit"]["noise"]["rate"], r["unit"]["split"]) for r in records}
    assert len(units) == n_units, f"a unit stored twice under different keys: {sorted(units)}"
    for record in records:  # the units of the first run were not rewritten
        again = record["run"]["unix_time"] >= rerun_from
        assert again == (record["key"] not in done), record["key"]
    statuses = []
    for number in range(n_jobs):
        job_dir = tmp_path / "sweep" / JOB_DIRS[number]
        results = pd.read_csv(job_dir / "results.csv")
        assert len(results) == N_SPLITS * N_METRICS, job_dir
        units_file = json.loads((job_dir / "units.json").read_text())["units"]
        statuses += [(number, u["split"], u["status"]) for u in units_file]
    computed = [s for s in statuses if s[2] == "computed"]
    assert computed == [(task, 1, "computed")], statuses
    assert len(statuses) == n_units
    print(f"first sweep (cancelled {job}): {first_seconds:.0f} s; rerun: {second_seconds:.0f} s")
