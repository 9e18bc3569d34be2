"""What the site says about each plugin, read from the plugin registry and the plugins' code.

Nothing here restates a number: parameters and defaults come from the signature
(:func:`pmlbench.plugins.parameters.plugin_parameters`), constraints from
``parameter_constraints``, the grid and bipartition from the method's config node
(:func:`pmlbench.protocol.method_defaults.method_node`), the grid's source from the comment
above ``default_tuning_grid`` in the class, the parameter texts from the class docstring's
``Args:`` section, the cross-kernel status from the ``machine_dependent`` hook, the paper
from the method module's docstring, and a dataset's sizes and statistics from the data its
loader returns.
"""

from __future__ import annotations

import importlib
import inspect
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from pmlbench.core.parameters import declared_constraints
from pmlbench.plugins import registry
from pmlbench.plugins.parameters import REQUIRED, plugin_parameters
from pmlbench.protocol.method_defaults import method_node
from pmlbench.protocol.settings import bipartition_key

DOCS = Path(__file__).resolve().parents[2]
# the site documents pmlbench's own plugins; other installed distributions document theirs
DISTRIBUTION = "pmlbench"


@dataclass(frozen=True)
class Parameter:
    """One constructor parameter of a method (or keyword of a loader)."""

    name: str
    default: Any
    allowed: str  # the declared constraints in words ("" when none are declared)
    doc: str  # its entry in the docstring's Args section ("" when it has none)


@dataclass(frozen=True)
class MethodFacts:
    name: str
    target: str  # module:qualname of the entry point
    distribution: str
    summary: str  # the class docstring's first paragraph
    paper: str  # the method module's docstring's first paragraph
    module: str  # the method's module under pmlbench.methods (its page's stem)
    parameters: list[Parameter]
    grid: dict[str, list[Any]]
    grid_source: str  # the comment above default_tuning_grid ("" when there is none)
    grid_owner: str  # module:qualname of the class that declares the grid
    fit_grid: bool
    bipartition: dict[str, Any]
    tune: dict[str, Any]  # the tune node without its grid
    machine_dependent: str | None
    page: str | None  # the hand-written page (docs-relative, e.g. methods/mlknn.md)

    @property
    def required(self) -> list[str]:
        return [p.name for p in self.parameters if p.default == REQUIRED]


@dataclass(frozen=True)
class DatasetFacts:
    name: str
    target: str
    distribution: str
    summary: str
    parameters: list[Parameter]
    stats: dict[str, Any] = field(default_factory=dict)  # empty when it needs parameters
    meta: dict[str, Any] = field(default_factory=dict)


def first_paragraph(text: str | None) -> str:
    """The first paragraph of a docstring on one line."""
    paragraph = inspect.cleandoc(text or "").split("\n\n")[0]
    return " ".join(paragraph.split())


_ENTRY = re.compile(r"^([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*(?:\([^)]*\))?\s*:(?:\s+(.*))?$")


def args_section(doc: str | None) -> dict[str, str]:
    """The entries of a Google-style ``Args:`` section, each on one line; an entry naming
    several parameters (``max_iter, tol: ...``) is given to each of them."""
    lines = inspect.cleandoc(doc or "").splitlines()
    start = next(
        (i for i, line in enumerate(lines) if line.strip() in ("Args:", "Arguments:")), None
    )
    if start is None:
        return {}
    header = len(lines[start]) - len(lines[start].lstrip())
    base: int | None = None
    joined: list[str] = []  # one logical entry each, continuation lines appended
    for line in lines[start + 1 :]:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if indent <= header:
            break
        base = indent if base is None else base
        if indent == base or not joined:
            joined.append(line.strip())
        else:
            joined[-1] = f"{joined[-1]} {line.strip()}"
    entries: dict[str, str] = {}
    for entry in joined:
        match = _ENTRY.match(entry)
        if match:
            for name in re.split(r"\s*,\s*", match.group(1)):
                entries[name] = (match.group(2) or "").strip()
    return entries


def describe_constraints(constraints: Any) -> str:
    """Accepted forms of one parameter in words, as the one-line errors spell them."""
    return " or ".join("null" if c is None else c.describe() for c in constraints)


def grid_declaration(cls: type) -> tuple[str, str]:
    """(the comment lines right above ``default_tuning_grid = ...``, module:qualname of the
    class declaring it); ("", "") when no class of the MRO declares one."""
    owner = next((k for k in cls.__mro__ if "default_tuning_grid" in vars(k)), None)
    if owner is None:
        return "", ""
    where = f"{owner.__module__}:{owner.__qualname__}"
    try:
        lines = inspect.getsource(owner).splitlines()
    except (OSError, TypeError):
        return "", where
    for index, line in enumerate(lines):
        if re.match(r"\s+default_tuning_grid\b[^=]*=", line):
            comments: list[str] = []
            above = index - 1
            while above >= 0 and lines[above].strip().startswith("#"):
                comments.insert(0, lines[above].strip().lstrip("#").strip())
                above -= 1
            return " ".join(comments), where
    return "", where


def method_module(cls: type) -> str:
    """The method's own module: ``pmlbench.methods.<stem>`` for a built-in (a package's
    ``__init__`` for methods split into modules), else the class's module."""
    parts = cls.__module__.split(".")
    if parts[:2] == ["pmlbench", "methods"] and len(parts) > 2:
        return ".".join(parts[:3])
    return cls.__module__


def method_page(module: str) -> str | None:
    """The hand-written page of a built-in method's module, if there is one."""
    stem = module.rsplit(".", 1)[-1]
    page = DOCS / "methods" / f"{stem}.md"
    return (
        f"methods/{stem}.md" if module.startswith("pmlbench.methods.") and page.exists() else None
    )


def method_facts(name: str) -> MethodFacts:
    info = registry.get("method", name)
    cls = info.load()
    defaults = plugin_parameters("method", cls)
    constraints = declared_constraints(cls)
    texts = args_section(inspect.getdoc(cls)) or args_section(inspect.getdoc(cls.__init__))
    parameters = [
        Parameter(
            p,
            default,
            describe_constraints(constraints[p]) if p in constraints else "",
            texts.get(p, ""),
        )
        for p, default in defaults.items()
    ]
    node = method_node(name, cls)
    grid = {p: values for p, values in node["tune"]["grid"].items() if values is not None}
    tune = {k: v for k, v in node["tune"].items() if k != "grid"}
    comment, owner = grid_declaration(cls)
    module = method_module(cls)
    paper = first_paragraph(importlib.import_module(module).__doc__)
    machine = getattr(cls, "machine_dependent", None)
    return MethodFacts(
        name=name,
        target=str(info.entry_point.value),
        distribution=info.distribution,
        summary=registry.describe(cls),
        paper=paper,
        module=module,
        parameters=parameters,
        grid=grid,
        grid_source=comment,
        grid_owner=owner,
        fit_grid=callable(getattr(cls, "fit_grid", None)),
        # without the options its rule does not read (as a unit key holds it)
        bipartition=bipartition_key(node["bipartition"]),
        tune=tune,
        machine_dependent=machine if isinstance(machine, str) else None,
        page=method_page(module),
    )


def methods() -> list[MethodFacts]:
    """Every method plugin of pmlbench's own distribution, by name."""
    return [
        method_facts(name)
        for name, info in registry.plugins("method").items()
        if info.distribution == DISTRIBUTION
    ]


def dataset_statistics(data: Any, test_size: float) -> dict[str, Any]:
    """Sizes and label statistics of a loaded dataset (pmlbench.datasets.Dataset)."""
    from pmlbench.protocol.splits import plan_splits

    X, Y = data.X, data.Y
    n, d = X.shape
    nonzero = X.nnz if sp.issparse(X) else int(np.count_nonzero(X))
    per_row = Y.sum(axis=1)
    plan = plan_splits(n, 1, test_size, 0)[0]
    stats: dict[str, Any] = {
        **data.summary(),
        "n_train": int(len(plan.train_idx)),
        "n_test": int(len(plan.test_idx)),
        "feature_density": nonzero / (n * d),
        "label_density": float(per_row.mean()) / Y.shape[1],
        "max_labels": int(per_row.max()),
        "no_label": int(np.sum(per_row == 0)),
        "never_positive": int(np.sum(Y.sum(axis=0) == 0)),
        "label_sets": len({row.tobytes() for row in np.packbits(Y, axis=1)}),
    }
    if data.Y_candidates is not None:
        candidates = data.Y_candidates.sum(axis=1)
        stats["max_candidates"] = int(candidates.max())
        stats["false_candidates"] = float((candidates - per_row).mean())
    return stats


def dataset_facts(name: str, test_size: float) -> DatasetFacts:
    info = registry.get("dataset", name)
    loader = info.load()
    defaults = plugin_parameters("dataset", loader)
    texts = args_section(inspect.getdoc(loader))
    parameters = [Parameter(p, v, "", texts.get(p, "")) for p, v in defaults.items()]
    stats: dict[str, Any] = {}
    meta: dict[str, Any] = {}
    if REQUIRED not in defaults.values():
        data = loader()
        stats = dataset_statistics(data, test_size)
        meta = dict(data.meta)
    return DatasetFacts(
        name=name,
        target=str(info.entry_point.value),
        distribution=info.distribution,
        summary=registry.describe(loader),
        parameters=parameters,
        stats=stats,
        meta=meta,
    )


def datasets(test_size: float) -> list[DatasetFacts]:
    """Every dataset plugin of pmlbench's own distribution, by name."""
    return [
        dataset_facts(name, test_size)
        for name, info in registry.plugins("dataset").items()
        if info.distribution == DISTRIBUTION
    ]
