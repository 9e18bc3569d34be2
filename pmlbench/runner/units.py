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

The key also covers a fingerprint of the source files of the method, noise and dataset
plugins, so editing a method's module invalidates its stored results; edits elsewhere do
not (use ``recompute=true`` then).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import inspect
import json
import math
from functools import cache
from pathlib import Path
from typing import Any

from pmlbench.errors import PmlbenchError
from pmlbench.plugins import registry
from pmlbench.protocol.experiment import ExperimentSpec
from pmlbench.protocol.settings import bipartition_key, tune_key

SCHEMA = 1
# ExperimentSpec fields that say how many units to run or what to write, not what a unit is.
NOT_UNIT_FIELDS = frozenset({"n_splits", "save_predictions"})
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


@cache
def _file_digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def plugin_fingerprint(kind: str, name: str) -> str | None:
    """A digest of the source file defining a plugin (None when it has no source file).

    A plugin that fails to import is fingerprinted by its entry point's module file, found
    without importing it, so its failure record carries the key a later success will have.
    """
    try:
        info = registry.get(kind, name)
    except PmlbenchError:
        return None  # an unknown plugin fails later with its own message
    try:
        obj = info.load()
        source = inspect.getsourcefile(
            obj if inspect.isclass(obj) or inspect.isfunction(obj) else type(obj)
        )
    except PmlbenchError:
        source = _module_file(info.entry_point.value.split(":")[0])
    except (TypeError, OSError):
        return None
    return _file_digest(source) if source else None


def _module_file(module: str) -> str | None:
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    return spec.origin if spec is not None and spec.has_location else None


def unit_description(
    spec: ExperimentSpec, split: int, *, fingerprints: bool = True
) -> dict[str, Any]:
    """The normalised, canonical description of split ``split`` of ``spec``."""
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
        unit["code"] = {
            kind: plugin_fingerprint(kind, getattr(spec, kind)["name"])
            for kind in ("dataset", "noise", "method")
        }
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
    """The content key of split ``split`` of ``spec``."""
    return content_key(unit_description(spec, split, fingerprints=fingerprints))


def unit_keys(spec: ExperimentSpec) -> list[str]:
    """The keys of every split of ``spec``, in split order."""
    return [unit_key(spec, s) for s in range(int(spec.n_splits))]
