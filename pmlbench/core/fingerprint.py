"""Content digests of code and files: what a stored result says about the code that made it.

Four fingerprints enter the keys of stored results (pmlbench.runner.units and the
shared-work cache, pmlbench.core.workcache):

- :func:`modules_digest`: the pmlbench modules some code can run, found statically: the
  import closure (:func:`module_closure`) of a set of root modules, following every import
  statement (module level and inside functions, as tests/test_layers.py reads them) and the
  packages whose ``__init__`` an import runs, plus the package data of every package in the
  closure (the non-Python files in its directory outside sub-packages, such as the bundled
  datasets of ``pmlbench.datasets``). A unit's key covers the closure of its own plugins and
  of the protocol, so an edit of one method leaves the other methods' units valid.
- :func:`distribution_digest`: every file of a third-party distribution that provides a
  plugin, so an edit of any of its modules (or of its package data, such as the scripts an
  external-program wrapper ships) changes it. A regular installation is read from the
  distribution's file list (``RECORD``); an editable one, whose file list names no sources,
  from the directory of the plugin's top-level package. :func:`distribution_imports` names
  the pmlbench modules its files import, the roots of its part of the closure.
- :func:`pmlbench_source_digest`: every ``.py`` file of pmlbench itself, for the shared-work
  cache, whose entries are shared across methods and so not attributed to one method's
  modules.
- :func:`library_versions`: the major.minor versions of numpy, scipy and scikit-learn.

The whole-source and distribution digests leave out pmlbench's presentation packages
(:data:`PRESENTATION_PACKAGES`: the report and the command line). They sit above the runner
in the layer order (tests/test_layers.py), so no code that computes a unit's numbers imports
them (and no import closure of such code reaches them); a fix to a report table does not
make a finished suite's results stale.

Files are named by their path inside the installation (``pkg/mod.py``), never by their
absolute location, so the same code installed on a laptop and on a cluster has the same
digest. A file's digest and the imports read from it are memoised by its size, times and
inode: after the first call, a digest costs one ``stat`` per file, and a file edited within
a long process is read again.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import os
import sys
from collections.abc import Iterable
from functools import cache
from importlib.metadata import Distribution, PackageNotFoundError, version
from pathlib import Path

LIBRARIES = ("numpy", "scipy", "scikit-learn")
DIGEST_LENGTH = 16  # hex characters
_CHUNK = 1 << 20
_METADATA_SUFFIXES = (".dist-info", ".egg-info")
_SKIPPED_SUFFIXES = (".pyc", ".pyo", ".pth")
_EDITABLE_HOOKS = ("__editable__", "_editable_impl_")  # setuptools / hatch editable loaders
# Packages that present results and never compute them (the layers above pmlbench.runner that
# only read stores and parse commands); named as files are named in digests.
PRESENTATION_PACKAGES = ("pmlbench/report/", "pmlbench/cli/")

PACKAGE_NAME = "pmlbench"
_INIT = "__init__.py"

_file_digests: dict[str, tuple[tuple[int, ...], str]] = {}
_imports_read: dict[str, tuple[tuple[int, ...], frozenset[str]]] = {}
_set_digests: dict[tuple, str] = {}


def _stat_key(info: os.stat_result) -> tuple[int, ...]:
    """What tells a file's versions apart without reading it (an atomic replace changes the
    inode, an edit the size or the times)."""
    return (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)


def file_digest(path: str | Path) -> str:
    """SHA-256 of a file's bytes (first 64 bits, hex), memoised by its size, times and inode.

    Raises:
        OSError: the file cannot be read.
    """
    name = os.path.abspath(path)
    info = os.stat(name)
    held = _file_digests.get(name)
    if held is not None and held[0] == _stat_key(info):
        return held[1]
    hasher = hashlib.sha256()
    with open(name, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            hasher.update(chunk)
    digest = hasher.hexdigest()[:DIGEST_LENGTH]
    _file_digests[name] = (_stat_key(info), digest)
    return digest


def files_digest(files: Iterable[tuple[str, str | Path]]) -> str:
    """A digest of (name, file) pairs: the names and contents, not where the files are."""
    entries = []
    for name, path in files:
        try:
            info = os.stat(path)
        except OSError:
            continue  # listed but gone (e.g. a RECORD entry of a deleted file)
        entries.append((name, os.fspath(path), _stat_key(info)))
    signature = tuple(sorted(entries))
    held = _set_digests.get(signature)
    if held is not None:
        return held
    hasher = hashlib.sha256()
    for name, path, _ in signature:
        try:
            digest = file_digest(path)
        except OSError:
            digest = "unreadable"
        hasher.update(f"{name}\0{digest}\n".encode())
    result = hasher.hexdigest()[:DIGEST_LENGTH]
    _set_digests[signature] = result
    return result


def _skipped(parts: tuple[str, ...]) -> bool:
    return (
        not parts
        or parts[0] == ".."  # console scripts and other files outside the package tree
        or any(p.startswith(".") or p == "__pycache__" for p in parts)
        or any(p.endswith(_METADATA_SUFFIXES) for p in parts)
        or parts[-1].endswith(_SKIPPED_SUFFIXES)
        or parts[0].startswith(_EDITABLE_HOOKS)
    )


def _walk(directory: str, prefix: tuple[str, ...]) -> list[tuple[str, str]]:
    """Every file below ``directory`` (no hidden files, caches or metadata), named by
    ``prefix`` and its path relative to ``directory``."""
    found = []
    base = len(directory.rstrip(os.sep)) + 1
    for folder, dirs, names in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not _skipped((d,)))
        relative = tuple(folder[base:].split(os.sep)) if len(folder) >= base else ()
        for name in names:
            if name.startswith(".") or name.endswith(_SKIPPED_SUFFIXES):
                continue
            found.append(("/".join((*prefix, *relative, name)), os.path.join(folder, name)))
    return found


def _package_root(module: str) -> tuple[tuple[str, ...], str, bool] | None:
    """(name prefix, path, is a directory) of the package a module belongs to: the outermost
    regular package below any namespace packages, or the module's own file. Found without
    importing it (find_spec imports the namespace packages above only)."""
    return _find_package_root(module, tuple(sys.path))


@cache
def _find_package_root(
    module: str, path: tuple[str, ...]
) -> tuple[tuple[str, ...], str, bool] | None:
    parts = module.split(".")
    for depth in range(1, len(parts) + 1):
        try:
            spec = importlib.util.find_spec(".".join(parts[:depth]))
        except (ImportError, ValueError, AttributeError):
            return None
        if spec is None:
            return None
        if spec.has_location and spec.origin:
            locations = list(spec.submodule_search_locations or [])
            if locations:
                return tuple(parts[:depth]), locations[0], True
            return tuple(parts[: depth - 1]), spec.origin, False
    return None


def module_files(modules: Iterable[str]) -> list[tuple[str, str]]:
    """(name, path) of every file of the packages ``modules`` belong to."""
    found = []
    for root in sorted({r for m in modules if (r := _package_root(m)) is not None}):
        prefix, path, is_dir = root
        if is_dir:
            found += _walk(path, prefix)
        else:
            found.append(("/".join((*prefix, os.path.basename(path))), path))
    return found


def distribution_files(dist: Distribution) -> list[tuple[str, str]]:
    """The files a distribution installed (RECORD), without metadata, caches and launchers."""
    found = []
    for item in dist.files or []:
        parts = tuple(item.parts)
        if not _skipped(parts):
            found.append(("/".join(parts), str(dist.locate_file(item))))
    return found


def distribution_digest(dist: Distribution | None, modules: Iterable[str]) -> str | None:
    """A digest of every file of a distribution.

    Args:
        dist: the distribution (None for entry points that name none).
        modules: the modules its plugins come from; their package directories are read too,
            which is where an editable installation keeps the sources its RECORD omits.

    Returns:
        The digest, or None when no file is found.
    """
    files = set(module_files(modules))
    if dist is not None:
        files.update(distribution_files(dist))
    files = {(name, path) for name, path in files if not _presentation(name)}
    return files_digest(files) if files else None


def _presentation(name: str) -> bool:
    return name.startswith(PRESENTATION_PACKAGES)


def pmlbench_source_digest() -> str:
    """A digest of every ``.py`` file of pmlbench (``pmlbench/**/*.py``) outside
    :data:`PRESENTATION_PACKAGES`."""
    return files_digest(pmlbench_source_files())


def pmlbench_source_files() -> list[tuple[str, str]]:
    """(name, path) of the files :func:`pmlbench_source_digest` reads."""
    return [
        (name, path)
        for name, path in _walk(_package_dir(), (PACKAGE_NAME,))
        if name.endswith(".py") and not _presentation(name)
    ]


# ------------------------------------------------------------------ import closures


@cache
def _package_dir() -> str:
    return str(Path(__file__).resolve().parents[1])


def imported_names(path: str | Path, module: str) -> frozenset[str]:
    """The modules a Python file may import: every ``import`` statement, at module level or
    inside a function or class, read with :mod:`ast` (nothing is executed), relative imports
    resolved against ``module`` (the file's dotted name). ``from a import b`` gives both
    ``a`` and ``a.b``, since ``b`` may be a submodule; callers keep the names that are
    modules. Memoised by the file's size, times and inode.

    A file that cannot be read or parsed imports nothing here; it fails when run.
    """
    name = os.path.abspath(path)
    try:
        info = os.stat(name)
    except OSError:
        return frozenset()
    held = _imports_read.get(name)
    if held is not None and held[0] == _stat_key(info):
        return held[1]
    try:
        with open(name, "rb") as handle:
            tree = ast.parse(handle.read(), filename=name)
    except (OSError, SyntaxError, ValueError):
        found: frozenset[str] = frozenset()
    else:
        package = module if os.path.basename(name) == _INIT else module.rpartition(".")[0]
        found = frozenset(_names_in(tree, package))
    _imports_read[name] = (_stat_key(info), found)
    return found


def _names_in(tree: ast.AST, package: str) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                if node.level - 1 > len(base):
                    continue  # beyond the top-level package: fails when run
                base = base[: len(base) - node.level + 1]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            if origin:
                names.add(origin)
                names.update(f"{origin}.{alias.name}" for alias in node.names)
    return names


def _package_of(parts: tuple[str, ...], packages: set[tuple[str, ...]]) -> tuple[str, ...]:
    """The innermost package (a directory with ``__init__.py``) holding a file's folder."""
    while parts and parts not in packages:
        parts = parts[:-1]
    return parts


def pmlbench_tree() -> tuple[dict[str, tuple[str, str]], dict[str, list[tuple[str, str]]]]:
    """pmlbench's modules (dotted name -> (name, path) of its file) and each package's data
    files (package -> (name, path) of the non-Python files in its directory outside
    sub-packages), read from the installed package directory without importing anything.
    Walked on every call (about a millisecond), so a module added while a process runs is
    found."""
    files = _walk(_package_dir(), (PACKAGE_NAME,))
    packages = {
        tuple(name.split("/")[:-1]) for name, _ in files if name.rsplit("/", 1)[-1] == _INIT
    }
    modules: dict[str, tuple[str, str]] = {}
    data: dict[str, list[tuple[str, str]]] = {}
    for name, path in files:
        parts = tuple(name.split("/"))
        if name.endswith(".py"):
            if parts[:-1] not in packages:
                continue  # a script in a data folder is package data, not a module
            dotted = parts[:-1] if parts[-1] == _INIT else (*parts[:-1], parts[-1][:-3])
            modules[".".join(dotted)] = (name, path)
        elif (owner := _package_of(parts[:-1], packages)) and not _presentation(name):
            data.setdefault(".".join(owner), []).append((name, path))
    return modules, data


def module_closure(roots: Iterable[str]) -> list[str]:
    """Every pmlbench module that running ``roots`` can import, sorted.

    Starting from the roots that are pmlbench modules, follows every import statement of each
    module (:func:`imported_names`) and the packages above each module (importing
    ``a.b.c`` runs ``a/__init__.py`` and ``a/b/__init__.py``, and what they import). Names
    that are no pmlbench module (third-party modules, a function imported from a module)
    are dropped. Static: an import built at run time (``importlib.import_module(name)``)
    is not seen, which is why plugins, loaded through entry points, are roots themselves.
    """
    modules, _ = pmlbench_tree()
    return sorted(_closure(roots, modules))


def _closure(roots: Iterable[str], modules: dict[str, tuple[str, str]]) -> set[str]:
    seen: set[str] = set()
    todo = [r for r in roots if r in modules]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        parts = module.split(".")
        todo += [p for i in range(1, len(parts)) if (p := ".".join(parts[:i])) in modules]
        todo += [n for n in imported_names(modules[module][1], module) if n in modules]
    return seen


def closure_files(roots: Iterable[str]) -> list[tuple[str, str]]:
    """(name, path) of the files :func:`modules_digest` reads for ``roots``: the source of
    every module of their import closure and the data files of every package in it."""
    modules, data = pmlbench_tree()
    closure = _closure(roots, modules)
    found = []
    for module in sorted(closure):
        found.append(modules[module])
        found += data.get(module, [])
    return found


def modules_digest(roots: Iterable[str]) -> str:
    """A digest of the pmlbench code that running ``roots`` can execute
    (:func:`closure_files`): one ``stat`` per file and a set lookup once every file was read
    in this process."""
    return files_digest(closure_files(roots))


def distribution_imports(dist: Distribution | None, modules: Iterable[str]) -> set[str]:
    """The pmlbench modules any Python file of a (third-party) distribution imports: the
    roots of the pmlbench code its plugins can run (its own files count through
    :func:`distribution_digest`)."""
    files = set(module_files(modules))
    if dist is not None:
        files.update(distribution_files(dist))
    found: set[str] = set()
    for name, path in files:
        if not name.endswith(".py"):
            continue
        parts = name[:-3].split("/")
        dotted = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found.update(
            n
            for n in imported_names(path, dotted)
            if n == PACKAGE_NAME or n.startswith(PACKAGE_NAME + ".")
        )
    return found


def library_versions() -> dict[str, str | None]:
    """The major.minor versions of the numerical libraries results depend on (read once per
    process: a process keeps the libraries it imported)."""
    return dict(_library_versions())


@cache
def _library_versions() -> tuple[tuple[str, str | None], ...]:
    found: list[tuple[str, str | None]] = []
    for name in LIBRARIES:
        try:
            found.append((name, ".".join(version(name).split(".")[:2])))
        except PackageNotFoundError:
            found.append((name, None))
    return tuple(found)
