"""``pmlbench check-plugin NAME``: run a plugin through a tiny synthetic task, list violations.

The checks are those of :mod:`pmlbench.testing` (``check_method`` and friends), which apply
the contract functions a run applies; this command only presents their results. Each check
passes, fails with the one-line message a real run would print, or is skipped because an
earlier check failed or a parameter has no value. The exit status is 0 when no check fails
and 1 otherwise.
"""

from __future__ import annotations

import argparse
import dataclasses
import traceback
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text

from pmlbench.cli.commands import plain
from pmlbench.core.safe_text import visible
from pmlbench.errors import PluginError, PmlbenchError
from pmlbench.plugins import registry
from pmlbench.runner.timeout import call_with_timeout, isolation_available
from pmlbench.testing import CheckReport, run_checks


def _parse_params(items: list[str]) -> dict[str, Any]:
    params = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise PmlbenchError(f"--param expects KEY=VALUE, got {item!r}")
        try:
            params[key] = yaml.safe_load(value) if value else ""
        except yaml.YAMLError:
            params[key] = value  # not YAML (e.g. a command line with braces): a plain string
    return params


def _report(console: Console, report: CheckReport, show_traceback: bool) -> int:
    """Print one plugin's checks as a table; the exit status (1 when a check failed)."""
    info = report.info
    label = visible(info.label)
    title = Text(visible(f"{info.label}: {info.entry_point.value}"))
    table = Table(title=title, title_justify="left")
    for column in ("", "check", "detail"):
        table.add_column(column, overflow="fold")
    marks = {True: "[green]ok", False: "[bold red]FAIL", None: "[yellow]skip"}
    for check in report.results:
        # plugin-controlled text: literal, no markup, no terminal codes
        detail = Text(visible(check.detail))
        table.add_row(marks[check.passed], Text(visible(check.name)), detail)
    console.print(table)
    if show_traceback:
        for check in report.failed:
            if check.error is not None:
                console.print(Text(visible(check.name), style="bold"), highlight=False)
                text = getattr(check.error, "text", None) or "".join(
                    traceback.format_exception(check.error)
                )
                console.print(Text(visible(text, keep_newlines=True)), highlight=False)
    if report.failed:
        console.print(
            Text(f"{len(report.failed)} contract violation(s)", style="bold red")
            + Text(f" in {label}"),
            highlight=False,
        )
        return 1
    if report.skipped:
        console.print(
            Text(f"{label}: no violation found, but some checks did not run", style="yellow"),
            highlight=False,
        )
        return 0
    console.print(Text(f"{label} meets the contract", style="green"), highlight=False)
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="pmlbench check-plugin", description=plain(__doc__))
    parser.add_argument("name", help="the plugin's registered name")
    parser.add_argument(
        "--kind",
        choices=sorted(registry.KINDS),
        help="which kind, when the name exists in several (default: all)",
    )
    parser.add_argument(
        "--param",
        "-p",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a parameter value (YAML syntax), e.g. --param k=5; repeatable",
    )
    parser.add_argument(
        "--traceback", action="store_true", help="print the traceback of each failed check"
    )
    args = parser.parse_args(argv)
    params = _parse_params(args.param)
    kinds = [args.kind] if args.kind else registry.kinds_of(args.name)
    console = Console(soft_wrap=True)
    status = 0
    for kind in kinds:
        try:
            report = _checked(kind, args.name, params or None)
        except PmlbenchError as exc:  # ended without a report, or refused by the registry
            console.print(
                Text(visible(f"error: {kind} plugin {args.name!r}: {exc}"), style="bold red"),
                highlight=False,
            )
            status = 1
            continue
        status = max(status, _report(console, report, args.traceback))
    return status


class _Ended(PmlbenchError):
    """The checks' process ended without a report (the plugin exited or crashed it)."""


def _checked(kind: str, name: str, params: dict[str, Any] | None) -> CheckReport:
    """The checks of one plugin, run in a child process where ``os.fork`` exists: plugin
    code that ends or crashes the process is reported, not the end of the command."""
    if not isolation_available():
        return run_checks(kind, name, params)

    def child() -> CheckReport:
        report = run_checks(kind, name, params)
        # the errors go back as their traceback text: the plugin's exceptions may not pickle
        report.results = [
            dataclasses.replace(r, error=_Traceback("".join(traceback.format_exception(r.error))))
            if r.error is not None
            else r
            for r in report.results
        ]
        return report

    try:
        return call_with_timeout(child, None).value
    except PluginError as exc:
        if "ended without a result" in str(exc) or "incomplete result" in str(exc):
            raise _Ended(str(exc)) from None
        raise


class _Traceback(Exception):
    """A failed check's traceback, as text formatted in the child process."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text
