"""Files pmlbench writes: their permissions, and disks that refuse them.

- Every kind of file a run writes (run directory, store record and arrays, cache entry)
  gets the permissions of the umask: 0644 under 022, 0600 under 077.
- A run directory, store or cache that cannot be written (read-only or full file system)
  stops the run with one line naming the path and its config key (the cache only warns,
  once), and leaves no partial file. The faults are simulated by making ``os.replace``
  fail, and, where this process may mount file systems (root, or an unprivileged user
  namespace), produced for real in a private mount namespace: a read-only bind mount and a
  full tmpfs.
"""

from __future__ import annotations

import errno
import os
import pickle
import shutil
import stat
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hydra.core.global_hydra import GlobalHydra

from pmlbench.cli.main import main as cli_main
from pmlbench.core import atomic
from pmlbench.core.atomic import UnwritablePath, atomic_write, atomic_write_text


@pytest.fixture
def umask() -> Iterator[Callable[[int], int]]:
    """Set the process's umask for the test; the old one comes back afterwards."""
    old = os.umask(0o022)
    os.umask(old)
    yield os.umask
    os.umask(old)


def run(args: list[str], capsys) -> tuple[int, str]:
    """``pmlbench <args>`` in this process, as the console script calls it."""
    try:
        code = cli_main(args)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    assert not GlobalHydra.instance().is_initialized()
    return code, captured.out + captured.err


def arguments(tmp: Path, *extra: str) -> list[str]:
    return [
        "method=mlknn",
        "dataset=genbase",
        "protocol.n_splits=2",
        "quiet=true",
        f"results_store={tmp / 'store'}",
        f"cache_dir={tmp / 'cache'}",
        f"hydra.run.dir={tmp / 'run'}",
        *extra,
    ]


def leftovers(*folders: Path) -> list[Path]:
    """Temporary files of atomic writes still lying around."""
    return [p for f in folders if f.exists() for p in f.rglob(".*.tmp")]


# ------------------------------------------------------------------------------ modes


@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o644), (0o077, 0o600)])
def test_every_file_follows_the_umask(mask, mode, umask, tmp_path, capsys):
    umask(mask)
    code, output = run(arguments(tmp_path, "save_predictions=true"), capsys)
    assert code == 0, output
    kinds = {
        "results.csv": [tmp_path / "run" / "results.csv"],
        "run.json": [tmp_path / "run" / "run.json"],
        "units.json": [tmp_path / "run" / "units.json"],
        "predictions": sorted((tmp_path / "run" / "predictions").glob("split_*.npz")),
        "store record": sorted((tmp_path / "store").glob("*.json")),
        "store arrays": sorted((tmp_path / "store").glob("*.npz")),
        "cache entry": sorted((tmp_path / "cache").rglob("*.npz")),
    }
    for kind, paths in kinds.items():
        assert paths, f"no {kind} written"
        for path in paths:
            assert stat.S_IMODE(path.stat().st_mode) == mode, f"{kind} {path}: {oct(mode)}"
    folders = [tmp_path / "store", tmp_path / "cache", tmp_path / "run" / "predictions"]
    for folder in folders:
        assert stat.S_IMODE(folder.stat().st_mode) == 0o777 & ~mask, folder


def test_atomic_write_follows_the_umask_of_the_moment(umask, tmp_path):
    for mask in (0o002, 0o027):
        umask(mask)
        path = atomic_write_text(tmp_path / f"{mask:o}.txt", "x")
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask


def test_the_rename_is_flushed_with_its_directory(tmp_path, monkeypatch):
    synced: list[bool] = []
    fsync = os.fsync

    def spy(fd: int) -> None:
        synced.append(stat.S_ISDIR(os.fstat(fd).st_mode))
        fsync(fd)

    monkeypatch.setattr(os, "fsync", spy)
    atomic_write_text(tmp_path / "a" / "f.json", "{}")
    assert synced == [False, True]  # the file's content, then the directory entry


# ------------------------------------------------------------------- unwritable places


def test_a_failing_writer_leaves_nothing(tmp_path):
    def write(path: Path) -> None:
        path.write_text("half")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(UnwritablePath) as error:
        atomic_write(tmp_path / "r.json", write)
    assert str(error.value) == (
        f"cannot write {tmp_path / 'r.json'}: no space left on device; free some space there"
    )
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError):  # not a disk problem: passes through, nothing left
        atomic_write(tmp_path / "r.json", lambda p: (_ for _ in ()).throw(ValueError("bug")))
    assert list(tmp_path.iterdir()) == []


def test_a_path_through_a_regular_file_is_one_line(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(UnwritablePath, match=r"cannot write .*/file/store/k\.json: not a direc"):
        atomic_write_text(tmp_path / "file" / "store" / "k.json", "{}")


def test_the_error_survives_pickling():
    """Launchers carry a job's exception to another process."""
    error = UnwritablePath("/s/k.json", errno.EROFS, "read-only file system").naming("x")
    copy = pickle.loads(pickle.dumps(error))
    assert (str(copy), copy.key, copy.code) == (str(error), "x", errno.EROFS)


def _failing_replace(monkeypatch, under: Path, code: int) -> None:
    """Make every rename into ``under`` fail with ``code``, as a full or read-only disk would."""
    replace = os.replace

    def fake(src, dst, *args, **kwargs):
        if Path(dst).is_relative_to(under):
            raise OSError(code, os.strerror(code), str(dst))
        return replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(atomic.os, "replace", fake)


FAULTS = [(errno.ENOSPC, "no space left on device"), (errno.EROFS, "read-only file system")]


@pytest.mark.parametrize(("code", "reason"), FAULTS, ids=["ENOSPC", "EROFS"])
@pytest.mark.parametrize("where", ["store", "run"])
def test_a_store_or_run_directory_that_refuses_writes_is_one_line(
    code, reason, where, tmp_path, monkeypatch, capsys
):
    _failing_replace(monkeypatch, tmp_path / where, code)
    status, output = run(arguments(tmp_path), capsys)
    assert status == 2
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in output, output
    key = {"store": "results_store", "run": "hydra.run.dir"}[where]
    assert lines[0].startswith(f"error: cannot write {tmp_path / where}/"), lines[0]
    assert reason in lines[0] and f"set {key}=" in lines[0], lines[0]
    assert not (tmp_path / "run" / "results.csv").exists()
    assert leftovers(tmp_path) == []
    if where == "store":
        assert list((tmp_path / "store").glob("*.json")) == []


def test_a_cache_that_refuses_writes_costs_only_the_reuse(tmp_path, monkeypatch, capsys):
    _failing_replace(monkeypatch, tmp_path / "cache", errno.EROFS)
    status, output = run(arguments(tmp_path), capsys)
    assert status == 0, output
    warnings = [line for line in output.splitlines() if line.startswith("warning:")]
    assert warnings == [
        f"warning: cache_dir={tmp_path / 'cache'} cannot be written (read-only file system); "
        "computing without the shared-work cache (set cache_dir=<a directory you can write>, "
        "or cache_dir=null)"
    ]
    assert (tmp_path / "run" / "results.csv").is_file()
    assert list((tmp_path / "cache").rglob("*.npz")) == [] and leftovers(tmp_path) == []


# ------------------------------------------------ real read-only and full file systems


def _unshare() -> list[str] | None:
    """A command prefix that runs a shell in a private mount namespace, where it may mount."""
    if shutil.which("unshare") is None or sys.platform != "linux":
        return None
    prefix = ["unshare", "--mount", "--propagation", "private"]
    if os.geteuid() != 0:
        prefix[1:1] = ["--user", "--map-root-user"]
    probe = subprocess.run(
        [*prefix, "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
        capture_output=True,
        timeout=60,
    )
    return prefix if probe.returncode == 0 else None


SCRIPT = """\
set -u
mkdir -p src ro full
mount --bind src ro && mount -o remount,bind,ro ro || exit 90
mount -t tmpfs -o size=256k tmpfs full || exit 91
mkdir full/store && dd if=/dev/zero of=full/fill bs=4k 2>/dev/null
pmlbench() {{ "{python}" -m pmlbench "$@" >"$OUT.out" 2>&1; echo $? >"$OUT.code"; }}
base="method=mlknn dataset=genbase protocol.n_splits=2 quiet=true"
OUT=run   pmlbench $base hydra.run.dir=ro/run results_store=w/store cache_dir=w/cache &
OUT=sweep pmlbench -m $base seed=1,2 hydra.sweep.dir=ro/sweep results_store=w/s cache_dir=w/c &
OUT=store pmlbench $base hydra.run.dir=w/r1 results_store=ro/store cache_dir=w/c1 &
OUT=cache pmlbench $base hydra.run.dir=w/r2 results_store=w/s2 cache_dir=ro/cache &
OUT=full  pmlbench $base hydra.run.dir=w/r3 results_store=full/store cache_dir=w/c3 &
wait
ls -A full/store >full.ls
"""


def test_real_read_only_and_full_file_systems(tmp_path):
    """The faults for real: a read-only bind mount (EROFS even for root) and a full tmpfs."""
    prefix = _unshare()
    if prefix is None:
        pytest.skip("cannot mount in a private namespace (needs root or user namespaces)")
    script = textwrap.dedent(SCRIPT).format(python=sys.executable)
    proc = subprocess.run(
        [*prefix, "sh", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr

    def outcome(name: str) -> tuple[int, list[str]]:
        text = (tmp_path / f"{name}.out").read_text()
        assert "Traceback" not in text, text
        code = int((tmp_path / f"{name}.code").read_text())
        return code, [line for line in text.splitlines() if line.strip()]

    for name, key, path in (
        ("run", "hydra.run.dir", "ro/run"),
        ("sweep", "hydra.sweep.dir", "ro/sweep"),
    ):
        code, lines = outcome(name)
        assert code == 2 and lines == [
            f"error: cannot write {tmp_path / path}: read-only file system; "
            f"set {key}=<a directory you can write>"
        ], lines
    code, lines = outcome("store")
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"error: cannot write {tmp_path / 'ro/store'}/"), lines
    assert lines[0].endswith(
        ": read-only file system; set results_store=<a directory you can write>"
    )
    code, lines = outcome("cache")
    assert code == 0 and sum(line.startswith("warning: cache_dir=") for line in lines) == 1
    assert (tmp_path / "w" / "r2" / "results.csv").is_file()
    code, lines = outcome("full")
    assert code == 2 and len(lines) == 1, lines
    assert "no space left on device; free some space or set results_store=" in lines[0], lines
    assert (tmp_path / "full.ls").read_text() == ""  # no partial record, no temporary file
    assert not (tmp_path / "w" / "r3" / "results.csv").exists()
