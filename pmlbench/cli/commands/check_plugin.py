"""``pmlbench check-plugin NAME``: run a plugin through a tiny synthetic task, list violations.

The checks are those of :mod:`pmlbench.testing` (``check_method`` and friends), which apply
the contract functions a run applies; this command only presents their results. Each check
passes, fails with the one-line message a real run would print, or is skipped because an
earlier check failed or a parameter has no value. The exit status is 0 when no check fails
and 1 otherwise.
"""

from __future__ import annotations

import argparse
import traceback
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text

from pmlbench.errors import PmlbenchError
from pmlbench.plugins import registry
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
    table = Table(title=f"{info.label}: {info.entry_point.value}", title_justify="left")
    for column in ("", "check", "detail"):
        table.add_column(column, overflow="fold")
    marks = {True: "[green]ok", False: "[bold red]FAIL", None: "[yellow]skip"}
    for check in report.results:
        table.add_row(marks[check.passed], check.name, Text(check.detail))  # literal, no markup
    console.print(table)
    if show_traceback:
        for check in report.failed:
            if check.error is not None:
                console.print(f"[bold]{check.name}[/]", highlight=False)
                console.print(
                    "".join(traceback.format_exception(check.error)), highlight=False, markup=False
                )
    if report.failed:
        console.print(
            f"[bold red]{len(report.failed)} contract violation(s)[/] in {info.label}",
            highlight=False,
        )
        return 1
    if report.skipped:
        console.print(
            f"[yellow]{info.label}: no violation found, but some checks did not run[/]",
            highlight=False,
        )
        return 0
    console.print(f"[green]{info.label} meets the contract[/]", highlight=False)
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="pmlbench check-plugin", description=__doc__)
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
        report = run_checks(kind, args.name, params or None)
        status = max(status, _report(console, report, args.traceback))
    return status
