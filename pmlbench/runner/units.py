"""Units of work and their content keys.

A unit is one split of one experiment: the dataset, the noise model and its parameters, the
method and its parameters, the tuning and bipartition config, the metrics and their
convention, the seed, the test size and the split index. Its key is the SHA-256 of the
canonical JSON of that normalised description, so the same unit has the same key however
the config was written (argument order, ``1`` or ``1.0``, defaults spelt out or not).

Options that do nothing in a unit are dropped: the tuning options without a tuning grid, and
the bipartition options its rule does not read (pmlbench.protocol.settings says which those
are: ``tune_key``, ``bipartition_key``). The number of splits is not part of a unit
(split ``i`` is the same whether 2 or 5 splits
are run, see pmlbench.protocol.splits), nor are output options such as ``save_predictions``.

The description also holds what else determines a unit's numbers (pmlbench.core.fingerprint):

- ``code.plugins``: a digest of every file of each distribution providing the unit's
  dataset, noise model, method and metrics (all modules and package data, bundled datasets
  included);
- ``code.pmlbench``: a digest of pmlbench's own source (``pmlbench/**/*.py``);
- ``code.libraries``: the major.minor versions of numpy, scipy and scikit-learn;
- ``files``: the content of every file a dataset, noise or method config string names
  (``dataset.path``, ``dataset.xml``, a script in ``method.command``: the string itself, or
  any of its shell words, or the value of a ``--opt=value`` word, that is an existing file
  relative to the working directory or to the node's ``workdir``).

Anything else (a file an external script reads by itself, environment variables, BLAS)
is not covered: use ``recompute=true``. docs/sweeps.md has the table.

Schema history: 1 fingerprinted the plugins' entry-point modules only; 2 (this version)
covers the whole distributions, pmlbench's source, library versions and named files.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import shlex
from pathlib import Path
from typing import Any

from pmlbench.core.fingerprint import (
    distribution_digest,
    file_digest,
    library_versions,
    pmlbench_source_digest,
)
from pmlbench.errors import PmlbenchError
from pmlbench.plugins import registry
from pmlbench.protocol.experiment import ExperimentSpec
from pmlbench.protocol.settings import bipartition_key, tune_key

SCHEMA = 2
# ExperimentSpec fields that say how many units to run or what to write, not what a unit is.
NOT_UNIT_FIELDS = frozenset({"n_splits", "save_predictions"})
# the plugin config nodes whose strings may name files
FILE_NODES = ("dataset", "noise", "method")
KEY_LENGTH = 32  # hex characters (128 bits)


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


def _plugin_infos(spec: ExperimentSpec) -> list[registry.PluginInfo]:
    """The registrations of the unit's dataset, noise model, method and metrics."""
    wanted = [(kind, getattr(spec, kind)["name"]) for kind in ("dataset", "noise", "method")]
    wanted += [("metric", name) for name in spec.metrics or []]
    infos = []
    for kind, name in wanted:
        try:
            infos.append(registry.get(kind, name))
        except PmlbenchError:
            continue  # an unknown plugin fails later with its own message
    return infos


def _entry_module(info: registry.PluginInfo) -> str:
    return str(info.entry_point.value).partition(":")[0].strip()


def _distribution_digests(infos: list[registry.PluginInfo]) -> dict[str, str | None]:
    """One digest per distribution providing any of ``infos``; nothing is imported, so a
    plugin that fails to import has the digest a later, working version is compared with."""
    groups: dict[str, tuple[Any, set[str]]] = {}
    for info in infos:
        dist = getattr(info.entry_point, "dist", None)
        module = _entry_module(info)
        label = info.distribution if dist is not None else f"<module {module.split('.')[0]}>"
        groups.setdefault(label, (dist, set()))[1].add(module)
    return {
        label: distribution_digest(dist, sorted(modules))
        for label, (dist, modules) in sorted(groups.items())
    }


def plugin_fingerprint(kind: str, name: str) -> str | None:
    """A digest of every file of the distribution providing a plugin (None when unknown)."""
    try:
        info = registry.get(kind, name)
    except PmlbenchError:
        return None
    (digest,) = _distribution_digests([info]).values()
    return digest


def code_fingerprint(spec: ExperimentSpec) -> dict[str, Any]:
    """The code a unit's numbers depend on: its plugins' distributions, pmlbench's own
    source and the numerical libraries' major.minor versions."""
    return {
        "plugins": _distribution_digests(_plugin_infos(spec)),
        "pmlbench": pmlbench_source_digest(),
        "libraries": library_versions(),
    }


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


def _file_tokens(value: str) -> list[str]:
    """The string itself, its shell words and the values of its ``--opt=value`` words."""
    tokens = [value]
    if any(c.isspace() for c in value):
        try:
            tokens += shlex.split(value)
        except ValueError:
            pass  # unbalanced quotes: not a command line
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


def fingerprints_of(spec: ExperimentSpec) -> tuple[dict[str, Any], dict[str, dict[str, str]]]:
    """(:func:`code_fingerprint`, :func:`input_files`) of ``spec``, taken now; remembered for
    :func:`unit_description` (see there)."""
    taken = (code_fingerprint(spec), input_files(spec))
    _taken[:] = [(s, t) for s, t in _taken if s != spec][-(_REMEMBERED - 1) :] + [(spec, taken)]
    return taken


_REMEMBERED = 8
_taken: list[tuple[ExperimentSpec, tuple[dict[str, Any], dict[str, dict[str, str]]]]] = []


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
        code, files: the fingerprints to use. By default those :func:`unit_keys` took for
            an equal spec in this process, so the record of a unit holds the description
            its key was computed from even if a file changes while the unit runs (the next
            run then sees the change); taken now for a spec never keyed.
    """
    fields = {
        f.name: getattr(spec, f.name)
        for f in dataclasses.fields(spec)
        if f.name not in NOT_UNIT_FIELDS
    }
    fields["tune"] = tune_key(dict(fields.get("tune") or {}))
    fields["bipartition"] = bipartition_key(dict(fields.get("bipartition") or {}))
    fields["metrics"] = sorted(fields.get("metrics") or [])
    unit = {"schema": SCHEMA, **fields, "split": int(split)}
    if fingerprints:
        if code is None or files is None:
            taken = next((t for s, t in reversed(_taken) if s == spec), None)
            taken_code, taken_files = taken or fingerprints_of(spec)
            code = taken_code if code is None else code
            files = taken_files if files is None else files
        unit["code"], unit["files"] = code, files
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
    if not fingerprints:
        return content_key(unit_description(spec, split, fingerprints=False))
    code, files = fingerprints_of(spec)
    return content_key(unit_description(spec, split, code=code, files=files))


def unit_keys(spec: ExperimentSpec) -> list[str]:
    """The keys of every split of ``spec``, in split order (fingerprints taken once, now)."""
    code, files = fingerprints_of(spec)
    return [
        content_key(unit_description(spec, s, code=code, files=files))
        for s in range(int(spec.n_splits))
    ]
