"""``pmlbench list``: every installed plugin by kind, with parameters and origin."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.table import Table
from rich.text import Text

from pmlbench.cli.commands import plain
from pmlbench.core.safe_text import visible
from pmlbench.errors import PluginError
from pmlbench.plugins import registry
from pmlbench.plugins.parameters import plugin_parameters


def plugin_rows(kind: str) -> list[dict[str, str]]:
    """Name, parameters, description and distribution of each plugin of ``kind``."""
    rows = []
    for name, info in registry.plugins(kind).items():
        try:
            obj = info.load()
            if kind == "metric":
                params = f"{getattr(obj, 'arrow', '?')} needs {getattr(obj, 'needs', '?')}"
            else:
                params = ", ".join(f"{k}={v!r}" for k, v in plugin_parameters(kind, obj).items())
            description = registry.describe(obj)
        except PluginError as exc:
            params, description = "", f"broken: {exc}"
        rows.append(
            {
                "name": name,
                "parameters": params,
                "description": description,
                "distribution": info.distribution,
            }
        )
    return rows


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="pmlbench list", description=plain(__doc__))
    parser.add_argument(
        "kind", nargs="?", choices=sorted(registry.KINDS), help="show only this kind of plugin"
    )
    args = parser.parse_args(argv)
    console = Console()
    for kind in [args.kind] if args.kind else list(registry.KINDS):
        table = Table(title=f"{kind} plugins ({registry.KINDS[kind]})", title_justify="left")
        for column in ("name", "parameters", "description", "distribution"):
            table.add_column(column, overflow="fold")
        for row in plugin_rows(kind):
            # plugin-controlled text: shown literally, never as markup or terminal codes
            cells = [Text(visible(str(v))) for v in row.values()]
            if row["description"].startswith("broken: "):
                cells[2].stylize("red")
            table.add_row(*cells)
        console.print(table)
    return 0
