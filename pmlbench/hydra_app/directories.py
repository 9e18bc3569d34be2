"""The directories a run writes into, and one line when one of them cannot be written.

A job writes into three places, each chosen by a config key: its output directory
(``hydra.run.dir``, or a subdirectory of ``hydra.sweep.dir`` in a multirun), the result
store (``results_store``) and the shared-work cache (``cache_dir``). Hydra creates the output
directory and writes its ``.hydra/`` files before the task function runs, and reports a
failure there with a traceback; the callback :class:`CheckOutputDirectory` checks that
directory first and stops with one line naming it and its key. :class:`CheckResultStore`
refuses a ``results_store`` that cannot be a directory (a regular file, a symbolic link to
nothing, a path under either) before any unit runs, instead of a traceback or a unit computed
for nothing (:func:`store_location_problem`). Later failures (a store on a read-only or full
disk) are :class:`~pmlbench.core.atomic.UnwritablePath` errors, which :func:`naming_key`
completes with the key that chose the location.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from pmlbench.core.atomic import UnwritablePath, check_writable_directory
from pmlbench.core.console import print_error
from pmlbench.errors import PmlbenchError


def naming_key(exc: PmlbenchError, locations: Mapping[str, Path | None]) -> PmlbenchError:
    """``exc`` with the config key of the deepest of ``locations`` (key -> directory) that
    holds its path, when it is an :class:`UnwritablePath` without a key; else ``exc``."""
    if not isinstance(exc, UnwritablePath) or exc.key is not None:
        return exc
    path = Path(exc.path).absolute()
    best: tuple[int, str] | None = None
    for key, directory in locations.items():
        if directory is None:
            continue
        directory = Path(directory).absolute()
        if (path == directory or directory in path.parents) and (
            best is None or len(directory.parts) > best[0]
        ):
            best = (len(directory.parts), key)
    return exc if best is None else exc.naming(best[1])


class CheckOutputDirectory(Callback):
    """Hydra callback: the run's (or sweep's) output directory must be writable.

    Runs before Hydra creates the directory and writes its own files there; on a read-only
    or full file system, or a path through a regular file, it prints one line naming the
    directory and the config key, and exits with status 2.
    """

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        self._check(config, "hydra.run.dir")

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        self._check(config, "hydra.sweep.dir")

    @staticmethod
    def _check(config: DictConfig, key: str) -> None:
        directory = OmegaConf.select(config, key)
        if directory in (None, ""):
            return
        try:
            check_writable_directory(Path(str(directory)).absolute(), key)
        except UnwritablePath as exc:
            print_error(str(exc))
            raise SystemExit(2) from None


STORE_KEY = "results_store"


def store_location_problem(value: Any, cwd: Path) -> str | None:
    """Why ``results_store=value`` (relative to ``cwd``) cannot be the result store, in one
    line naming the key, the value and the fix; None when it can (a directory, or a path
    that ``mkdir`` can create) or when there is no store (null, empty).

    Only what the path is, is looked at: nothing is created or written, so a dry run stays
    free of side effects. A regular file, a symbolic link whose target does not exist, and
    a path under either are refused.
    """
    if value in (None, "", False):
        return None
    given = str(value)
    path = Path(given).expanduser()
    path = path if path.is_absolute() else cwd / path
    fix = f"set {STORE_KEY} to a directory (created when missing), or null for no store"
    # the path itself, or the first of its ancestors that exists (as an entry: a dangling
    # symbolic link exists as a link)
    for entry in (path, *path.parents):
        if not os.path.lexists(entry):
            continue
        if entry.is_dir():
            return None
        where = "is" if entry == path else f"lies under {str(entry)!r},"
        if not entry.exists():  # a symbolic link to nothing
            target = os.readlink(entry)
            return (
                f"{STORE_KEY}={given!r} {where} a symbolic link to {target!r}, which does "
                f"not exist; create {target!r} as a directory, or {fix}"
            )
        return f"{STORE_KEY}={given!r} {where} a file, not a directory; {fix}"
    return None


class CheckResultStore(Callback):
    """Hydra callback: ``results_store`` must be able to be a directory
    (:func:`store_location_problem`); else one line and exit status 2, before the run or the
    sweep starts. A sweep over ``results_store`` itself is checked by each job
    (pmlbench.hydra_app.task)."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        self._check(config)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        self._check(config)

    @staticmethod
    def _check(config: DictConfig) -> None:
        try:
            value = OmegaConf.select(config, STORE_KEY)
        except Exception:  # an interpolation the job resolves and reports itself
            return
        problem = store_location_problem(value, Path.cwd())
        if problem is not None:
            print_error(problem)
            raise SystemExit(2)
