"""Checks of command-line overrides before Hydra composes a config.

Hydra reports an unknown group option or key with a long message about its search path;
these checks give one line naming the plugin kind and the fix. The command line
(pmlbench.cli.main) and the Python API (pmlbench.api) both call :func:`check_overrides`.
"""

from __future__ import annotations

import difflib
from typing import Any, cast

from pmlbench.core.safe_text import has_hidden, visible
from pmlbench.errors import PluginError, PmlbenchError
from pmlbench.hydra_app.config_tree import config_dir
from pmlbench.plugins import registry

# config group -> plugin kind
GROUP_KINDS = {"dataset": "dataset", "noise": "noise", "method": "method"}


def yaml_presets() -> dict[str, set[str]]:
    """YAML presets by group: pmlbench's own (conf/<group>/) and those plugins ship."""
    from pmlbench.plugins.presets import plugin_presets

    root = config_dir()
    shipped = plugin_presets(list(GROUP_KINDS))
    return {
        group: {p.stem for p in (root / group).glob("*.yaml")} | shipped[group]
        for group in GROUP_KINDS
    }


def default_choices() -> dict[str, str]:
    """The group options conf/config.yaml selects when the command line does not."""
    from omegaconf import OmegaConf

    config = cast(
        dict[str, Any], OmegaConf.to_container(OmegaConf.load(config_dir() / "config.yaml"))
    )
    defaults = config["defaults"]
    return {
        k: v
        for item in defaults
        if isinstance(item, dict)
        for k, v in item.items()
        if k in GROUP_KINDS
    }


def check_group_choices(overrides: list[str], presets: dict[str, set[str]]) -> None:
    """Fail in one line on ``method=<unknown>`` (and dataset/noise) before Hydra composes."""
    for override in overrides:
        key, sep, value = override.partition("=")
        key = key.lstrip("+~")
        if not sep or key not in GROUP_KINDS:
            continue
        for choice in value.split(","):
            choice = choice.strip()
            if choice and choice not in presets.get(key, set()):
                _check_choice(GROUP_KINDS[key], choice)


def hidden_name_problem(kind: str, name: str, distribution: object) -> str | None:
    """``<kind> plugin '<name>' (distribution '<d>') has ... characters in its name`` when the
    entry-point or distribution name holds a hidden character (pmlbench.core.safe_text.
    visible), shown escaped; None for a plain name. Such a plugin is neither offered
    (pmlbench.hydra_app.config_nodes) nor selectable (:func:`check_group_choices`)."""
    if not (has_hidden(name) or has_hidden(str(distribution))):
        return None
    return (
        f"{kind} plugin '{visible(name)}' (distribution '{visible(str(distribution))}') has "
        "control, format or bidirectional characters in its name"
    )


def _check_choice(kind: str, name: str) -> None:
    """The plugin ``name`` of ``kind`` exists and has a plain name; else one line listing
    the plain names (a name with hidden characters is neither selectable nor shown raw)."""
    available = registry.plugins(kind)
    if name not in available:
        plain = [n for n in available if not has_hidden(n)]
        close = difflib.get_close_matches(name, plain, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        hidden = len(available) - len(plain)
        more = f" ({hidden} more with unprintable names)" if hidden else ""
        raise PluginError(
            f"unknown {kind} {visible(name)!r}; available: {', '.join(plain) or '(none)'}"
            f"{more}{hint}"
        )
    problem = hidden_name_problem(kind, name, available[name].distribution)
    if problem is not None:
        raise PluginError(
            f"{problem}, which would reach terminals and result files; uninstall that package"
        )
    registry.get(kind, name)


def check_parameter_keys(overrides: list[str], presets: dict[str, set[str]]) -> None:
    """Fail in one line on ``method.<key>=`` (and dataset/noise) or ``tune.grid.<key>=``
    when no selected plugin has that parameter (pmlbench.plugins.names), with the closest
    parameter as a did-you-mean."""
    from pmlbench.plugins.names import unknown_parameters

    if any(o.lstrip("+~").startswith("experiment=") for o in overrides):
        return  # a named experiment selects the plugins itself
    chosen = {group: [choice] for group, choice in default_choices().items()}
    for override in overrides:
        key, sep, value = override.partition("=")
        if sep and key in GROUP_KINDS:
            chosen[key] = [c.strip() for c in value.split(",") if c.strip()]
    for override in overrides:
        key, sep, value = override.partition("=")
        group, param, tuned = _parameter_of(key)
        if not sep or group is None:
            continue
        names = chosen.get(group, [])
        if not names or any(name in presets.get(group, set()) for name in names):
            continue  # a YAML preset may add keys of its own
        for name in names:
            kind = GROUP_KINDS[group]
            found = unknown_parameters(kind, registry.load(kind, name), [param])
            if found is not None:
                where = "tune.grid" if tuned else group
                hint = found.hint(f"{where}.{{name}}={value}")
                raise PmlbenchError(
                    f"{group} {name!r} has no parameter {param!r}"
                    f"{' to tune' if tuned else ''}; its parameters: {found.listing}"
                    f"{hint} (pmlbench list {kind})"
                )


def _parameter_of(key: str) -> tuple[str | None, str, bool]:
    """(group, parameter, tuned) of ``method.<param>`` / ``tune.grid.<param>`` overrides
    (group None for any other key)."""
    group, dot, param = key.partition(".")
    if group == "tune" and param.startswith("grid."):
        group, param = "method", param.removeprefix("grid.")
        return (group, param, True) if param and "." not in param else (None, "", False)
    if not dot or group not in GROUP_KINDS or "." in param or param == "name":
        return None, "", False
    return group, param, False


def _leaf_keys(node: dict[str, Any], prefix: str = "") -> list[str]:
    keys = []
    for name, value in node.items():
        if isinstance(value, dict) and value:
            keys += _leaf_keys(value, f"{prefix}{name}.")
        else:
            keys.append(f"{prefix}{name}")
    return keys


def check_config_keys(overrides: list[str]) -> None:
    """Fail in one line on a key that no config has (``test_size=0.3`` for
    ``protocol.test_size``), which Hydra would refuse in several lines or, with ``+``, add
    where nothing reads it. Plugin parameters are checked by :func:`check_parameter_keys`."""
    from omegaconf import OmegaConf

    from pmlbench.protocol.settings import defaults

    if any(o.lstrip("+~").startswith("experiment=") for o in overrides):
        return  # a named experiment may bring keys of its own
    loaded = OmegaConf.to_container(OmegaConf.load(config_dir() / "config.yaml"))
    config = {k: v for k, v in cast(dict[str, Any], loaded).items() if k != "defaults"}
    config["tune"] = {**defaults("tune"), "grid": {}}
    config["bipartition"] = defaults("bipartition")
    free = {*GROUP_KINDS, "hydra", "experiment"}  # checked elsewhere, or Hydra's own
    for override in overrides:
        key, sep, value = override.partition("=")
        if not sep or key.startswith("~") or "/" in key or "@" in key:
            continue
        key = key.lstrip("+")
        parts = key.split(".")
        if parts[0] in free or parts[:2] == ["tune", "grid"]:
            continue
        node: Any = config
        for part in parts:
            if not isinstance(node, dict):
                break  # inside a list or a value: Hydra checks the rest
            if part not in node:
                raise PmlbenchError(_unknown_key(key, value, config, top_level=node is config))
            node = node[part]


def _unknown_key(key: str, value: str, config: dict[str, Any], top_level: bool) -> str:
    """The one-line message for an unknown config key, with a did-you-mean.

    A key found under another parent (``test_size`` -> ``protocol.test_size``) is suggested
    as it is. A misspelt first part (``methd=mlknn``, ``methd.k=5``) is matched against the
    top-level keys and config groups, whose list the message gives.
    """
    parts = key.split(".")
    known = _leaf_keys(config)
    same = [k for k in known if k.rsplit(".", 1)[-1] == parts[-1]]
    if same:
        return f"unknown config key {key!r}; did you mean {same[0]}={value}?"
    if top_level:
        names = sorted((set(config) | set(GROUP_KINDS)) - {"hydra"})
        close = difflib.get_close_matches(parts[0], names, n=1, cutoff=0.6)
        listing = f"known keys: {', '.join(names)} (pmlbench --help)"
        if not close:
            return f"unknown config key {key!r}; {listing}"
        guess = ".".join([close[0], *parts[1:]])
        return f"unknown config key {key!r}; did you mean {guess}={value}? ({listing})"
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    if close:
        return f"unknown config key {key!r}; did you mean {close[0]}={value}?"
    parent = ".".join(parts[:-1])
    keys = [k for k in known if k.startswith(parent + ".")]
    return f"unknown config key {key!r}; keys under {parent}: {', '.join(keys)}"


def check_overrides(overrides: list[str]) -> None:
    """Every check above on a list of overrides (options such as ``-m`` are skipped)."""
    overrides = [o for o in overrides if not o.startswith("-")]
    presets = yaml_presets()
    check_group_choices(overrides, presets)
    check_config_keys(overrides)
    check_parameter_keys(overrides, presets)


_UNKNOWN = object()


def _default_of(key: str, config: dict[str, Any], presets: dict[str, set[str]]) -> Any:
    """The value ``key`` takes when the command line does not set it, for the plugins the
    config selects (``_UNKNOWN`` for a YAML preset's keys, whose defaults the preset sets)."""
    from pmlbench.plugins.parameters import plugin_parameters
    from pmlbench.protocol.method_defaults import method_node
    from pmlbench.runner.settings import tree as settings_tree

    parts = key.split(".")
    if parts[0] in ("method", "tune", "bipartition", *GROUP_KINDS):
        kind = "method" if parts[0] in ("tune", "bipartition") else parts[0]
        name = str((config.get(kind) or {}).get("name"))
        if name in presets.get(kind, set()):
            return _UNKNOWN
        try:
            cls = registry.load(GROUP_KINDS[kind], name)
            node: Any = (
                method_node(name, cls)
                if kind == "method"
                else {kind: {"name": name, **plugin_parameters(kind, cls)}}
            )
        except Exception:  # a plugin that does not load: its run reports the problem
            return _UNKNOWN
    else:
        node = settings_tree()
    for part in parts:
        if not isinstance(node, dict) or part not in node:
            return _UNKNOWN
        node = node[part]
    return node


def _runs_only(key: str) -> bool:
    """Whether ``key`` is (or is inside) a setting that changes where or how a run works,
    never its numbers (pmlbench.runner.settings: ``quiet``, ``results_store``, ...)."""
    from pmlbench.runner.settings import EXECUTION

    return any(key == name or key.startswith(name + ".") for name in EXECUTION)


def changed_settings(overrides: list[str], config: dict[str, Any]) -> list[str]:
    """``key=value`` for each override of a run that sets a number-changing key to something
    other than its default (``method.k=15 noise.rate=2 seed=3``), in command-line order,
    with the value the run used. Plugin choices (``method=``, ``dataset=``, ``noise=``) and
    keys such as ``quiet`` or ``results_store`` are left out: a run's title names the former
    and the latter change no number."""
    presets = yaml_presets()
    shown: dict[str, str] = {}
    for override in overrides:
        key, sep, _ = override.partition("=")
        key = key.lstrip("+")
        if not sep or key.startswith(("~", "hydra")) or "/" in key or "@" in key:
            continue
        if key in GROUP_KINDS or key == "experiment" or _runs_only(key):
            continue
        value: Any = config
        for part in key.split("."):
            value = value.get(part, _UNKNOWN) if isinstance(value, dict) else _UNKNOWN
        if value is _UNKNOWN:
            continue
        default = _default_of(key, config, presets)
        if default is not _UNKNOWN and _same(value, default):
            continue
        text = (
            "[" + ",".join(_text(v) for v in value) + "]"
            if isinstance(value, list)
            else _text(value)
        )
        shown[key] = f"{key}={text}"
    return list(shown.values())


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    try:
        return bool(a == b)
    except Exception:
        return False


def _text(value: Any) -> str:
    """Short text of a value: 2.0 -> "2", True -> "true", None -> "null"."""
    if isinstance(value, bool):
        return str(value).lower()
    if value is None:
        return "null"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_text(v)}" for k, v in value.items()) + "}"
    return str(value)


def pin_explicit_parameters(overrides: list[str]) -> list[str]:
    """``overrides`` plus ``tune.grid.<p>=null`` for every ``method.<p>=`` override of a
    parameter the method tunes by default (``default_tuning_grid``), unless ``tune.grid``
    itself is overridden: a value the user gives is the value used, never silently replaced
    by the grid's choice (``method=mlknn method.k=15`` runs k = 15, untuned).
    """
    keys = [o.partition("=")[0].lstrip("+~") for o in overrides if "=" in o]
    if any(k == "tune.grid" or k.startswith("tune.grid.") for k in keys):
        return overrides
    chosen = [
        choice.strip()
        for o in overrides
        if o.partition("=")[0].lstrip("+~") == "method"
        for choice in o.partition("=")[2].split(",")
    ] or [default_choices().get("method", "")]
    grids = []
    for name in chosen:
        if name not in registry.plugins("method"):
            return overrides  # a YAML preset: its own file says what it tunes
        grids.append(getattr(registry.get("method", name).load(), "default_tuning_grid", {}))
    pinned = [
        param
        for key in dict.fromkeys(keys)
        for group, param, tuned in [_parameter_of(key)]
        if group == "method" and not tuned and any(param in (g or {}) for g in grids)
    ]
    return [*overrides, *(f"tune.grid.{param}=null" for param in pinned)]
