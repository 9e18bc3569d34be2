"""The ``pmlbench`` console script and ``python -m pmlbench``.

``pmlbench [overrides...]`` runs an experiment through Hydra (``-m`` for a multirun);
``pmlbench <command> ...`` runs a sub-command (``pmlbench list``, ...). A bare ``pmlbench``
prints its usage and runs nothing; a first word that is neither gets a did-you-mean.
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import logging
import sys
from collections.abc import Iterator

from pmlbench.core.console import print_error
from pmlbench.errors import PmlbenchError
from pmlbench.hydra_app.signals import (
    exit_status,
    forget_submitted_jobs,
    quiet_resource_trackers,
    signal_name,
    stop_on_signals,
    submitted_jobs,
)

SUBCOMMANDS = {
    "list": "pmlbench.cli.commands.list_plugins:main",
    "check-plugin": "pmlbench.cli.commands.check_plugin:main",
    "report": "pmlbench.cli.commands.report:main",
}


@contextlib.contextmanager
def hydra_process_state(argv: list[str]) -> Iterator[None]:
    """Hand ``argv`` to ``hydra.main`` and leave no process-wide state behind.

    ``hydra.main`` reads its arguments from ``sys.argv`` and nowhere else: the only other
    ways in are Hydra's private ``_run_hydra`` or the Compose API, which has no multirun,
    launchers or ``--help``. So ``sys.argv`` is left alone when it already holds ``argv``
    (the console script, ``python -m pmlbench``) and otherwise (``main([...])`` from Python,
    as the tests do) replaced for the duration of the call only. On the way out, whatever
    happened (``SystemExit`` from Hydra included), this restores ``sys.argv``, clears
    Hydra's global instance (so the Compose API and a later call start afresh) and puts
    back the root logger's handlers and level, which Hydra's job logging replaces; the
    handlers Hydra opened (its log file in the run directory) are closed.

    The preset packages of plugin distributions reach Hydra's search path through
    pmlbench's SearchPathPlugin (hydra_plugins/pmlbench_searchpath), not through argv.
    """
    from hydra.core.global_hydra import GlobalHydra

    saved_argv = sys.argv
    root = logging.getLogger()
    saved_handlers, saved_level = list(root.handlers), root.level
    if argv != sys.argv[1:]:
        sys.argv = [sys.argv[0] if sys.argv else "pmlbench", *argv]
    try:
        yield
    finally:
        sys.argv = saved_argv
        GlobalHydra.instance().clear()
        for handler in root.handlers:
            if handler not in saved_handlers:
                handler.close()
        root.handlers[:] = saved_handlers
        root.setLevel(saved_level)


def run_hydra(argv: list[str]) -> int:
    """Check the overrides, then run ``argv`` through ``hydra.main`` (see
    :func:`hydra_process_state`)."""
    import hydra

    from pmlbench.hydra_app.config_nodes import register_config_nodes
    from pmlbench.hydra_app.config_tree import config_dir
    from pmlbench.hydra_app.overrides import check_overrides, pin_explicit_parameters
    from pmlbench.hydra_app.task import task

    check_overrides(argv)
    argv = pin_explicit_parameters(argv)
    register_config_nodes()
    quiet_resource_trackers()
    main = hydra.main(config_path=str(config_dir()), config_name="config", version_base="1.3")(task)
    with hydra_process_state(argv):
        main()
    return 0


def usage() -> str:
    """The usage part of ``pmlbench --help`` (conf/hydra/help/pmlbench.yaml, one source)."""
    from omegaconf import OmegaConf

    from pmlbench.hydra_app.config_tree import config_dir

    help_text = OmegaConf.load(config_dir() / "hydra" / "help" / "pmlbench.yaml")
    return (
        f"{str(help_text.header).rstrip()}\n\n"
        "Run the default experiment (ML-kNN on genbase) with: pmlbench method=mlknn\n"
        "All options and config keys: pmlbench --help"
    )


def version_line() -> str:
    """``pmlbench <version>``, with the Hydra and Python versions it runs on.

    The version is the package's (``pmlbench.__version__``, which the documentation site
    shows and CITATION.cff cites); run records name the installed distribution's
    (``versions.pmlbench`` in run.json, from its metadata). An install older than the code
    it runs gives another number there, so the line says so instead of disagreeing silently.
    """
    import platform
    from importlib.metadata import PackageNotFoundError, version

    from pmlbench import __version__

    python = platform.python_version()
    line = f"pmlbench {__version__} (Hydra {version('hydra-core')}, Python {python})"
    try:
        installed = version("pmlbench")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return line
    if installed != __version__:
        line += (
            f"; the installed distribution is {installed}, which run records name: "
            "reinstall it (pip install -e .)"
        )
    return line


def check_command(argv: list[str]) -> None:
    """Fail in one line on a first word that is neither a sub-command nor an override.

    Hydra's grammar would refuse ``reprot`` with a parse error about a missing ``=``; every
    override holds ``=`` (or starts with ``~``, ``-``), so a bare word is a mistyped command.
    """
    first = argv[0]
    if "=" in first or first.startswith(("-", "~", "+")):
        return
    close = difflib.get_close_matches(first, list(SUBCOMMANDS), n=1, cutoff=0.5)
    hint = f"did you mean {close[0]!r}?" if close else f"commands: {', '.join(SUBCOMMANDS)}"
    raise PmlbenchError(
        f"unknown command {first!r}; {hint} (an experiment takes key=value overrides, "
        "e.g. pmlbench method=mlknn dataset=genbase; pmlbench --help)"
    )


def stopped_line(exc: KeyboardInterrupt, argv: list[str] | None, submitted: str | None) -> str:
    """The one line of a command stopped by Ctrl-C or SIGTERM (pmlbench.hydra_app.signals);
    ``argv``: an experiment's overrides (None for a sub-command); ``submitted``: ``"slurm"``
    or ``"local"`` when the jobs were a submitit launcher's, which the command does not stop
    (pmlbench.hydra_app.signals.submitted_jobs)."""
    what = f"stopped by {signal_name(exc)}"
    if argv is None:
        return what
    stored = not any(a.lstrip("+") in ("results_store=null", "results_store=") for a in argv)
    if submitted is not None:
        jobs = (
            "this sweep's SLURM jobs were not cancelled (squeue lists them, scancel ends them)"
            if submitted == "slurm"
            else "this sweep's submitit jobs run on unless the signal reached them too"
        )
        if not stored:
            return f"{what}: {jobs}"
        return f"{what}: {jobs}; what they finish is stored, the same command again resumes"
    if not stored:
        return f"{what}: the running units were stopped (results_store=null: none is stored)"
    return (
        f"{what}: the running units were stopped, finished ones are in the result store; "
        "the same command again resumes from them"
    )


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    experiment: list[str] | None = None
    with stop_on_signals():
        try:
            if not argv:  # a bare command explains itself and runs nothing
                print(usage())
                return 0
            if argv[0] in ("--version", "-V"):
                print(version_line())
                return 0
            if argv[0] in SUBCOMMANDS:
                module, function = SUBCOMMANDS[argv[0]].split(":")
                return int(getattr(importlib.import_module(module), function)(argv[1:]) or 0)
            check_command(argv)
            experiment = argv
            return run_hydra(argv)
        except PmlbenchError as exc:
            print_error(str(exc))
            return 2
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (Terminated)
            print_error(stopped_line(exc, experiment, submitted_jobs()))
            return exit_status(exc)
        finally:
            forget_submitted_jobs()


if __name__ == "__main__":
    sys.exit(main())
