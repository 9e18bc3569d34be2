"""The launcher of ``hydra/launcher=slurm``: hydra-submitit-launcher's SLURM launcher, with one
line instead of a traceback for jobs that end without a result.

Upstream waits for the array's jobs in order and, at the first one that ended without a result
(cancelled with scancel, killed at its time limit, lost with its node), raises submitit's
UncompletedJobError, which Hydra prints as a traceback while later jobs of the array may still
be running. This launcher waits for every job of the array, then prints one line naming each
such job and its state and exits 1. The units those jobs finished are in the result store, so
the same command run again computes only the rest.

Hydra instantiates launchers only from the ``hydra_plugins`` package, hence this module. It
defines nothing when hydra-submitit-launcher (pmlbench's ``launchers`` extra) is missing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

try:
    from hydra_plugins.hydra_submitit_launcher.submitit_launcher import (
        SlurmLauncher as _SubmititSlurmLauncher,
    )
except ImportError:  # no launchers extra: no SLURM launcher
    _SubmititSlurmLauncher = None

if _SubmititSlurmLauncher is not None:
    from hydra.core.utils import JobReturn

    class SlurmLauncher(_SubmititSlurmLauncher):
        """submitit's SLURM launcher; jobs without a result end the sweep with one line."""

        def launch(
            self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int
        ) -> Sequence[JobReturn]:
            from submitit.core.utils import UncompletedJobError

            try:
                return super().launch(job_overrides, initial_job_idx)
            except UncompletedJobError as exc:
                match = re.match(r"Job (\d+)_\d+\b", str(exc))
                if match is None:  # not an array task: submitit's own message
                    raise
                array = match[1]
            jobs = self._wait(array, len(job_overrides))
            lost = [(i, job) for i, job in enumerate(jobs) if not job.paths.result_pickle.exists()]
            if not lost:  # every result arrived after all
                return [job.results()[0] for job in jobs]
            from pmlbench.core.console import print_error

            names = ", ".join(
                f"#{initial_job_idx + i} ({job.job_id}: {job.state})" for i, job in lost
            )
            print_error(
                f"{len(lost)} of {len(jobs)} SLURM jobs ended without a result: {names}; "
                "the units they finished are in the result store: run the same command again "
                f"to compute the rest (log of {lost[0][1].job_id}: {lost[0][1].paths.stderr})"
            )
            raise SystemExit(1)

        def _wait(self, array: str, n_jobs: int) -> list:
            """The array's jobs (submitit.SlurmJob), once each has ended."""
            import submitit

            jobs = [
                submitit.SlurmJob(self.params["submitit_folder"], f"{array}_{task}")
                for task in range(n_jobs)
            ]
            for job in jobs:
                job.wait()
            return jobs
