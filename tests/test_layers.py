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


def _package(path: Path, module: str) -> str:
    """The package a relative import in ``path`` (module ``module``) starts from."""
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _from_module(node: ast.ImportFrom, package: str) -> str:
    """The module of ``from X import ...``, a relative X resolved against ``package``."""
    if not node.level:
        return node.module or ""
    base = package.split(".")
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(path: Path, module: str) -> list[tuple[int, str]]:
    """(line, imported module) for every pmlbench import in a file, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = _package(path, module)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("pmlbench")]
        elif isinstance(node, ast.ImportFrom):
            module = _from_module(node, package)
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


def _is_module(name: str) -> bool:
    """Whether a dotted pmlbench name is a module or package of the source tree."""
    path = PACKAGE.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _imported_modules(path: Path, module: str) -> set[str]:
    """The pmlbench modules a file imports, at module level, inside functions or under
    TYPE_CHECKING alike; ``from package import name`` counts as importing the submodule
    ``package.name`` where there is one (else the package)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = _package(path, module)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("pmlbench")}
        elif isinstance(node, ast.ImportFrom):
            base = _from_module(node, package)
            if base == "pmlbench" or base.startswith("pmlbench."):
                for a in node.names:
                    found.add(f"{base}.{a.name}" if _is_module(f"{base}.{a.name}") else base)
    return found


def _import_graph(package: str) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports (itself excluded)."""
    folder = PACKAGE.parent.joinpath(*package.split("."))
    graph = {}
    for path in sorted(folder.rglob("*.py")):
        source = _module_name(path)
        graph[source] = {
            t
            for t in _imported_modules(path, source)
            if (t == package or t.startswith(package + ".")) and t != source
        }
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` as [a, b, ..., a], or None (depth-first search)."""
    done: set[str] = set()
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        path.append(node)
        for target in sorted(graph.get(node, ())):
            found = visit(target)
            if found:
                return found
        path.pop()
        done.add(node)
        return None

    for node in sorted(graph):
        found = visit(node)
        if found:
            return found
    return None


# packages whose modules import each other in one direction only: each module one concept,
# readable without the modules that read it (docs/architecture.md)
ACYCLIC_PACKAGES = ["pmlbench.report"]


@pytest.mark.parametrize("package", ACYCLIC_PACKAGES)
def test_modules_of_a_package_import_no_cycle(package):
    cycle = _cycle(_import_graph(package))
    assert cycle is None, f"import cycle in {package}: " + " -> ".join(cycle or [])


def test_the_cycle_check_finds_a_cycle_through_a_function_level_import(tmp_path):
    """The checker itself: a ``from package import module`` inside a function, under
    TYPE_CHECKING or at the top closes a cycle just the same."""
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    planted = tmp_path / "planted.py"
    planted.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pmlbench.report.build import build_report\n"
        "def f():\n    from pmlbench.report import html\n"
    )
    imported = _imported_modules(planted, "pmlbench.report.planted")
    assert imported == {"pmlbench.report.build", "pmlbench.report.html"}


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
