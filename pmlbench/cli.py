"""The ``pmlbench`` console script and ``python -m pmlbench``.

``pmlbench [overrides...]`` runs an experiment through Hydra (``-m`` for a multirun);
``pmlbench <command> ...`` runs a sub-command (``pmlbench list``, ...).
"""

from __future__ import annotations

import importlib
import sys

from rich.console import Console

from pmlbench import registry
from pmlbench.errors import PmlbenchError

SUBCOMMANDS = {
    "list": "pmlbench.commands.list_plugins:main",
    "check-plugin": "pmlbench.commands.check_plugin:main",
    "report": "pmlbench.commands.report:main",
}
_GROUP_KINDS = {"dataset": "dataset", "noise": "noise", "method": "method"}


def _error(message: str) -> int:
    Console(stderr=True).print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    return 2


def check_group_choices(overrides: list[str], presets: dict[str, set[str]]) -> None:
    """Fail in one line on ``method=<unknown>`` (and dataset/noise) before Hydra composes."""
    for override in overrides:
        key, sep, value = override.partition("=")
        key = key.lstrip("+~")
        if not sep or key not in _GROUP_KINDS:
            continue
        for choice in value.split(","):
            choice = choice.strip()
            if choice and choice not in presets.get(key, set()):
                registry.get(_GROUP_KINDS[key], choice)


def yaml_presets() -> dict[str, set[str]]:
    from pmlbench.app import config_dir
    from pmlbench.presets import plugin_presets

    root = config_dir()
    shipped = plugin_presets(list(_GROUP_KINDS))
    return {group: {p.stem for p in (root / group).glob("*.yaml")} | shipped[group]
            for group in _GROUP_KINDS}


def run_hydra(argv: list[str]) -> int:
    import hydra

    from pmlbench.app import config_dir
    from pmlbench.config_nodes import register_config_nodes
    from pmlbench.hydra_task import task
    from pmlbench.presets import with_preset_searchpath

    check_group_choices([a for a in argv if not a.startswith("-")], yaml_presets())
    register_config_nodes()
    sys.argv = [sys.argv[0], *with_preset_searchpath(argv)]
    main = hydra.main(config_path=str(config_dir()), config_name="config", version_base="1.3")(task)
    main()
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in SUBCOMMANDS:
            module, function = SUBCOMMANDS[argv[0]].split(":")
            return int(getattr(importlib.import_module(module), function)(argv[1:]) or 0)
        return run_hydra(argv)
    except PmlbenchError as exc:
        return _error(str(exc))
    except KeyboardInterrupt:
        return _error("interrupted; finished results were written, the interrupted run was not")


if __name__ == "__main__":
    sys.exit(main())
