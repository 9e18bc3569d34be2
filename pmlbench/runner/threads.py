"""BLAS / OpenMP threads per job, so parallel jobs do not oversubscribe the cores.

Config key ``threads_per_job``: a positive integer, or null (the default) to derive it from
the launcher: the cores divided by the parallel jobs of the joblib launcher, the
``cpus_per_task`` of a submitit launcher, and no limit for the basic launcher (one job at a
time). The limit is applied with threadpoolctl around the job.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from threadpoolctl import threadpool_limits

from pmlbench.core.parallel import available_cores, parallel_jobs
from pmlbench.errors import PmlbenchError


def threads_for_job(
    setting: Any, launcher: dict[str, Any] | None = None, cores: int | None = None
) -> int | None:
    """The thread limit of one job (None: no limit)."""
    if setting is not None and setting != "auto":
        if isinstance(setting, bool) or not isinstance(setting, int) or setting < 1:
            raise PmlbenchError(
                f"threads_per_job must be a positive integer or null (automatic), got {setting!r}"
            )
        return int(setting)
    cores = available_cores() if cores is None else cores
    launcher = launcher or {}
    target = str(launcher.get("_target_", "")).lower()
    if "joblib" in target:
        return max(1, cores // parallel_jobs(launcher.get("n_jobs", -1), cores))
    if "submitit" in target:
        cpus = launcher.get("cpus_per_task")
        return int(cpus) if cpus else 1
    return None


@contextlib.contextmanager
def limit_threads(threads: int | None) -> Iterator[None]:
    """Limit BLAS and OpenMP thread pools to ``threads`` inside the block (None: no limit)."""
    if threads is None:
        yield
        return
    with threadpool_limits(limits=int(threads)):
        yield
