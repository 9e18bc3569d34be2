"""The ``pmlbench`` console script and ``python -m pmlbench``.

``pmlbench [overrides...]`` runs an experiment through Hydra (``-m`` for a multirun);
``pmlbench <command> ...`` runs a sub-command (``pmlbench list``, ...).
"""

from __future__ import annotations

import importlib
import sys

from rich.console import Console

from pmlbench.errors import PmlbenchError
from pmlbench.plugins import registry

SUBCOMMANDS = {
    "list": "pmlbench.cli.commands.list_plugins:main",
    "check-plugin": "pmlbench.cli.commands.check_plugin:main",
    "report": "pmlbench.cli.commands.report:main",
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


def default_choices() -> dict[str, str]:
    """The group options conf/config.yaml selects when the command line does not."""
    from omegaconf import OmegaConf

    from pmlbench.hydra_app.config_tree import config_dir

    defaults = OmegaConf.to_container(OmegaConf.load(config_dir() / "config.yaml"))["defaults"]
    return {
        k: v
        for item in defaults
        if isinstance(item, dict)
        for k, v in item.items()
        if k in _GROUP_KINDS
    }


def check_parameter_keys(overrides: list[str], presets: dict[str, set[str]]) -> None:
    """Fail in one line on ``method.<key>=`` when no selected method has that parameter."""
    from pmlbench.plugins.parameters import plugin_parameters

    if any(o.lstrip("+~").startswith("experiment=") for o in overrides):
        return  # a named experiment selects the plugins itself
    chosen = {group: [choice] for group, choice in default_choices().items()}
    for override in overrides:
        key, sep, value = override.partition("=")
        if sep and key in _GROUP_KINDS:
            chosen[key] = [c.strip() for c in value.split(",") if c.strip()]
    for override in overrides:
        key, sep, _ = override.partition("=")
        group, dot, param = key.partition(".")
        if not sep or not dot or group not in _GROUP_KINDS or "." in param or param == "name":
            continue
        names = chosen.get(group, [])
        if not names or any(name in presets.get(group, set()) for name in names):
            continue  # a YAML preset may add keys of its own
        for name in names:
            kind = _GROUP_KINDS[group]
            known = plugin_parameters(kind, registry.load(kind, name))
            if param not in known:
                raise PmlbenchError(
                    f"{group} {name!r} has no parameter {param!r}; its parameters: "
                    f"{', '.join(known) or '(none)'} (pmlbench list {kind})"
                )


def yaml_presets() -> dict[str, set[str]]:
    from pmlbench.hydra_app.config_tree import config_dir
    from pmlbench.plugins.presets import plugin_presets

    root = config_dir()
    shipped = plugin_presets(list(_GROUP_KINDS))
    return {
        group: {p.stem for p in (root / group).glob("*.yaml")} | shipped[group]
        for group in _GROUP_KINDS
    }


def run_hydra(argv: list[str]) -> int:
    import hydra

    from pmlbench.hydra_app.config_nodes import register_config_nodes
    from pmlbench.hydra_app.config_tree import config_dir
    from pmlbench.hydra_app.task import task
    from pmlbench.plugins.presets import with_preset_searchpath

    overrides = [a for a in argv if not a.startswith("-")]
    presets = yaml_presets()
    check_group_choices(overrides, presets)
    check_parameter_keys(overrides, presets)
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
