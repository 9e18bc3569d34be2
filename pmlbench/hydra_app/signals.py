"""How a command stops when it is told to: Ctrl-C (SIGINT) or SIGTERM (``kill``, ``timeout``,
a scheduler ending a job).

Both become an exception in the main thread, ``KeyboardInterrupt`` for SIGINT and
:class:`Terminated` (a ``KeyboardInterrupt`` too) for SIGTERM, so that one path stops
everything a command started: a running unit's child process with the processes it
started (pmlbench.runner.timeout stops them on any exception), and in a joblib sweep the
launcher's worker processes with all of theirs (joblib kills its pool's process trees when
an exception reaches it). The command then exits with the shell's status for the signal,
128 + its number (130, 143), after one line (pmlbench.cli.main). Python's own default for
SIGTERM is to die on the spot, which left a joblib sweep's workers and their units running.
After the first signal the process ignores further ones, so that the stopping is not itself
cut short.

:func:`stop_on_signals` installs the handlers in the command's process and, for the
duration of a job, in a launcher's process that runs it (a joblib worker, a SLURM job under
submitit, which SLURM's ``scancel`` ends with SIGTERM to every process of the job). An
ignored signal stays ignored (a background job of a non-interactive shell ignores SIGINT).

:func:`quiet_resource_trackers`: a unit stopped by a signal (or by ``unit_timeout``) is
killed with its process group and never releases the semaphores and memory-mapped folders
its joblib pool registered with joblib's (and multiprocessing's) resource tracker, a
process of its own. The tracker removes them once the command's processes are gone, which
is its purpose, and warns ``resource_tracker: There appear to be 4 leaked semlock objects
to clean up at shutdown`` about each kind: a line about library internals that are taken
care of. Trackers are started with the interpreter's warning options
(``multiprocessing.util._args_from_interpreter_flags``), so adding one to ``sys.warnoptions``
turns that line off in every tracker this process starts later, and nothing else.

:class:`NoteSubmittedJobs`: jobs that a submitit launcher (SLURM, or submitit's local
processes) started are not the command's to stop. A SLURM array job runs on the cluster
whatever happens to the command that submitted it, and submitit's local jobs are children
of controller processes of submitit's, which a signal to the command's process alone does
not reach. The callback notes such a launcher when a multirun starts, so that the command's
one line says what goes on running and how to end it (:func:`submitted_jobs`).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any, cast

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

# the warning option that silences a resource tracker's shutdown warnings, all of which
# start with "resource_tracker:" (the message field matches the start of a message)
TRACKER_WARNINGS = "ignore:resource_tracker:UserWarning"

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread as Ctrl-C raises ``KeyboardInterrupt``."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__(int(signum))  # args survive pickling (a joblib worker's exception)
        self.signum = int(signum)

    def __str__(self) -> str:
        return signal.Signals(self.signum).name


def exit_status(exc: KeyboardInterrupt) -> int:
    """The shell's status for a command ended by the signal behind ``exc``: 128 + its
    number (130 for SIGINT, 143 for SIGTERM)."""
    return 128 + int(getattr(exc, "signum", signal.SIGINT))


def signal_name(exc: KeyboardInterrupt) -> str:
    """``SIGINT`` or ``SIGTERM``: the signal behind ``exc``."""
    return signal.Signals(getattr(exc, "signum", signal.SIGINT)).name


def _raise_for(signum: int, frame: FrameType | None) -> None:
    for each in STOP_SIGNALS:
        signal.signal(each, signal.SIG_IGN)  # stopping is not interrupted by a second signal
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated(signum)


@contextlib.contextmanager
def stop_on_signals(job_process: bool = False) -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM raise ``KeyboardInterrupt`` / :class:`Terminated`
    in the main thread (see the module docstring); the previous handlers come back after it.

    Python's default handlers are replaced (``default_int_handler`` for SIGINT, ``SIG_DFL``
    for SIGTERM), others are left alone, except that with ``job_process`` (the block runs a
    job in a launcher's process, a joblib worker or a submitit job) SIGTERM's handler is
    replaced whatever it is: submitit's only logs the signal, so that a cancelled SLURM job
    went on computing (recording units whose pool processes SLURM had killed as failed)
    until SIGKILL. An ignored signal stays ignored; outside the main thread the block
    changes nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    defaults = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}
    previous = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    replaced = [
        signum
        for signum in STOP_SIGNALS
        if previous[signum] is defaults[signum]
        or (job_process and signum == signal.SIGTERM and previous[signum] is not signal.SIG_IGN)
    ]
    for signum in replaced:
        signal.signal(signum, _raise_for)
    try:
        yield
    finally:
        # after a signal both are ignored; the ones this block did not replace were left
        # as they were, or ignored by _raise_for
        for signum in STOP_SIGNALS:
            if signum in replaced or signal.getsignal(signum) is signal.SIG_IGN:
                signal.signal(signum, previous[signum])


def quiet_resource_trackers() -> None:
    """Start the resource trackers this process launches from now on without their shutdown
    warnings (see the module docstring)."""
    if TRACKER_WARNINGS not in sys.warnoptions:
        sys.warnoptions.append(TRACKER_WARNINGS)


SLURM_LAUNCHER = "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"

# "slurm" or "local" while a multirun of a submitit launcher runs in this process
_submitted: list[str] = []


class NoteSubmittedJobs(Callback):
    """Hydra callback: notes a multirun whose jobs a submitit launcher runs (see the module
    docstring); conf/config.yaml registers it."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from pmlbench.hydra_app.launchers import SUBMITIT_LAUNCHER, is_subclass, target_class

        _submitted.clear()
        try:
            launcher = OmegaConf.to_container(config.hydra.launcher, resolve=False)
            cls = target_class(cast(dict[str, Any], launcher) if launcher else None)
        except Exception:  # a launcher Hydra itself will report
            return
        if is_subclass(cls, SUBMITIT_LAUNCHER):
            _submitted.append("slurm" if is_subclass(cls, SLURM_LAUNCHER) else "local")

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        _submitted.clear()


def submitted_jobs() -> str | None:
    """``"slurm"`` or ``"local"`` when a multirun of a submitit launcher was running in this
    process (it ended by an exception, e.g. a signal), else None."""
    return _submitted[-1] if _submitted else None


def forget_submitted_jobs() -> None:
    _submitted.clear()
