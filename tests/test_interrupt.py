"""Stopping a joblib sweep with real signals: Ctrl-C (SIGINT to the process group) and
SIGTERM (to the main process alone, as ``kill`` and schedulers send it, or to the group).

The sweep runs two jobs in two joblib workers: one finishes both its units, the other holds
its first unit in two loky worker processes of the unit's own while a gate file exists. The
signal comes while it is held. Afterwards: the conventional exit status (130, 143), one line
on stderr and no library noise (joblib's "leaked semlock objects"), no process of the sweep
left (launcher workers, units, their pools, resource trackers), nothing of theirs left in
/dev/shm, the finished units in the store and nothing of the held one; the same command
then computes only the held job's units. Every process the sweep starts inherits an
environment variable naming the test, which is how the test finds them, wherever they were
re-parented.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from pmlbench.runner.store import iter_records

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
    pytest.mark.skipif(
        __import__("importlib").util.find_spec("hydra_plugins.hydra_joblib_launcher") is None,
        reason="needs .[launchers]",
    ),
]

TOKEN = "PMLBENCH_TEST_SWEEP"
SECONDS = 600  # generous: the machine may be busy

HELD = '''
import os
import time
from pathlib import Path

from joblib import Parallel, delayed

from pmlbench.methods.mlknn import MLkNN


def _wait(gate):
    waiting = Path(gate) / "waiting"
    waiting.mkdir(exist_ok=True)
    (waiting / str(os.getpid())).touch()
    deadline = time.monotonic() + 900
    while (Path(gate) / "closed").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    return os.getpid()


class Held(MLkNN):
    """ML-kNN whose fit, with hold=1, first waits in two loky worker processes of its own
    while the file <gate>/closed exists (the gate is a directory, which unit keys do not
    cover, so the held units keep their keys when the gate opens)."""

    default_tuning_grid = {}  # one fit per unit

    def __init__(self, k=10, s=1.0, gate="", hold=0):
        super().__init__(k, s)
        self.gate = gate
        self.hold = hold

    def fit(self, X, Y):
        if self.hold:
            Parallel(n_jobs=2, backend="loky")(delayed(_wait)(self.gate) for _ in range(2))
        return super().fit(X, Y)
'''


@pytest.fixture(scope="module")
def held_env(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("held_dist")
    (root / "held_pml.py").write_text(HELD)
    info = root / "pmlbench_held-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pmlbench-held\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[pmlbench.methods]\nheld = held_pml:Held\n")
    path = os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, "OPENBLAS_NUM_THREADS": "1"}


def marked(token: str) -> dict[int, str]:
    """pid -> command line of every process whose environment holds ``TOKEN=token``."""
    needle = f"{TOKEN}={token}".encode()
    found = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:  # ended while we looked, or not ours to read
            continue
    return {pid: command.decode(errors="replace")[:160] for pid, command in found.items()}


def kill_all(token: str) -> None:
    for pid in marked(token):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def wait_for(what: str, condition, proc: subprocess.Popen, seconds: float = SECONDS) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if proc.poll() is not None:
            pytest.fail(f"the sweep exited ({proc.returncode}) while waiting for {what}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} after {seconds:.0f} s")
        time.sleep(0.2)


def shm_entries(pids: set[int]) -> list[str]:
    """Semaphores and memory-mapped folders in /dev/shm created by one of ``pids`` (loky and
    joblib name them after their creator)."""
    shm = Path("/dev/shm")
    if not shm.is_dir():
        return []
    found = []
    for entry in shm.iterdir():
        name = entry.name.removeprefix("sem.")
        for prefix in ("loky-", "joblib_memmapping_folder_"):
            creator = name.removeprefix(prefix).split("-")[0].split("_")[0]
            if name.startswith(prefix) and creator.isdigit() and int(creator) in pids:
                found.append(entry.name)
    return found


def job_statuses(sweep: Path) -> dict[str, list[str]]:
    return {
        path.parent.name: [u["status"] for u in json.loads(path.read_text())["units"]]
        for path in sorted(sweep.glob("*/units.json"))
    }


@pytest.mark.parametrize(
    ("signum", "target", "status"),
    [
        (signal.SIGINT, "group", 130),  # Ctrl-C in a terminal
        (signal.SIGTERM, "main", 143),  # kill <pid>, a scheduler
        (signal.SIGTERM, "group", 143),  # kill -TERM -<pgid>
    ],
    ids=["ctrl-c", "sigterm-main", "sigterm-group"],
)
def test_a_stopped_joblib_sweep_leaves_nothing_running_and_resumes(
    tmp_path, held_env, signum, target, status
):
    gate = tmp_path / "gate"
    gate.mkdir()
    (gate / "closed").touch()
    store = tmp_path / "store"
    token = uuid.uuid4().hex
    env = {**held_env, TOKEN: token}
    command = [
        sys.executable,
        "-m",
        "pmlbench",
        "-m",
        "method=held",
        f"method.gate={gate}",
        "method.hold=0,1",
        "dataset=genbase",
        "protocol.n_splits=2",
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2",
        "cache_dir=null",
        f"results_store={store}",
    ]
    proc = subprocess.Popen(
        [*command, f"hydra.sweep.dir={tmp_path / 'first'}"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a process group of its own, as a shell's foreground job
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        # job 0 finished both units; job 1's first unit waits in its pool's two workers
        wait_for(
            "held unit and stored units",
            lambda: (
                len(list((gate / "waiting").glob("*"))) == 2
                and len(list(store.glob("*.json"))) == 2
            ),
            proc,
        )
        running = marked(token)
        # main, 2 launcher workers, the held unit's child, its 2 pool workers, trackers
        assert len(running) >= 6, running
        if target == "group":
            os.killpg(proc.pid, signum)
        else:
            os.kill(proc.pid, signum)
        out, err = proc.communicate(timeout=SECONDS)
        deadline = time.monotonic() + SECONDS
        while marked(token) and time.monotonic() < deadline:
            time.sleep(0.2)
        survivors = marked(token)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        leftover = marked(token)
        kill_all(token)  # nothing of this test outlives it, whatever failed
        (gate / "closed").unlink(missing_ok=True)

    assert proc.returncode == status, out + err
    lines = [line for line in err.splitlines() if line.strip()]
    name = signal.Signals(signum).name
    assert len(lines) == 1 and lines[0].startswith(f"error: stopped by {name}"), err
    assert "the same command again resumes" in lines[0]
    for noise in ("resource_tracker", "leaked", "Traceback", "Warning", "KeyboardInterrupt"):
        assert noise not in out + err, out + err
    # the stopped job prints no progress line of its own (job 0 may have printed one)
    progress = [line for line in out.splitlines() if line.startswith("sweep ")]
    assert not [line for line in progress if "method.hold=1" in line], out
    assert not survivors and not leftover, f"processes left running: {survivors or leftover}"
    assert not shm_entries(set(running)), "left in /dev/shm: " + ", ".join(
        shm_entries(set(running))
    )

    # the finished units are stored, nothing of the held one, no temporary file
    records = list(iter_records(store))
    assert len(records) == 2 and {r["unit"]["method"]["hold"] for r in records} == {0}
    assert not [p.name for p in store.iterdir() if not p.name.endswith(".json")]
    assert not (tmp_path / "first" / "1_held_genbase_uniform_rate1" / "results.csv").exists()

    # the same command again (gate open): the held job's two units, nothing else
    again = subprocess.run(
        [*command, f"hydra.sweep.dir={tmp_path / 'second'}"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=SECONDS,
    )
    kill_all(token)
    assert again.returncode == 0, again.stdout + again.stderr
    assert job_statuses(tmp_path / "second") == {
        "0_held_genbase_uniform_rate1": ["cached", "cached"],
        "1_held_genbase_uniform_rate1": ["computed", "computed"],
    }
    assert len(list(iter_records(store))) == 4
