"""The top-level entries of ``conf/config.yaml``, each defined once.

The counterpart of pmlbench.protocol.settings (the ``bipartition`` and ``tune`` nodes) for
the keys at the top of the config: every key is one :class:`~pmlbench.protocol.settings.
Setting`, named by its path (``protocol.n_splits``), with its default, its accepted values
(constraints of :mod:`pmlbench.core.parameters`), a one-line description and whether it only
says how to run (``execution``: ``quiet``, ``results_store``, ...; never part of a run's
title). Everything else follows from :data:`TOP_LEVEL`:

- the default of a key a config leaves out (:func:`spec_values`, hence
  pmlbench.runner.run.spec_from_config; :func:`default` for a run's title);
- validation with one-line errors naming the key (``threads_per_job must be ..., got 0``):
  :func:`check_option`, :func:`check_execution_options`;
- the top-level block of ``conf/config.yaml`` (:func:`config_block`) and the table of
  docs/protocol.md (:func:`markdown_table`); regenerate both with
  ``python -m pmlbench.runner.settings conf/config.yaml docs/protocol.md``, and
  tests/test_top_level_settings.py fails while either differs.

Keys that are fields of pmlbench.protocol.experiment.ExperimentSpec (``seed``,
``protocol.n_splits``, ``metrics``, ...) take its defaults (read from the dataclass, not
restated; only ``metrics``, whose field defaults to no metric, states its own), and
ExperimentSpec checks them when it is built; their constraints here are the ones it applies,
which tests/test_top_level_settings.py holds equal. The group choices (``dataset``,
``noise``, ``method``) and the ``tune`` / ``bipartition`` nodes a method node carries are
not top-level settings.
"""

from __future__ import annotations

import copy
import re
import sys
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pmlbench.core.parameters import Interval, Options, Type, check_parameter
from pmlbench.protocol.settings import EXPERIMENT, Setting, allowed_text, yaml_text
from pmlbench.protocol.settings import spec_field as experiment_field
from pmlbench.runner.timeout import UNIT_TIMEOUT


def _table(*settings: Setting) -> dict[str, Setting]:
    return {s.name: s for s in settings}


# The metrics a run computes unless told otherwise: the paper's seven.
DEFAULT_METRICS = list(EXPERIMENT["metrics"].default)

TOP_LEVEL: dict[str, Setting] = {
    **EXPERIMENT,
    **_table(
        Setting(
            "quiet",
            False,
            (Type(bool),),
            "true: no progress display (CI, batch jobs)",
            execution=True,
        ),
        Setting(
            "results_store",
            "outputs/store",
            (Type(str), None),
            "finished units, one file each; reruns skip them (null: no store)",
            execution=True,
        ),
        Setting(
            "recompute",
            False,
            (Type(bool),),
            "true: recompute units already in the store and replace them",
            execution=True,
        ),
        Setting(
            "cache_dir",
            "outputs/cache",
            (Type(str), None),
            "kNN graphs / NNLS weights shared across runs (null: no cache)",
            execution=True,
        ),
        Setting(
            "threads_per_job",
            None,
            (None, Options(("auto",)), Interval(int, 1, None)),
            "BLAS threads per job; null/auto: cores / parallel jobs of the launcher",
            execution=True,
        ),
        Setting(
            "unit_timeout",
            None,
            UNIT_TIMEOUT,
            "seconds per unit; a unit running longer is stopped, recorded as timed out, and the "
            "sweep goes on (null: no limit)",
            execution=True,
        ),
        Setting(
            "dry_run",
            False,
            (Type(bool),),
            "true: count done / failed / n/a / missing units and estimate the CPU time left, "
            "computing and writing nothing (docs/sweeps.md)",
            execution=True,
        ),
    ),
}

# Top-level names of the table (``protocol`` for ``protocol.n_splits``), in table order.
TOP_NAMES = tuple(dict.fromkeys(name.split(".")[0] for name in TOP_LEVEL))
# Settings that only say how to run; a run's title leaves them out.
EXECUTION = frozenset(name for name, s in TOP_LEVEL.items() if s.execution)


def spec_field(name: str) -> str | None:
    """The ExperimentSpec field a setting fills, None for none."""
    return experiment_field(name) if name in EXPERIMENT else None


# setting -> the ExperimentSpec field it fills, for the settings that fill one
SPEC_SETTINGS = {name: field for name in TOP_LEVEL if (field := spec_field(name)) is not None}


def default(name: str) -> Any:
    """The default of setting ``name`` (a fresh copy: lists may be changed)."""
    return copy.deepcopy(TOP_LEVEL[name].default)


def defaults() -> dict[str, Any]:
    """The default of every setting, by dotted name, in table order."""
    return {name: default(name) for name in TOP_LEVEL}


def tree() -> dict[str, Any]:
    """The defaults nested as in conf/config.yaml (``{"protocol": {"n_splits": 5, ...}}``)."""
    nested: dict[str, Any] = {}
    for name in TOP_LEVEL:
        *parents, last = name.split(".")
        node = nested
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = default(name)
    return nested


_MISSING = object()


def lookup(config: Mapping[str, Any], name: str) -> Any:
    """The value of dotted ``name`` in a config (:data:`_MISSING` when absent)."""
    node: Any = config
    for part in name.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return _MISSING
        node = node[part]
    return node


def value(config: Mapping[str, Any], name: str) -> Any:
    """The value of setting ``name`` in a config, its default when the config leaves it out."""
    found = lookup(config, name)
    return default(name) if found is _MISSING else found


def check_option(name: str, value: Any) -> None:
    """Raise a one-line PmlbenchError unless ``value`` is allowed for setting ``name``."""
    check_parameter(name, value, TOP_LEVEL[name].accepted, prefix="")


def check_execution_options(config: Mapping[str, Any]) -> None:
    """Check every execution setting a config holds (one line naming the first bad key).

    The other settings are ExperimentSpec's fields, checked when the spec is built.
    """
    for name in TOP_LEVEL:
        if name in EXECUTION and spec_field(name) is None:
            found = lookup(config, name)
            if found is not _MISSING:
                check_option(name, found)


def spec_values(config: Mapping[str, Any]) -> dict[str, Any]:
    """The ExperimentSpec fields the top-level settings fill, by field name, each from the
    config or else its default (the metrics as a list of their own)."""
    values = {field: value(config, name) for name, field in SPEC_SETTINGS.items()}
    if isinstance(values.get("metrics"), (list, tuple)):
        values["metrics"] = list(values["metrics"])
    return values


# ------------------------------------------------------------------ generated text


COMMENT_COLUMN = 30
WIDTH = 99


def _commented(text: str, description: str) -> list[str]:
    """``text`` followed by ``# description`` at :data:`COMMENT_COLUMN`, wrapped."""
    room = WIDTH - COMMENT_COLUMN - 2
    lines = textwrap.wrap(description.replace("`", ""), room)
    first = f"{text:<{COMMENT_COLUMN}}# {lines[0]}" if len(text) < COMMENT_COLUMN else text
    rest = lines[1:] if len(text) < COMMENT_COLUMN else lines
    return [first] + [" " * COMMENT_COLUMN + "# " + line for line in rest]


def config_block() -> str:
    """The top-level settings as conf/config.yaml states them, one commented key each."""
    lines: list[str] = []
    parents: set[str] = set()
    for name, s in TOP_LEVEL.items():
        *path, last = name.split(".")
        indent = "  " * len(path)
        for depth, part in enumerate(path):
            if ".".join(path[: depth + 1]) not in parents:
                parents.add(".".join(path[: depth + 1]))
                lines.append("  " * depth + f"{part}:")
        if isinstance(s.default, list):
            lines += _commented(f"{indent}{last}:", s.description)
            lines += [f"{indent}  - {yaml_text(item)}" for item in s.default]
        else:
            lines += _commented(f"{indent}{last}: {yaml_text(s.default)}", s.description)
    return "\n".join(lines) + "\n"


def markdown_table() -> str:
    """The table of top-level settings for the docs, one row per setting."""
    header = ["key", "default", "allowed", "sets", "meaning"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, s in TOP_LEVEL.items():
        shown = "[" + ", ".join(s.default) + "]" if isinstance(s.default, list) else s.default
        sets = "how it runs" if s.execution else "the numbers"
        row = [f"`{name}`", f"`{yaml_text(shown)}`", allowed_text(s), sets, s.description]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


_MARKED = {
    # conf/config.yaml
    "yaml": re.compile(
        r"(# <top-level-settings>[^\n]*\n)(?P<body>.*?)(# </top-level-settings>)", re.DOTALL
    ),
    # docs pages
    "md": re.compile(
        r"(<!-- top-level-settings [^\n]*-->\n)(?P<body>.*?)(<!-- /top-level-settings -->)",
        re.DOTALL,
    ),
}


def _kind(path: Path) -> str:
    return "yaml" if path.suffix in (".yaml", ".yml") else "md"


def generated_in(path: Path, text: str) -> str | None:
    """The generated part of a file's text (None when it has no markers)."""
    match = _MARKED[_kind(path)].search(text)
    return None if match is None else match["body"]


def expected(path: Path) -> str:
    """What the generated part of ``path`` should hold."""
    return config_block() if _kind(path) == "yaml" else markdown_table()


def render(path: Path, text: str) -> str:
    """``text`` with its generated part replaced by :func:`expected`."""
    body = expected(path)
    return _MARKED[_kind(path)].sub(lambda m: m[1] + body + m[3], text, count=1)


def main(paths: Sequence[str]) -> int:
    """Rewrite the generated part of conf/config.yaml and docs pages."""
    for path in map(Path, paths):
        text = path.read_text(encoding="utf-8")
        if generated_in(path, text) is None:
            print(f"{path}: no top-level-settings markers", file=sys.stderr)
            return 1
        path.write_text(render(path, text), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
