"""What pmlbench knows about Hydra launchers: where a multirun's jobs run and how many at once.

A launcher is recognised by its class: ``hydra.launcher._target_`` is resolved with
``hydra.utils.get_class``, and the class counts as a known launcher when it is that launcher
or derives from it, so a subclass gets the treatment of its parent whatever its name. The
known launchers and what a job derives from them:

========================  ==========================  ===================================
launcher                  BLAS threads per job        jobs
========================  ==========================  ===================================
basic (Hydra's default)   no limit                    one at a time, in this process
joblib                    cores // parallel jobs      ``n_jobs`` worker processes
submitit (local, SLURM)   ``cpus_per_task``           one process per job, anywhere
anything else             1, with a warning           unknown
========================  ==========================  ===================================

An unknown launcher may run many jobs on one machine, where uncapped BLAS pools
oversubscribe the cores (each job starting one thread per core); one thread per job is slow
but never pathological, and the warning names the setting (``threads_per_job``) that lifts
it. To teach pmlbench a new launcher, add a rule to :func:`launcher_policy`.

The subclass test compares the qualified names along the class's MRO rather than class
objects: Hydra's plugin scan executes every module under ``hydra_plugins`` again, so a
launcher class imported before the scan is a different object from the same class after it
(``issubclass`` would then miss a subclass). Comparing names also means the optional
joblib and submitit plugins are never imported here. Hydra's basic launcher is named by its
ConfigStore entry ``hydra/launcher/basic`` (public API), not imported from
``hydra._internal``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from pmlbench.core.console import print_warning
from pmlbench.core.parallel import available_cores, parallel_jobs
from pmlbench.runner.threads import threads_for_job

JOBLIB_LAUNCHER = "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher"
SUBMITIT_LAUNCHER = "hydra_plugins.hydra_submitit_launcher.submitit_launcher.BaseSubmititLauncher"


@dataclass(frozen=True)
class LauncherPolicy:
    """How pmlbench treats the jobs of one launcher."""

    name: str  # the launcher's class, module.Class
    known: bool  # one of the launchers in the table above (or derived from one)
    in_process: bool  # jobs run one after another in the launching process
    threads: int | None  # default BLAS threads per job (None: no limit)


def qualified_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


@cache
def registered_target(group: str, option: str) -> str | None:
    """The class Hydra registers for ``<group>=<option>`` (module.Class), e.g. its basic
    launcher for ``hydra/launcher=basic``, read from the ConfigStore."""
    from hydra.core.config_store import ConfigStore
    from hydra.core.plugins import Plugins

    Plugins.instance()  # imports the plugins, which store their config nodes
    try:
        return str(ConfigStore.instance().load(f"{group}/{option}.yaml").node["_target_"])
    except Exception:  # a future Hydra that stores it elsewhere: the class becomes unknown
        return None


def target_class(node: Mapping[str, Any] | None) -> type | None:
    """The class a config node's ``_target_`` names (None when it cannot be resolved)."""
    from hydra.utils import get_class

    target = (node or {}).get("_target_")
    if not target:
        return None
    try:
        return get_class(str(target))
    except Exception:  # Hydra itself reports a launcher it cannot instantiate
        return None


def is_subclass(cls: type | None, parent: str | None) -> bool:
    """Whether ``cls`` is, or derives from, the class named ``parent`` (module.Class)."""
    return cls is not None and parent is not None and parent in map(qualified_name, cls.__mro__)


def launcher_policy(launcher: Mapping[str, Any] | None, cores: int | None = None) -> LauncherPolicy:
    """What a multirun job derives from the launcher that runs it (see the module docstring)."""
    launcher = launcher or {}
    cls = target_class(launcher)
    name = qualified_name(cls) if cls else str(launcher.get("_target_"))
    if is_subclass(cls, JOBLIB_LAUNCHER):
        cores = available_cores() if cores is None else cores
        jobs = parallel_jobs(launcher.get("n_jobs", -1), cores)
        return LauncherPolicy(name, True, False, max(1, cores // jobs))
    if is_subclass(cls, SUBMITIT_LAUNCHER):
        cpus = launcher.get("cpus_per_task")
        return LauncherPolicy(name, True, False, int(cpus) if cpus else 1)
    if is_subclass(cls, registered_target("hydra/launcher", "basic")):
        return LauncherPolicy(name, True, True, None)
    return LauncherPolicy(name, False, False, 1)


_warned: set[str] = set()


def job_threads(
    setting: Any, launcher: Mapping[str, Any] | None, multirun: bool, cores: int | None = None
) -> int | None:
    """The BLAS thread limit of a job (None: no limit).

    ``threads_per_job`` (``setting``) wins when set; a single run (no launcher involved)
    gets no limit; a multirun job gets its launcher's number, with a one-line warning (once
    per process) when the launcher is unknown.
    """
    explicit = threads_for_job(setting)
    if explicit is not None or not multirun:
        return explicit
    policy = launcher_policy(launcher, cores)
    if not policy.known and policy.name not in _warned:
        _warned.add(policy.name)
        print_warning(
            f"unknown launcher {policy.name}: BLAS threads per job capped at 1; "
            "set threads_per_job=<n> to choose"
        )
    return policy.threads


def runs_in_process(launcher: Mapping[str, Any] | None, multirun: bool) -> bool:
    """Whether the jobs run one at a time in this process (so progress bars can show)."""
    return not multirun or launcher_policy(launcher).in_process
