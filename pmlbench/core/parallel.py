"""How much parallel work a process may start: cores, joblib's n_jobs, the thread budget."""

from __future__ import annotations

import os
from typing import Any

from threadpoolctl import threadpool_info

from pmlbench.core.parameters import Constraint, Interval, check_parameter

# an n_jobs that is set: a count of workers, or negative as joblib reads it (-1 = all cores);
# the one definition: tune.n_jobs (pmlbench.protocol.settings) and the methods' n_jobs
# (pmlbench.methods._constraints) add null to it
N_JOBS: tuple[Constraint, ...] = (Interval(int, 1, None), Interval(int, None, -1))


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


def worker_budget(n_jobs: Any, option: str) -> int:
    """Processes a job may use for its own parallel work: ``n_jobs``, or by default (None)
    the BLAS thread limit in force, which a parallel launcher lowers for each job (see
    pmlbench.runner.threads.threads_for_job), so nested parallelism never oversubscribes
    the cores."""
    if n_jobs is None:
        budgets = [pool["num_threads"] for pool in threadpool_info() if pool.get("num_threads")]
        return max(budgets) if budgets else available_cores()
    check_parameter(option, n_jobs, N_JOBS, prefix="")
    return parallel_jobs(n_jobs, available_cores())
