"""Units of work and their content keys.

A unit is one split of one experiment: the dataset, the noise model and its parameters, the
method and its parameters, the tuning and bipartition config, the metrics and their
convention, the seed, the test size and the split index. Its key is the SHA-256 of the
canonical JSON of that normalised description, so the same unit has the same key however
the config was written (argument order, ``1`` or ``1.0``, defaults spelt out or not).
A run keys the experiment it prepared (:func:`describe_units` with the plugin registrations
pmlbench.protocol.experiment.prepare looked up), so the registry is not asked again;
:func:`unit_keys` and :func:`unit_key` look the plugins up themselves, with the same result.

Options that do nothing in a unit are dropped: the tuning options without a tuning grid, and
the bipartition options its rule does not read (pmlbench.protocol.settings says which those
are: ``tune_key``, ``bipartition_key``). The number of splits is not part of a unit
(split ``i`` is the same whether 2 or 5 splits
are run, see pmlbench.protocol.splits), nor are output options such as ``save_predictions``.

The description also holds what else determines a unit's numbers (pmlbench.core.fingerprint):

- ``code.pmlbench``: a digest of the pmlbench code the unit can run (:func:`code_roots`):
  the static import closure (module- and function-level imports, the packages an import
  runs, their package data) of the modules of its dataset, noise model, method and metrics
  (those it lists, the tuning score and the bipartition objective), of every pmlbench
  module a third-party plugin's distribution imports, and of :data:`COMPUTE_PACKAGES` and
  :data:`COMPUTE_MODULES` (the protocol and the runner modules that turn a split into
  stored numbers); :func:`code_modules` lists them. An edit of
  LIFT's module leaves ML-kNN's units valid; an edit of ML-kNN's module, of a module it
  imports or of the protocol gives ML-kNN's units new keys;
- ``code.plugins``: a digest of every file of each third-party distribution providing the
  unit's plugins (all modules and package data);
- ``code.libraries``: the major.minor versions of numpy, scipy and scikit-learn, and the
  full version of each optional library in :data:`OPTIONAL_LIBRARIES` (PyTorch) that the
  unit's code imports: a deep method's units carry the torch version, and the key of a
  unit whose code imports none of them is what it was before they existed;
- ``files``: the content of every file a dataset, noise or method config string names
  (``dataset.path``, ``dataset.xml``, a script in ``method.command``: the string itself, or
  any of its shell words, or the value of a ``--opt=value`` word, that is an existing file
  relative to the working directory or to the node's ``workdir``).

Anything else (a file an external script reads by itself, environment variables, BLAS)
is not covered: use ``recompute=true``. docs/sweeps.md has the table.

Schema history: 1 fingerprinted the plugins' entry-point modules only; 2 covered the whole
distributions, all of pmlbench's source (but the report and the command line), library
versions and named files; 3 (this version) covers, of pmlbench, only the import closure of
the unit's plugins and of the protocol.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from pmlbench.core.fingerprint import (
    PACKAGE_NAME,
    distribution_digest,
    distribution_files,
    distribution_imports,
    file_digest,
    imported_names,
    library_versions,
    module_closure,
    module_files,
    modules_digest,
    pmlbench_tree,
)
from pmlbench.errors import PmlbenchError
from pmlbench.plugins import registry
from pmlbench.plugins.registry import PluginInfo
from pmlbench.protocol.experiment import ExperimentSpec, plugin_requests
from pmlbench.protocol.settings import bipartition_key, tune_key

SCHEMA = 3
# Besides its plugins, what computes every unit's numbers: every module of these packages
# (the protocol: splits, noise, fitting with tuning, bipartition, metrics) and these modules
# (the runner's rows of a stored unit, outputs.tidy_records, and the child process a unit
# runs in under unit_timeout), with all they import. The rest of the runner decides which
# units to run and copies their results into the store, never changing a number.
COMPUTE_PACKAGES = ("pmlbench.protocol",)
COMPUTE_MODULES = ("pmlbench.runner.outputs", "pmlbench.runner.timeout")
# ExperimentSpec fields that say how many units to run or what to write, not what a unit is.
NOT_UNIT_FIELDS = frozenset({"n_splits", "save_predictions"})
# the plugin config nodes whose strings may name files
FILE_NODES = ("dataset", "noise", "method")
KEY_LENGTH = 32  # hex characters (128 bits)
# Optional libraries (import name: distribution) whose full version enters ``code.libraries``
# of the units whose code imports them, statically (at module level or in a function, as the
# import closure is read): the deep methods' PyTorch, whose kernels change numbers between
# releases. A unit whose code imports none of them keeps the key it had before.
OPTIONAL_LIBRARIES = {"torch": "torch"}


def _canonical(value: Any) -> Any:
    """Plain JSON data with one spelling per value: integral floats become ints."""
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer():
            return int(value)
        return float(value)
    if hasattr(value, "item"):  # numpy scalar
        return _canonical(value.item())
    raise PmlbenchError(
        f"config value {value!r} of type {type(value).__name__} cannot be part of a unit key; "
        "use numbers, strings, booleans, null, lists or mappings"
    )


def _plugin_infos(spec: ExperimentSpec) -> list[PluginInfo]:
    """The registrations of the plugins a unit runs
    (pmlbench.protocol.experiment.plugin_requests), looked up in the registry; nothing is
    imported. The runner does not call this: it keys the experiment it prepared
    (:func:`describe_units` with the registrations pmlbench.protocol.experiment.prepare
    looked up)."""
    infos = []
    for kind, name, _ in plugin_requests(spec):
        try:
            infos.append(registry.get(kind, name))
        except PmlbenchError:
            continue  # an unknown plugin fails when the experiment is prepared
    return infos


def _entry_module(info: PluginInfo) -> str:
    return str(info.entry_point.value).partition(":")[0].strip()


def _in_pmlbench(module: str) -> bool:
    return module == PACKAGE_NAME or module.startswith(PACKAGE_NAME + ".")


def _third_party(
    infos: list[PluginInfo],
) -> dict[str, tuple[Any, set[str]]]:
    """(distribution, entry modules) of the plugins not in pmlbench, by distribution label."""
    groups: dict[str, tuple[Any, set[str]]] = {}
    for info in infos:
        module = _entry_module(info)
        if _in_pmlbench(module):
            continue
        dist = getattr(info.entry_point, "dist", None)
        label = info.distribution if dist is not None else f"<module {module.split('.')[0]}>"
        groups.setdefault(label, (dist, set()))[1].add(module)
    return groups


def _distribution_digests(infos: list[PluginInfo]) -> dict[str, str | None]:
    """One digest per third-party distribution providing any of ``infos``; nothing is
    imported, so a plugin that fails to import has the digest a later, working version is
    compared with."""
    return {
        label: distribution_digest(dist, sorted(modules))
        for label, (dist, modules) in sorted(_third_party(infos).items())
    }


def code_roots(infos: list[PluginInfo]) -> list[str]:
    """The pmlbench modules whose import closure a unit with plugins ``infos`` covers: the
    pmlbench plugins' modules, the pmlbench modules the third-party plugins' distributions
    import, and :data:`COMPUTE_PACKAGES` / :data:`COMPUTE_MODULES`."""
    modules, _ = pmlbench_tree()
    roots = {_entry_module(i) for i in infos if _in_pmlbench(_entry_module(i))}
    for dist, entry_modules in _third_party(infos).values():
        roots |= distribution_imports(dist, sorted(entry_modules))
    roots.update(COMPUTE_MODULES)
    roots.update(m for m in modules for p in COMPUTE_PACKAGES if m == p or m.startswith(p + "."))
    return sorted(r for r in roots if r in modules)


def code_modules(spec: ExperimentSpec) -> list[str]:
    """The pmlbench modules ``code.pmlbench`` covers for the units of ``spec`` (sorted)."""
    return module_closure(code_roots(_plugin_infos(spec)))


def plugin_fingerprint(kind: str, name: str) -> str | None:
    """A digest of the code of one plugin (None when unknown): its third-party
    distribution's files, or the pmlbench modules its module imports."""
    try:
        info = registry.get(kind, name)
    except PmlbenchError:
        return None
    digests = _distribution_digests([info])
    if digests:
        (digest,) = digests.values()
        return digest
    return modules_digest([_entry_module(info)])


def code_fingerprint(spec: ExperimentSpec) -> dict[str, Any]:
    """The code a unit's numbers depend on: the import closure of its plugins and of the
    protocol in pmlbench, its third-party plugins' distributions and the numerical
    libraries' major.minor versions (the plugins looked up in the registry)."""
    return _code_digests(_plugin_infos(spec))


def _code_digests(infos: Sequence[PluginInfo]) -> dict[str, Any]:
    """:func:`code_fingerprint` of a unit running the plugins ``infos`` register."""
    infos = list(infos)
    plugins = _distribution_digests(infos)
    roots = code_roots(infos)
    pmlbench = modules_digest(roots)
    # the digests identify the code read, so what it imports is read once per version of it
    code = (pmlbench, tuple(sorted(plugins.items())))
    if code not in _optional_by_code:
        _optional_by_code[code] = _optional_imports(infos, roots)
    optional = {name: _installed_version(name) for name in _optional_by_code[code]}
    return {
        "plugins": plugins,
        "pmlbench": pmlbench,
        "libraries": {**library_versions(), **optional},
    }


_optional_by_code: dict[tuple, tuple[str, ...]] = {}


def _optional_imports(infos: list[PluginInfo], roots: list[str]) -> tuple[str, ...]:
    """The distributions of :data:`OPTIONAL_LIBRARIES` that the code of a unit running
    ``infos`` imports (its pmlbench modules, the import closure of ``roots``, and its
    third-party plugins' distributions), read statically: nothing is imported."""
    modules, _ = pmlbench_tree()
    files = [modules[m] for m in module_closure(roots)]
    for dist, entry_modules in _third_party(infos).values():
        files += module_files(sorted(entry_modules))
        files += distribution_files(dist) if dist is not None else []
    imported: set[str] = set()
    for name, path in files:
        if name.endswith(".py"):
            parts = name[:-3].split("/")
            dotted = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            imported.update(n.split(".")[0] for n in imported_names(path, dotted))
    return tuple(sorted(d for m, d in OPTIONAL_LIBRARIES.items() if m in imported))


@cache
def _installed_version(distribution: str) -> str | None:
    """A distribution's full version (None: not installed), read once per process: a process
    keeps the libraries it imported."""
    try:
        return version(distribution)
    except PackageNotFoundError:
        return None


def optional_library_versions(infos: list[PluginInfo]) -> dict[str, str | None]:
    """The full versions (None: not installed) of the :data:`OPTIONAL_LIBRARIES` that the code
    of a unit running ``infos`` imports, as ``code.libraries`` records them."""
    return {name: _installed_version(name) for name in _optional_imports(infos, code_roots(infos))}


def _existing_file_digest(token: str, folders: list[Path]) -> str | None:
    """The digest of the file ``token`` names (relative to the working directory or to one
    of ``folders``), None when it names none."""
    try:
        path = Path(token).expanduser()
        candidates = [path] if path.is_absolute() else [path, *(f / path for f in folders)]
        digests = [file_digest(c) for c in candidates if c.is_file()]
    except (OSError, ValueError):
        return None  # not a path (e.g. a NUL byte, too long) or unreadable
    return "+".join(dict.fromkeys(digests)) or None


def _file_tokens(value: str, depth: int = 3) -> list[str]:
    """The string itself, its shell words and the values of its ``--opt=value`` words; a
    word that is itself a command line (the script of ``sh -c '...'``) is split again, at
    ``;``, ``&&``, ``|`` and the like too."""
    tokens = [value]
    if any(c.isspace() for c in value):
        try:
            lexer = shlex.shlex(value, posix=True, punctuation_chars=True)
            lexer.whitespace_split, lexer.commenters = True, ""  # as shlex.split
            words = list(lexer)
        except ValueError:
            words = []  # unbalanced quotes: not a command line
        for word in words:
            tokens += _file_tokens(word, depth - 1) if depth > 0 else [word]
    tokens += [t.split("=", 1)[1] for t in tokens if t.startswith("-") and "=" in t]
    return list(dict.fromkeys(t for t in tokens if t))


def _strings(node: Any, location: str) -> list[tuple[str, str]]:
    """(location, string) of every string in a config node, recursively (``name`` skipped)."""
    if isinstance(node, str):
        return [(location, node)]
    if isinstance(node, dict):
        return [
            found
            for key, value in node.items()
            if key != "name"
            for found in _strings(value, f"{location}.{key}")
        ]
    if isinstance(node, (list, tuple)):
        return [
            found for i, value in enumerate(node) for found in _strings(value, f"{location}[{i}]")
        ]
    return []


def input_files(spec: ExperimentSpec) -> dict[str, dict[str, str]]:
    """The content digests of the files the dataset, noise and method configs name, by
    config location and the string (or shell word) naming them."""
    found: dict[str, dict[str, str]] = {}
    for kind in FILE_NODES:
        node = getattr(spec, kind) or {}
        workdir = node.get("workdir") if isinstance(node, dict) else None
        folders = [Path(workdir).expanduser()] if isinstance(workdir, str) and workdir else []
        for location, value in _strings(node, kind):
            for token in _file_tokens(value):
                digest = _existing_file_digest(token, folders)
                if digest is not None:
                    found.setdefault(location, {})[token] = digest
    return found


def _unit(spec: ExperimentSpec, split: int) -> dict[str, Any]:
    """The description of split ``split`` of ``spec`` without the fingerprints, not yet
    canonical."""
    fields = {
        f.name: getattr(spec, f.name)
        for f in dataclasses.fields(spec)
        if f.name not in NOT_UNIT_FIELDS
    }
    fields["tune"] = tune_key(dict(fields.get("tune") or {}))
    fields["bipartition"] = bipartition_key(dict(fields.get("bipartition") or {}))
    fields["metrics"] = sorted(fields.get("metrics") or [])
    return {"schema": SCHEMA, **fields, "split": int(split)}


def unit_description(
    spec: ExperimentSpec,
    split: int,
    *,
    fingerprints: bool = True,
    code: dict[str, Any] | None = None,
    files: dict[str, dict[str, str]] | None = None,
) -> dict[str, Any]:
    """The normalised, canonical description of split ``split`` of ``spec``.

    Args:
        spec: the experiment.
        split: the split index.
        fingerprints: add ``code`` and ``files`` (see the module docstring).
        code, files: the fingerprints to use; by default taken now
            (:func:`code_fingerprint`, :func:`input_files`).
    """
    unit = _unit(spec, split)
    if fingerprints:
        unit["code"] = code_fingerprint(spec) if code is None else code
        unit["files"] = input_files(spec) if files is None else files
    return _canonical(unit)


def canonical_json(data: Any) -> str:
    """Key-sorted, whitespace-free JSON: equal data gives equal text."""
    return json.dumps(
        _canonical(data), sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )


def content_key(data: Any) -> str:
    """The content key of plain data: SHA-256 of its canonical JSON (first 128 bits, hex)."""
    return hashlib.sha256(canonical_json(data).encode("ascii")).hexdigest()[:KEY_LENGTH]


def unit_key(spec: ExperimentSpec, split: int, *, fingerprints: bool = True) -> str:
    """The content key of split ``split`` of ``spec`` (fingerprints taken now)."""
    return content_key(unit_description(spec, split, fingerprints=fingerprints))


@dataclass(frozen=True)
class Units:
    """The units of one experiment in split order: the description of each and its key.

    A unit's store record holds the description its key was computed from, even if a file
    changes while the unit runs (the next run then sees the change).
    """

    descriptions: tuple[dict[str, Any], ...]
    keys: tuple[str, ...]


def describe_units(spec: ExperimentSpec, registrations: Sequence[PluginInfo]) -> Units:
    """Every unit of ``spec``, its plugins registered as ``registrations`` (those
    pmlbench.protocol.experiment.prepare looked up, for a run); the fingerprints are taken
    once, now."""
    code, files = _code_digests(registrations), input_files(spec)
    descriptions = tuple(
        _canonical({**_unit(spec, split), "code": code, "files": files})
        for split in range(int(spec.n_splits))
    )
    return Units(descriptions, tuple(content_key(d) for d in descriptions))


def unit_keys(spec: ExperimentSpec) -> list[str]:
    """The keys of every split of ``spec``, in split order (the plugins looked up in the
    registry, fingerprints taken once, now): :func:`describe_units`'s."""
    return list(describe_units(spec, _plugin_infos(spec)).keys)
