"""The layer contract: imports inside pmlbench point down the stack, never up or sideways.

Every import statement is read from the source (module level and inside functions alike),
so a cycle dodged with a function-level import fails here too. docs/architecture.md
describes the layers; this table is their definition.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pmlbench"

# Top to bottom. A module may import its own package and anything in a lower layer;
# packages sharing a layer are independent of each other.
LAYERS: list[tuple[str, ...]] = [
    ("pmlbench.__main__",),
    ("pmlbench.cli",),
    ("pmlbench.api", "pmlbench.testing"),
    ("pmlbench.hydra_app", "pmlbench.report"),
    ("pmlbench.runner",),
    ("pmlbench.protocol",),
    ("pmlbench.plugins",),
    ("pmlbench.plugin",),
    ("pmlbench.datasets", "pmlbench.noise", "pmlbench.methods", "pmlbench.metrics"),
    ("pmlbench.stats", "pmlbench.numerics"),
    ("pmlbench.core",),
    ("pmlbench",),  # the package itself: __version__ and the error type
    ("pmlbench.errors",),
]


def _component(module: str) -> tuple[int, str]:
    """(layer index, component) of a pmlbench module: the longest matching prefix."""
    best: tuple[int, str] | None = None
    for index, layer in enumerate(LAYERS):
        for component in layer:
            if module == component or module.startswith(component + "."):
                if best is None or len(component) > len(best[1]):
                    best = (index, component)
    assert best is not None, f"{module} belongs to no layer; add it to LAYERS"
    return best


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path, module: str) -> list[tuple[int, str]]:
    """(line, imported module) for every pmlbench import in a file, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("pmlbench")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module == "pmlbench":  # from pmlbench import x: x may be a subpackage
                found += [(node.lineno, f"pmlbench.{a.name}") for a in node.names]
            elif module.startswith("pmlbench."):
                found.append((node.lineno, module))
    return found


def _check_file(path: Path, source: str) -> list[str]:
    """Problems of one file, read as module ``source``."""
    source_layer, source_component = _component(source)
    problems = []
    for line, target in _imports(path, source):
        target_layer, target_component = _component(target)
        if target_component == source_component or target_layer > source_layer:
            continue
        relation = "up" if target_layer < source_layer else "sideways"
        problems.append(
            f"{path.name}:{line}: {source} imports {target} "
            f"({relation}: {source_component} -> {target_component})"
        )
    return problems


def _violations() -> list[str]:
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        problems += _check_file(path, _module_name(path))
    return problems


def test_imports_point_down_the_layers():
    problems = _violations()
    assert not problems, "layer contract broken:\n" + "\n".join(problems)


def test_every_module_belongs_to_a_layer():
    for path in PACKAGE.rglob("*.py"):
        _component(_module_name(path))


@pytest.mark.parametrize(
    "source, statement",
    [
        ("pmlbench.protocol.tuning", "from pmlbench.runner.store import ResultStore"),
        ("pmlbench.methods.ridge", "from pmlbench.protocol import bipartition"),
        ("pmlbench.methods.ridge", "import pmlbench.noise.uniform"),
        ("pmlbench.core.checks", "from ..numerics import neighbors"),
    ],
)
def test_the_check_flags_an_upward_or_sideways_import(tmp_path, source, statement):
    """The checker itself: a planted upward or sideways import, even inside a function."""
    planted = tmp_path / "planted.py"
    planted.write_text(f"def f():\n    {statement}\n")
    assert len(_check_file(planted, source)) == 1
    planted.write_text("from pmlbench.errors import PmlbenchError\n")
    assert _check_file(planted, source) == []


def test_top_level_keeps_at_most_eight_modules():
    modules = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")
    assert len(modules) <= 8, modules


def test_methods_do_not_import_each_other():
    """What two methods share lives below them (numerics/, core/, methods/_constraints.py),
    so a method's unit keys follow only its own code (pmlbench.runner.units)."""
    methods = PACKAGE / "methods"
    problems = []
    for path in sorted(methods.rglob("*.py")):
        source = _module_name(path)
        parts = source.split(".")
        own = ".".join(parts[:3])  # pmlbench.methods.<method>, a module or a package
        for line, target in _imports(path, source):
            if not target.startswith("pmlbench.methods.") and target != "pmlbench.methods":
                continue
            if target == own or target.startswith(own + "."):
                continue
            if target in ("pmlbench.methods", "pmlbench.methods._constraints"):
                continue
            problems.append(f"{path.name}:{line}: {source} imports {target}")
    assert not problems, "\n".join(problems)
