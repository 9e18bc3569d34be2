"""Content digests of code and files: what a stored result says about the code that made it.

Three fingerprints enter the keys of stored results (pmlbench.runner.units and the
shared-work cache, pmlbench.core.workcache):

- :func:`distribution_digest`: every file of the distribution that provides a plugin, so an
  edit of any of its modules (or of its package data, such as bundled datasets or the
  scripts an external-program wrapper ships) changes it. A regular installation is read
  from the distribution's file list (``RECORD``); an editable one, whose file list names no
  sources, from the directory of the plugin's top-level package.
- :func:`pmlbench_source_digest`: every ``.py`` file of pmlbench itself.
- :func:`library_versions`: the major.minor versions of numpy, scipy and scikit-learn.

The first two leave out pmlbench's presentation packages (:data:`PRESENTATION_PACKAGES`:
the report and the command line). They sit above the runner in the layer order
(tests/test_layers.py), so no code that computes a unit's numbers imports them; a fix to a
report table does not make a finished suite's results stale.

Files are named by their path inside the installation (``pkg/mod.py``), never by their
absolute location, so the same code installed on a laptop and on a cluster has the same
digest. A file's digest is memoised by its size and modification time: after the first
call, a digest costs one ``stat`` per file, and a file edited within a long process is read
again.
"""

from __future__ import annotations

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

_file_digests: dict[str, tuple[tuple[int, ...], str]] = {}
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
    package = str(Path(__file__).resolve().parents[1])
    return [
        (name, path)
        for name, path in _walk(package, ("pmlbench",))
        if name.endswith(".py") and not _presentation(name)
    ]


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
