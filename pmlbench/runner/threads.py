"""BLAS / OpenMP threads per job, so parallel jobs do not oversubscribe the cores.

Config key ``threads_per_job``: a positive integer, or null (the default) for the number the
caller derives from how jobs run (pmlbench.hydra_app.launchers: the launcher's parallel
jobs, or no limit for a single run). The runner only checks the setting and applies the
number, with threadpoolctl around the job.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from threadpoolctl import threadpool_limits

from pmlbench.core.parameters import Constraint, Interval, Options, check_parameter

# null or "auto": derived from how jobs run; else a positive count
THREADS_PER_JOB: list[Constraint] = [None, Options(("auto",)), Interval(int, 1, None)]


def threads_for_job(setting: Any, default: int | None = None) -> int | None:
    """The thread limit of one job: ``threads_per_job`` if set, else ``default`` (None: no
    limit)."""
    check_parameter("threads_per_job", setting, THREADS_PER_JOB, prefix="")
    if setting is None or setting == "auto":
        return default
    return int(setting)


@contextlib.contextmanager
def limit_threads(threads: int | None) -> Iterator[None]:
    """Limit BLAS and OpenMP thread pools to ``threads`` inside the block (None: no limit)."""
    if threads is None:
        yield
        return
    with threadpool_limits(limits=int(threads)):
        yield
