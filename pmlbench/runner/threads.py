"""BLAS / OpenMP threads per job, so parallel jobs do not oversubscribe the cores.

Config key ``threads_per_job``: a positive integer, or null (the default) to derive it from
the launcher: the cores divided by the parallel jobs of the joblib launcher, the
``cpus_per_task`` of a submitit launcher, and no limit for the basic launcher (one job at a
time). The limit is applied with threadpoolctl around the job.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from threadpoolctl import threadpool_info, threadpool_limits

from pmlbench.errors import PmlbenchError


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity where the OS reports it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def parallel_jobs(n_jobs: int | None, cores: int) -> int:
    """How many jobs joblib runs at once for ``n_jobs`` (negative: cores + 1 + n_jobs)."""
    if n_jobs is None or n_jobs == 0:
        return 1
    if n_jobs < 0:
        return max(1, cores + 1 + n_jobs)
    return min(int(n_jobs), cores) if cores else int(n_jobs)


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


def worker_budget(n_jobs: Any, option: str) -> int:
    """Processes a job may use for its own parallel work: ``n_jobs``, or by default (None)
    the BLAS thread limit in force, which a parallel launcher lowers for each job (see
    :func:`threads_for_job`), so nested parallelism never oversubscribes the cores."""
    if n_jobs is None:
        budgets = [pool["num_threads"] for pool in threadpool_info() if pool.get("num_threads")]
        return max(budgets) if budgets else available_cores()
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs == 0:
        raise PmlbenchError(f"{option} must be a non-zero integer or null, got {n_jobs!r}")
    return parallel_jobs(n_jobs, available_cores())
