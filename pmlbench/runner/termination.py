"""SIGTERM and SIGHUP end a run the way Ctrl-C does: what the run started is stopped first.

A unit's external program runs in a session of its own (pmlbench.methods.external), and
under ``unit_timeout`` or ``isolate`` a unit runs in a forked child in a session of its own
(pmlbench.runner.timeout). Ctrl-C raises KeyboardInterrupt, and the code around each of them
stops its process group on the way out. SIGTERM (``kill``, ``timeout``, a batch scheduler)
and SIGHUP (the terminal closed) would end pmlbench at once by default, leaving those
processes running. While a run is under way, :func:`stop_on_termination` turns either signal
into :class:`Terminated`, so the same cleanup runs; then the signal is delivered again with
its default action, and pmlbench ends as killed by it (exit status 128 + the signal).

Only signals left at their default action are taken over (``nohup`` sets SIGHUP to be
ignored, an embedding program may have handlers of its own), and only in the main thread,
the one Python delivers signals to.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from types import FrameType

SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class Terminated(BaseException):
    """The run was asked to end by a signal (a BaseException, as KeyboardInterrupt: no unit
    records it as its own failure)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"ended by {signal.Signals(signum).name}")
        self.signum = signum


@contextlib.contextmanager
def stop_on_termination() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise :class:`Terminated` (once; a second signal
    during the cleanup is held until it is done); on the way out the signal is delivered
    again with its default action."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        if not received:
            received.append(signum)
            raise Terminated(signum)

    taken = [s for s in SIGNALS if signal.getsignal(s) is signal.SIG_DFL]
    for signum in taken:
        signal.signal(signum, handler)
    try:
        yield
    finally:
        for signum in taken:
            signal.signal(signum, signal.SIG_DFL)
        if received:
            os.kill(os.getpid(), received[0])  # default action: the process ends here
