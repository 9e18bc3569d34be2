"""Running one unit under a time limit (config key ``unit_timeout``) in a child process.

:func:`call_with_timeout` forks a child that calls the unit's compute function and sends back
its return value (pickled through a pipe: one machine, one run) or the exception it raised.
Forking, rather than starting a fresh interpreter, means the closure (dataset, prepared
plugins) is inherited as it is, never pickled. The child starts a session of its own, so a
unit that exceeds its limit is stopped with its whole process group (e.g. joblib workers of
inner cross-validation) by one SIGKILL; on Linux it also dies with its parent.

The parent never computes in between, and the child computes exactly what the in-process
path computes, so the numbers are the same with or without a limit. Without a limit
(``unit_timeout: null``, the default) units run in a child too, where ``os.fork`` exists
(:func:`isolation_available`): a unit whose plugin code calls ``sys.exit``, ``os._exit`` or
crashes the interpreter (a segmentation fault in compiled code) becomes a failed unit with
a message, and the run or sweep goes on. Where it does not, :func:`contain_exit` still
turns ``sys.exit`` into a failure.
"""

from __future__ import annotations

import ctypes
import faulthandler
import importlib
import math
import os
import pickle
import select
import signal
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pmlbench.core.console import collect_warnings, print_warning
from pmlbench.core.parameters import Constraint, Interval, check_parameter
from pmlbench.errors import PluginError, PmlbenchError

# the attribute holding the child's traceback text on an exception re-raised in the parent
REMOTE_TRACEBACK = "pmlbench_remote_traceback"
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
# the parent's joblib pool as the child saw it, kept referenced so that dropping it never
# runs a finaliser that would shut down workers belonging to the parent
_parent_pools: list[Any] = []


class UnitTimedOut(PmlbenchError):
    """A unit ran longer than ``unit_timeout`` and was stopped."""

    def __init__(self, limit: float, elapsed: float, cpu_seconds: float | None) -> None:
        super().__init__(
            f"timed out after {elapsed:.1f} s (unit_timeout={limit:g}); "
            "raise unit_timeout or set it to null to run it to the end"
        )
        self.limit, self.elapsed, self.cpu_seconds = limit, elapsed, cpu_seconds


@dataclass
class ChildResult:
    """What the child returned, with its wall seconds (seen from the parent) and CPU seconds
    (of every thread of the child and of every process it started: those it waited for,
    e.g. joblib workers shut down at its end, and those left in its group)."""

    value: Any
    wall_seconds: float
    cpu_seconds: float


# seconds per unit, or null for no limit (pmlbench.runner.settings states it for the docs)
UNIT_TIMEOUT: tuple[Constraint, ...] = (Interval(float, 0, None, closed="neither"), None)


def check_unit_timeout(value: Any) -> float | None:
    """``unit_timeout`` as seconds, or None for no limit.

    Raises:
        PmlbenchError: (one line) for anything but a positive number or null.
    """
    check_parameter("unit_timeout", value, UNIT_TIMEOUT, prefix="")
    if value is not None and not hasattr(os, "fork"):
        raise PmlbenchError(
            "unit_timeout needs os.fork, which this platform lacks; set unit_timeout=null"
        )
    return None if value is None else float(value)


def isolation_available() -> bool:
    """Whether units can run in a forked child (POSIX); elsewhere they run in-process."""
    return hasattr(os, "fork")


def exit_error(exc: SystemExit) -> PluginError:
    """The failure a ``sys.exit`` inside a unit becomes (one line)."""
    return PluginError(
        f"plugin code called sys.exit({exc.code!r}) (SystemExit) inside the unit; a plugin "
        "must raise an exception, never end the process"
    )


def contain_exit(func: Callable[[], Any]) -> Any:
    """``func()``, with a ``SystemExit`` it raises turned into :func:`exit_error`'s failure."""
    try:
        return func()
    except SystemExit as exc:
        raise exit_error(exc) from None


def call_with_timeout(func: Callable[[], Any], limit: float | None) -> ChildResult:
    """``func()`` in a forked child, stopped (with its process group) after ``limit`` seconds
    (never with ``limit=None``).

    Returns:
        the child's return value with its timings.

    Raises:
        UnitTimedOut: ``func`` did not return within ``limit`` seconds; the child was killed.
        PluginError: the child ended without a result (``os._exit``, a crash) or ``func``
            called ``sys.exit``.
        Exception: whatever ``func`` raised, re-raised here with the child's traceback text in
            the attribute ``pmlbench_remote_traceback`` (a RuntimeError naming the original
            type when the exception cannot be pickled).
    """
    _share_resource_tracker()
    read_end, write_end = os.pipe()
    parent = os.getpid()
    start = time.perf_counter()
    with warnings.catch_warnings():
        # Python 3.12+ warns on fork in a process with threads (e.g. a progress bar's refresh
        # thread); the child only computes and writes to a fresh pipe and fresh std streams.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child, which never returns
        os.close(read_end)
        _child(func, write_end, parent)
    os.close(write_end)
    try:
        payload = _receive(read_end, None if limit is None else start + limit)
    except BaseException:
        # e.g. Ctrl-C: the child is in its own session and would outlive us, and so would the
        # processes it started in sessions of their own (the external adapter's programs):
        # stop those first, while the child still names them as its descendants
        _stop_unit(pid)
        _reap(pid)
        raise
    finally:
        os.close(read_end)
    if payload is None and limit is not None:
        _stop_unit(pid)
        cpu = _reap(pid)
        raise UnitTimedOut(limit, time.perf_counter() - start, cpu)
    # the CPU of every process that worked for the unit: the child with the processes it
    # waited for (wait4), and those it left behind, which the group kill below ends unwaited
    left_behind = group_cpu_seconds(pid)
    status, reaped_cpu = _wait(pid)
    _kill(pid, group_only=True)  # processes the unit left behind, e.g. its joblib workers
    wall = time.perf_counter() - start
    if not payload:
        raise PluginError(
            f"its process ended without a result ({_describe_status(status)}): plugin "
            "code ended the process (os._exit) or crashed it (e.g. a segmentation fault in "
            "compiled code)"
        )
    try:
        kind, value, cpu, text, warned = pickle.loads(payload)
    except Exception:
        raise PluginError(
            f"its process ended with an incomplete result ({_describe_status(status)})"
        ) from None
    _relay_warnings(warned)
    if kind == "error":
        setattr(value, REMOTE_TRACEBACK, text)
        raise value
    if reaped_cpu is not None:
        cpu = reaped_cpu + left_behind
    return ChildResult(value, wall, cpu)


_relayed: set[tuple[str, bool]] = set()


def _relay_warnings(warned: list[tuple[str, bool]]) -> None:
    """Print a child's warnings in this process, each distinct one once per process (a child
    cannot know what earlier children said: every unit would repeat a cache warning)."""
    for message, stderr in warned:
        if (message, stderr) not in _relayed:
            _relayed.add((message, stderr))
            print_warning(message, stderr=stderr)


def _child(func: Callable[[], Any], write_end: int, parent: int) -> None:  # pragma: no cover
    code = 0
    try:
        os.setsid()
        _die_with_parent()
        faulthandler.disable()  # a crash is reported in one line by the parent, not dumped
        if os.getppid() != parent:
            raise SystemExit(1)  # the parent died before the line above took effect
        _forget_parent_pools()
        # fresh std streams: a thread of the parent may have held their locks at the fork
        sys.stdout = open(os.dup(1), "w", buffering=1, closefd=True)  # noqa: SIM115
        sys.stderr = open(os.dup(2), "w", buffering=1, closefd=True)  # noqa: SIM115
        warned = collect_warnings()  # printed by the parent, each distinct one once
        cpu = time.process_time()
        try:
            message: tuple = ("ok", func(), time.process_time() - cpu, "", warned)
        except BaseException as exc:  # everything goes back to the parent
            text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            message = ("error", _picklable(exc), time.process_time() - cpu, text, warned)
        _shutdown_own_pools()
        payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(payload)
    except BaseException:
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


def _picklable(exc: BaseException) -> Exception:
    """``exc`` if it survives pickling and is an Exception, else a RuntimeError naming it."""
    if isinstance(exc, SystemExit):
        return exit_error(exc)
    if isinstance(exc, Exception):
        try:
            pickle.loads(pickle.dumps(exc))
            return exc
        except Exception:
            pass
    text = " ".join(str(exc).split())
    return RuntimeError(f"{type(exc).__name__}: {text}" if text else type(exc).__name__)


def _forget_parent_pools() -> None:  # pragma: no cover - child only
    """Make joblib start a pool of its own in the child when the unit asks for one.

    A fork copies the parent's reusable loky executor object, but not its management thread,
    and its workers serve the parent: a task the child submitted to it would wait forever.
    """
    loky = sys.modules.get("joblib.externals.loky.reusable_executor")
    if loky is not None:
        _parent_pools.append(getattr(loky, "_executor", None))
        # a new lock: its holder at the fork may have been a thread the child does not have
        vars(loky).update(_executor_lock=threading.RLock(), _executor=None, _executor_kwargs=None)
    memmapping = sys.modules.get("joblib.executor")
    if memmapping is not None:
        vars(memmapping)["_executor_args"] = None


def _shutdown_own_pools() -> None:  # pragma: no cover - child only
    """Stop the joblib pool the child started and remove its temporary folders, which joblib
    leaves to an atexit hook that ``os._exit`` skips."""
    loky = sys.modules.get("joblib.externals.loky.reusable_executor")
    executor = getattr(loky, "_executor", None)
    if executor is None:
        return
    try:
        executor.shutdown(wait=True)
        manager = getattr(executor, "_temp_folder_manager", None)
        if manager is not None:
            manager._clean_temporary_resources(force=True)
    except Exception:
        pass  # the parent kills the child's process group afterwards anyway


def _share_resource_tracker() -> None:
    """Start joblib's resource tracker here, before the fork, when joblib is in use.

    Children share it, and it sits outside their process groups: a unit killed at its limit
    leaves its shared-memory files to a tracker that survives the kill and removes them.
    """
    try:
        importlib.import_module("joblib.externals.loky.backend.resource_tracker").ensure_running()
    except Exception:
        pass  # without it a killed unit may leave files in /dev/shm; nothing else changes


def _die_with_parent() -> None:  # pragma: no cover - child only
    """On Linux, have the kernel kill the child when the parent dies (e.g. SIGKILL)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def _receive(fd: int, deadline: float | None) -> bytes | None:
    """Everything the child writes, or None when nothing arrived before ``deadline`` (None:
    no deadline).

    The limit covers the computation: once the child starts writing, the rest is read to the
    end whatever the time.
    """
    chunks: list[bytes] = []
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while True:
        left = None if chunks or deadline is None else deadline - time.perf_counter()
        if left is not None and left <= 0:
            return None
        if not poller.poll(None if left is None else max(1, math.ceil(left * 1000))):
            continue  # the deadline check above decides
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _descendants(pid: int) -> list[int]:
    """Every living descendant of ``pid`` (Linux /proc; empty elsewhere), deepest last."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            # the command name (field 2) may hold spaces; fields after its ")" are fixed
            fields = entry.read_text().rpartition(")")[2].split()
        except OSError:
            continue  # the process ended while we looked
        children.setdefault(int(fields[1]), []).append(int(entry.parent.name))
    found, todo = [], list(children.get(pid, []))
    while todo:
        child = todo.pop(0)
        found.append(child)
        todo.extend(children.get(child, []))
    return found


def _stop_unit(pid: int) -> None:
    """Kill the unit's child and everything it started: the processes in sessions of their
    own (the external adapter's programs, outside the child's group) first, while their
    parent lives and names them, then the child's group."""
    for descendant in _descendants(pid):
        _kill(descendant)
    _kill(pid)


def _kill(pid: int, group_only: bool = False) -> None:
    """SIGKILL the child's process group (it leads its own session), else the child alone.

    After the child was reaped its group may live on in processes it left; Linux does not
    reuse the number while the group exists, so ``group_only`` kills exactly those.
    """
    kills = [lambda: os.killpg(pid, signal.SIGKILL)]
    if not group_only:
        kills.append(lambda: os.kill(pid, signal.SIGKILL))
    for kill in kills:
        try:
            kill()
            return
        except (ProcessLookupError, PermissionError):
            continue


def _wait(pid: int) -> tuple[int | None, float | None]:
    """Wait for the child: its wait status and CPU seconds (its own and those of the
    processes it waited for, as wait4 reports them); (None, None) when already reaped."""
    while True:
        try:
            _, status, usage = os.wait4(pid, 0)
            return status, usage.ru_utime + usage.ru_stime
        except InterruptedError:
            continue
        except ChildProcessError:
            return None, None


def _reap(pid: int, return_status: bool = False) -> Any:
    """Wait for the child; its CPU seconds (or, with ``return_status``, its wait status)."""
    status, cpu = _wait(pid)
    return status if return_status else cpu


def _proc_stats() -> list[list[str]]:
    """The fields after the command name of every /proc/<pid>/stat (Linux; empty elsewhere),
    each list starting with the pid itself."""
    found = []
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = entry.read_text().rpartition(")")[2].split()
        except OSError:
            continue  # the process ended while we looked
        found.append([entry.parent.name, *fields])
    return found


def _ticks(fields: list[str]) -> float:
    """utime + stime + cutime + cstime of a /proc stat line (fields 14-17), in seconds."""
    try:
        return sum(int(v) for v in fields[12:16]) / os.sysconf("SC_CLK_TCK")
    except (ValueError, OSError, IndexError):
        return 0.0


def group_cpu_seconds(pgid: int) -> float:
    """CPU seconds so far of the processes of process group ``pgid`` other than its leader
    (with the processes each already waited for), Linux /proc; 0 elsewhere. The leader is
    counted when it is waited for."""
    group = str(pgid)
    return sum(_ticks(f) for f in _proc_stats() if len(f) > 3 and f[3] == group != f[0])


def tree_cpu_seconds() -> float:
    """CPU seconds so far of this process (all its threads), of the children it waited for
    and of its living descendants (with those they waited for): the difference between two
    calls is the CPU of all the work in between, in every process and thread, counting a
    pool that outlives the work (joblib's reusable workers) for its share."""
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    waited = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own.ru_utime + own.ru_stime + waited.ru_utime + waited.ru_stime
    stats = _proc_stats()
    children: dict[str, list[list[str]]] = {}
    for fields in stats:
        if len(fields) > 2:
            children.setdefault(fields[2], []).append(fields)
    todo = list(children.get(str(os.getpid()), []))
    while todo:
        fields = todo.pop()
        # its own CPU and that of the processes it waited for: a process is counted alive,
        # or (once waited for) in its parent's share, never both
        total += _ticks(fields)
        todo.extend(children.get(fields[0], []))
    return total


def _describe_status(status: int | None) -> str:
    if status is None:
        return "exit status unknown"
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = str(signum)
        return f"killed by {name}"
    return f"exit code {os.WEXITSTATUS(status)}"
