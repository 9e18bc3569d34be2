"""The options of the ``bipartition`` and ``tune`` config nodes, each defined once.

Every option is one :class:`Setting`: its name, default, accepted values (constraints of
:mod:`pmlbench.core.parameters`), a one-line description, which bipartition rules read it,
and for ``tune`` whether it only says how to run (``n_jobs``). Everything else follows from
these two tables:

- the defaults of every method's config node (pmlbench.hydra_app.config_nodes), a method's
  ``default_bipartition`` on top;
- validation with one-line errors naming the key (``bipartition.cv must be an integer in
  [2, inf), got 1``): :func:`bipartition_options`, :func:`tune_options`;
- the options each bipartition rule reads (:func:`options_read_by`), hence which options a
  unit key keeps (:func:`bipartition_key`, :func:`tune_key`, used by pmlbench.runner.units);
- the option tables of docs/bipartition.md and docs/tuning.md (:func:`markdown_table`);
  regenerate them with ``python -m pmlbench.protocol.settings docs/bipartition.md
  docs/tuning.md``.

The ``tune.grid`` entry is not a setting: its keys are the method's parameters and its
default is the method's ``default_tuning_grid`` (pmlbench.protocol.tuning).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pmlbench.core.parallel import N_JOBS
from pmlbench.core.parameters import Constraint, Interval, Options, Type, check_parameter
from pmlbench.errors import PmlbenchError
from pmlbench.metrics.base import CONVENTIONS
from pmlbench.metrics.builtin import PAPER_METRICS


@dataclass(frozen=True)
class Setting:
    """One option of the ``bipartition`` or ``tune`` config node."""

    name: str
    default: Any
    accepted: tuple[Constraint, ...]
    description: str
    # Bipartition rules that read the option; None: every rule.
    read_by: tuple[str, ...] | None = None
    # (other option, value): read only while the other option has that value.
    only_when: tuple[str, Any] | None = None
    # A tune option that says how to run, not what is computed: not part of a unit key.
    execution: bool = False


RULE_NAMES = ("method", "threshold", "global", "per_label", "top_k")
_LEARNED = ("global", "per_label")
TRAINING_SCORES = ("cv", "train")


def _table(*settings: Setting) -> dict[str, Setting]:
    return {s.name: s for s in settings}


BIPARTITION: dict[str, Setting] = _table(
    Setting(
        "rule",
        "method",
        (Options(RULE_NAMES),),
        "how scores become label sets (the rules above); a method may set its own default",
    ),
    Setting(
        "threshold",
        0.5,
        (Interval(float, None, None, finite=False),),
        "the fixed threshold of `threshold`; for `global`/`per_label` the tie-breaker",
        read_by=("threshold", *_LEARNED),
    ),
    Setting(
        "allow_empty",
        True,
        (Type(bool),),
        "false: an instance whose rule selects no label gets its top-scored label",
    ),
    Setting(
        "objective",
        "hamming_loss",
        (Type(str),),
        "bipartition metric the thresholds optimise against the candidates (`micro_f1`, "
        "`macro_f1`, `hamming_loss`, `subset_accuracy` or a plugin); its direction is respected",
        read_by=_LEARNED,
    ),
    Setting(
        "training_scores",
        "cv",
        (Options(TRAINING_SCORES),),
        "scores the thresholds are fitted on: `cv` out-of-fold, `train` in-sample",
        read_by=_LEARNED,
    ),
    Setting(
        "cv",
        5,
        (Interval(int, 2, None),),
        "folds of the out-of-fold training scores",
        read_by=_LEARNED,
        only_when=("training_scores", "cv"),
    ),
)

TUNE_PROCEDURES = ("kfold", "holdout")

TUNE: dict[str, Setting] = _table(
    Setting("cv", 5, (Interval(int, 2, None),), "inner cross-validation folds"),
    Setting(
        "procedure",
        "holdout",
        (Options(TUNE_PROCEDURES),),
        "`kfold`: score every one of the `cv` folds; `holdout`: fit on (cv-1)/cv of the "
        "training split once and score the remaining part",
    ),
    Setting(
        "scoring",
        "average_precision",
        (Type(str),),
        "metric the held-out folds are scored with (any metric plugin, `pmlbench list`)",
    ),
    Setting(
        "oracle",
        False,
        (Type(bool),),
        "true: score against the ground truth instead of the candidates (marked `oracle`)",
    ),
    Setting(
        "n_jobs",
        None,
        (*N_JOBS, None),
        "processes for the folds (-1: all cores; null: the job's thread budget)",
        execution=True,
    ),
)

# The top-level config keys that define an experiment (pmlbench.protocol.experiment.
# ExperimentSpec's fields, named by their config path); pmlbench.runner.settings adds the
# keys that only say how to run.
EXPERIMENT: dict[str, Setting] = _table(
    Setting(
        "seed",
        0,
        (Interval(int, 0, None),),
        "the splits, noise draws and method seeds all derive from it",
    ),
    Setting(
        "protocol.n_splits", 5, (Interval(int, 1, None),), "random train/test splits, one unit each"
    ),
    Setting(
        "protocol.test_size",
        0.5,
        (Interval(float, 0, 1, closed="neither"),),
        "fraction of the instances in each test part",
    ),
    Setting(
        "metrics",
        list(PAPER_METRICS),
        (Type(list),),
        "metric plugins computed on each test part (`pmlbench list metric`)",
    ),
    Setting(
        "metric_convention",
        "zhang",
        (Options(CONVENTIONS),),
        "zhang (Zhang's MATLAB code, published PML numbers) or sklearn",
    ),
    Setting(
        "macro_f1_zero_division",
        0,
        (Options((0, 1, "exclude")),),
        "0, 1 or exclude: macro-F1 of a label never present nor predicted",
    ),
    Setting(
        "save_predictions",
        False,
        (Type(bool),),
        "true: `predictions/split_<i>.npz` with indices, candidates, scores",
        execution=True,
    ),
)


def spec_field(name: str) -> str:
    """The ExperimentSpec field of an EXPERIMENT setting: its name's last part."""
    return name.rsplit(".", 1)[-1]


NODES: dict[str, dict[str, Setting]] = {"bipartition": BIPARTITION, "tune": TUNE}
# Entries of a node that are not settings: tune.grid is built per method.
_NOT_SETTINGS = {"bipartition": frozenset(), "tune": frozenset({"grid"})}


def defaults(node: str) -> dict[str, Any]:
    """The default of every option of ``node`` ("bipartition" or "tune"), in table order."""
    return {name: s.default for name, s in NODES[node].items()}


def check_option(node: str, name: str, value: Any) -> None:
    """Raise a one-line PmlbenchError unless ``value`` is allowed for ``<node>.<name>``."""
    check_parameter(name, value, NODES[node][name].accepted, prefix=node)


def resolve(node: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """The options of a ``node`` config, checked, with defaults for those not given.

    Unknown options are an error; non-setting entries (``tune.grid``) are left out.
    """
    settings = NODES[node]
    unknown = set(config) - set(settings) - _NOT_SETTINGS[node]
    if unknown:
        raise PmlbenchError(
            f"unknown {node} options {sorted(unknown)}; known: "
            f"{sorted(set(settings) | _NOT_SETTINGS[node])}"
        )
    options = {}
    for name, setting in settings.items():
        options[name] = config.get(name, setting.default)
        check_option(node, name, options[name])
    return options


def bipartition_options(config: Mapping[str, Any]) -> dict[str, Any]:
    """The checked ``bipartition`` options, defaults filled in."""
    return resolve("bipartition", config)


def tune_options(config: Mapping[str, Any]) -> dict[str, Any]:
    """The checked ``tune`` options (without ``grid``), defaults filled in."""
    return resolve("tune", config)


def _reads(setting: Setting, rule: str, config: Mapping[str, Any] | None) -> bool:
    if setting.read_by is not None and rule not in setting.read_by:
        return False
    if setting.only_when is None or config is None:
        return True
    other, value = setting.only_when
    actual = config.get(other, BIPARTITION[other].default)
    # An invalid value decides nothing (the run fails on it): count the option as read.
    return actual == value or not _valid("bipartition", other, actual)


def _valid(node: str, name: str, value: Any) -> bool:
    try:
        check_option(node, name, value)
    except PmlbenchError:
        return False
    return True


def options_read_by(rule: str, config: Mapping[str, Any] | None = None) -> tuple[str, ...]:
    """The bipartition options ``rule`` may read; with ``config``, those it reads under that
    config (``cv`` only while ``training_scores`` is ``cv``)."""
    if rule not in RULE_NAMES:
        raise PmlbenchError(f"unknown bipartition rule {rule!r}; use one of {list(RULE_NAMES)}")
    return tuple(name for name, s in BIPARTITION.items() if _reads(s, rule, config))


def bipartition_key(config: Mapping[str, Any]) -> dict[str, Any]:
    """A ``bipartition`` node as it enters a unit key: without the options its rule ignores.

    A changed default of an unread option then leaves stored units valid. Options that are
    not settings stay (the run fails on them), and so does everything under an unknown or
    missing rule.
    """
    rule = config.get("rule")
    if rule not in RULE_NAMES:
        return dict(config)
    read = set(options_read_by(rule, config))
    return {k: v for k, v in config.items() if k not in BIPARTITION or k in read}


def tune_key(config: Mapping[str, Any]) -> dict[str, Any]:
    """A ``tune`` node as it enters a unit key: null grid entries tune nothing, without a grid
    the other options do nothing, and execution options (``n_jobs``) never count."""
    grid = {k: v for k, v in (config.get("grid") or {}).items() if v is not None}
    if not grid:
        return {}
    options = {
        k: v for k, v in config.items() if k != "grid" and not (k in TUNE and TUNE[k].execution)
    }
    return {**options, "grid": grid}


def yaml_text(value: Any) -> str:
    """A default as YAML writes it: ``true``, ``false``, ``null`` or the value's text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "null" if value is None else str(value)


def allowed_text(setting: Setting) -> str:
    """The values a setting accepts, for a docs table (``null or an integer in [2, inf)``)."""
    return " or ".join("null" if c is None else c.describe() for c in setting.accepted)


def markdown_table(node: str) -> str:
    """The option table of ``node`` for the docs, one row per setting."""
    if node == "bipartition":
        header = ["key", "default", "allowed", "read by rules", "meaning"]
    else:
        header = ["key", "default", "allowed", "in unit key", "meaning"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, s in NODES[node].items():
        if node == "bipartition":
            scope = "every rule" if s.read_by is None else ", ".join(f"`{r}`" for r in s.read_by)
            if s.only_when is not None:
                scope += f" (with `{s.only_when[0]}={yaml_text(s.only_when[1])}`)"
        else:
            scope = "no" if s.execution else "yes (with a grid)"
        row = [f"`{name}`", f"`{yaml_text(s.default)}`", allowed_text(s), scope, s.description]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


_MARKED = re.compile(
    r"(<!-- settings:(?P<node>\w+) .*?-->\n)(?P<table>.*?)(<!-- /settings:(?P=node) -->)",
    re.DOTALL,
)


def tables_in(text: str) -> dict[str, str]:
    """The generated tables of a docs page: node -> table text between its markers."""
    return {m["node"]: m["table"] for m in _MARKED.finditer(text)}


def render_docs(text: str) -> str:
    """A docs page with every marked table replaced by :func:`markdown_table`."""
    return _MARKED.sub(lambda m: m[1] + markdown_table(m["node"]) + m[4], text)


def main(paths: Sequence[str]) -> int:
    """Rewrite the marked option tables of the given docs pages."""
    for path in map(Path, paths):
        text = path.read_text(encoding="utf-8")
        if not tables_in(text):
            print(f"{path}: no <!-- settings:<node> --> table", file=sys.stderr)
            return 1
        path.write_text(render_docs(text), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
