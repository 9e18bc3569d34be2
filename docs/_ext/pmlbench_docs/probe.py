"""Which bundled datasets each method refuses, asked of the method itself.

A method whose published form would exceed the suite's budget on an input refuses it in
``fit`` *before any work*, raising :class:`pmlbench.errors.NotApplicable` with a one-line
reason that names the option lifting the cap (docs/protocol.md, "Budget"). So the answer for
a dataset is what ``fit`` does first on the training part of the protocol's first split: each
method at its defaults is fitted on it in a forked child that is stopped after
:data:`CPU_BUDGET` seconds of CPU time. A child that raises NotApplicable within them
reports the method's own message; one that is still working when the budget runs out has
passed every check that comes before the work, so the method runs on that dataset. CPU
time, not wall time, so a busy machine does not change an answer.

Before the budget starts, the child fits the method once on a small corner of the same data
(:data:`WARM_UP_ROWS` rows, at most :data:`WARM_UP_COLUMNS` features and labels), whatever
that fit does: a method that imports a heavy library on its first fit (PyTorch takes over a
second of CPU time to import) has done so before its checks are timed, so the budget measures
the checks and not the import.

Every cap bounds a size (instances, features, labels or a product of them), so a dataset no
larger in all three than one where the method runs is not probed: it runs there too
(:attr:`Outcome.inferred_from` names the larger dataset). The largest datasets are probed
first.
"""

from __future__ import annotations

import json
import os
import select
import signal
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

# seconds of CPU time in which a method must have refused (its checks take milliseconds;
# the margin is for a slower machine)
CPU_BUDGET = 2.0
# the warm-up fit's corner of the data, and the CPU seconds it may take
WARM_UP_ROWS, WARM_UP_COLUMNS = 40, 20
WARM_UP_BUDGET = 120.0
WARMED = b"w"  # written to the pipe once the warm-up is over
# children at once (the build machine has two cores)
PARALLEL = 2

RUNS, REFUSED, ERROR = "runs", "refused", "error"


@dataclass(frozen=True)
class Outcome:
    """What ``fit`` did first on one dataset's training part."""

    status: str  # RUNS, REFUSED or ERROR
    message: str  # the NotApplicable message (REFUSED) or the exception (ERROR)
    inferred_from: str = ""  # a larger dataset where the method runs (not probed itself)


@dataclass(frozen=True)
class TrainingPart:
    """A bundled dataset's training part on the protocol's first split, with candidates."""

    name: str
    X: Any
    Y: np.ndarray

    @property
    def shape(self) -> tuple[int, int, int]:
        return int(self.X.shape[0]), int(self.X.shape[1]), int(self.Y.shape[1])


def training_part(name: str, data: Any, test_size: float, seed: int = 0) -> TrainingPart:
    """Split 0 of the protocol at ``seed``; candidates: the dataset's natural ones, else the
    uniform noise model at rate 1 (the noise never changes a shape, which is all a cap reads)."""
    from pmlbench.noise.uniform import uniform_noise
    from pmlbench.protocol.splits import plan_splits

    plan = plan_splits(data.X.shape[0], 1, test_size, seed)[0]
    train = np.sort(plan.train_idx)
    if data.Y_candidates is not None:
        candidates = data.Y_candidates[train]
    else:
        candidates = uniform_noise(data.Y[train], plan.noise_rng, rate=1.0)
    return TrainingPart(name, data.X[train], candidates)


def _child(cls: type, part: TrainingPart, write: int) -> None:
    """In the forked child: fit at the defaults under the CPU budget, report, exit."""
    from threadpoolctl import threadpool_limits

    from pmlbench.errors import NotApplicable

    signal.signal(signal.SIGPROF, signal.SIG_DFL)  # the default action ends the process
    with threadpool_limits(1):
        signal.setitimer(signal.ITIMER_PROF, WARM_UP_BUDGET)
        try:  # lazy imports happen here; what the small fit does is not the answer
            corner = slice(WARM_UP_ROWS), slice(WARM_UP_COLUMNS)
            cls().fit(part.X[corner], part.Y[corner])
        except BaseException:  # noqa: BLE001, S110 - only the fit below is the answer
            pass
        os.write(write, WARMED)
        try:
            signal.setitimer(signal.ITIMER_PROF, CPU_BUDGET)
            cls().fit(part.X, part.Y)
            result = [RUNS, ""]
        except NotApplicable as exc:
            result = [REFUSED, str(exc)]
        except BaseException as exc:  # noqa: BLE001 - reported, the build decides
            result = [ERROR, f"{type(exc).__name__}: {exc}"]
    signal.setitimer(signal.ITIMER_PROF, 0)
    os.write(write, json.dumps(result).encode())
    os._exit(0)


def _start(cls: type, part: TrainingPart) -> tuple[int, int]:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child never returns
        os.close(read)
        _child(cls, part, write)
    os.close(write)
    return pid, read


def _finish(pid: int, read: int) -> Outcome:
    chunks = []
    while chunk := os.read(read, 65536):
        chunks.append(chunk)
    os.close(read)
    _, status = os.waitpid(pid, 0)
    received = b"".join(chunks)
    warmed = received.startswith(WARMED)
    if warmed and len(received) > len(WARMED):
        status_name, message = json.loads(received[len(WARMED) :])
        return Outcome(status_name, message)
    if warmed and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGPROF:
        return Outcome(RUNS, "")  # still working when the budget ran out: past every check
    if not warmed:
        return Outcome(ERROR, f"the warm-up fit did not end within {WARM_UP_BUDGET} CPU seconds")
    return Outcome(ERROR, f"the probe ended with status {status}")


def dominated(small: tuple[int, ...], large: tuple[int, ...]) -> bool:
    """Whether a shape is no larger than another in every dimension."""
    return all(a <= b for a, b in zip(small, large, strict=True))


def probe(
    methods: Mapping[str, type], parts: Iterable[TrainingPart]
) -> dict[tuple[str, str], Outcome]:
    """What ``fit`` of every method (at its defaults) does first on every training part.

    Per method the parts are taken largest first; a part no larger than one where the method
    runs is not probed. PARALLEL children run at once.
    """
    ordered = sorted(parts, key=lambda p: (int(np.prod(p.shape, dtype=np.int64)), p.name))
    ordered.reverse()
    pending = {name: list(ordered) for name in methods}
    results: dict[tuple[str, str], Outcome] = {}
    running: dict[int, tuple[int, str, str]] = {}  # read fd -> (pid, method, dataset)
    busy: set[str] = set()  # methods with a child running (their next part waits on it)

    def next_job() -> tuple[str, TrainingPart] | None:
        for name, queue in pending.items():
            if name in busy:
                continue
            while queue:
                part = queue.pop(0)
                larger = next(
                    (
                        other
                        for other in ordered
                        if results.get((name, other.name), Outcome(ERROR, "")).status == RUNS
                        and not results[(name, other.name)].inferred_from
                        and dominated(part.shape, other.shape)
                    ),
                    None,
                )
                if larger is None:
                    return name, part
                results[(name, part.name)] = Outcome(RUNS, "", inferred_from=larger.name)
        return None

    while True:
        while len(running) < PARALLEL and (job := next_job()) is not None:
            name, part = job
            pid, read = _start(methods[name], part)
            running[read] = (pid, name, part.name)
            busy.add(name)
        if not running:
            return results
        ready, _, _ = select.select(list(running), [], [])
        for read in ready:
            pid, name, dataset = running.pop(read)
            busy.discard(name)
            results[(name, dataset)] = _finish(pid, read)
