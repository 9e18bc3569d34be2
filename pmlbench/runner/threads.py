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

from pmlbench.errors import PmlbenchError


def threads_for_job(setting: Any, default: int | None = None) -> int | None:
    """The thread limit of one job: ``threads_per_job`` if set, else ``default`` (None: no
    limit)."""
    if setting is None or setting == "auto":
        return default
    if isinstance(setting, bool) or not isinstance(setting, int) or setting < 1:
        raise PmlbenchError(
            f"threads_per_job must be a positive integer or null (automatic), got {setting!r}"
        )
    return int(setting)


@contextlib.contextmanager
def limit_threads(threads: int | None) -> Iterator[None]:
    """Limit BLAS and OpenMP thread pools to ``threads`` inside the block (None: no limit)."""
    if threads is None:
        yield
        return
    with threadpool_limits(limits=int(threads)):
        yield
