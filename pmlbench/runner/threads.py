"""BLAS / OpenMP threads per job, so parallel jobs do not oversubscribe the cores.

Config key ``threads_per_job``: a positive integer, or null (the default; ``auto`` too) for
the number the caller derives from how jobs run (pmlbench.hydra_app.launchers: the
launcher's parallel jobs, or no limit for a single run). Its default and allowed values are
defined in pmlbench.runner.settings; the runner only checks the setting there and applies
the number, with threadpoolctl around the job.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from threadpoolctl import threadpool_limits

from pmlbench.runner.settings import check_option

# the values of threads_per_job that leave the number to the caller
DERIVED = (None, "auto")


def threads_for_job(setting: Any, default: int | None = None) -> int | None:
    """The thread limit of one job: ``threads_per_job`` if set, else ``default`` (None: no
    limit)."""
    check_option("threads_per_job", setting)
    if setting in DERIVED:
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
