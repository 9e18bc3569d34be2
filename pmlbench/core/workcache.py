"""A content-keyed on-disk cache for work shared across methods and hyper-parameters.

The kNN graph and the NNLS reconstruction weights of a training split depend only on its
features and k, not on the method or its other parameters, so they are computed once and
reused by every method, grid point and rerun that needs them::

    V = cached_array("nnls_weights", {"X": X, "neighbors": N}, lambda: nnls_weights(X, N))

The key is a digest of the namespace and the key parts (arrays by their bytes, dtype and
shape), so different data never share an entry, and any caller computing the same namespace from
the same parts shares it (PML3ER, PARTICLE and ML-kNN share one kNN graph per split). The
key also holds the code that computes entries (:func:`code_digest`: pmlbench's own source
and the major.minor versions of numpy, scipy and scikit-learn), so an edit of pmlbench or
an upgrade of those libraries starts new entries; the cache is shared across methods, whose
own distributions do not enter the key. Entries are written to a temporary file and
renamed into place: parallel jobs racing for one entry both compute it and the last rename
wins with identical content; a reader sees a complete file or none.

Every entry carries a digest of its arrays in its manifest, checked on every read. An entry
that cannot be used (not a zip file, a bad CRC, a digest that does not match, another
format) is recomputed and replaced, with a warning naming the file.

The cache is off unless a directory is set: the ``PMLBENCH_CACHE_DIR`` environment
variable, which the command line sets from the config key ``cache_dir`` (default
``outputs/cache``, null turns it off). Library use is uncached unless asked for.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections import Counter
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import scipy.sparse as sp

from pmlbench import __version__
from pmlbench.core.atomic import UnwritablePath, atomic_write
from pmlbench.core.console import print_warning
from pmlbench.core.digest import content_digest
from pmlbench.core.fingerprint import library_versions, pmlbench_source_digest

ENV_VAR = "PMLBENCH_CACHE_DIR"
FORMAT = 2  # 2: the manifest holds a digest of the arrays
stats: Counter = Counter()  # "hit" / "miss" per namespace, for diagnostics and tests

T = TypeVar("T")


def cache_dir() -> Path | None:
    """The cache directory, or None when caching is off."""
    value = os.environ.get(ENV_VAR, "").strip()
    return Path(value) if value else None


@contextlib.contextmanager
def using_cache_dir(path: str | Path | None) -> Iterator[None]:
    """Cache into ``path`` inside the block (None: caching off), restoring the setting after."""
    previous = os.environ.get(ENV_VAR)
    if path is None:
        os.environ.pop(ENV_VAR, None)
    else:
        os.environ[ENV_VAR] = str(path)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(ENV_VAR, None)
        else:
            os.environ[ENV_VAR] = previous


def _encode(value: Any, arrays: dict[str, np.ndarray], path: str) -> Any:
    if sp.issparse(value):
        value = value.tocsr()
        for part in ("data", "indices", "indptr"):
            arrays[f"{path}.{part}"] = getattr(value, part)
        return {"sparse": path, "shape": list(value.shape)}
    if isinstance(value, np.ndarray):
        arrays[path] = value
        return {"dense": path}
    if isinstance(value, (list, tuple)):
        return {
            "tuple" if isinstance(value, tuple) else "list": [
                _encode(v, arrays, f"{path}.{i}") for i, v in enumerate(value)
            ]
        }
    raise TypeError(
        f"cached values are arrays, sparse matrices or tuples of them, not {type(value).__name__}"
    )


def _decode(layout: Any, arrays: Any) -> Any:
    if "sparse" in layout:
        path = layout["sparse"]
        return sp.csr_matrix(
            (arrays[f"{path}.data"], arrays[f"{path}.indices"], arrays[f"{path}.indptr"]),
            shape=tuple(layout["shape"]),
        )
    if "dense" in layout:
        return arrays[layout["dense"]]
    if "tuple" in layout:
        return tuple(_decode(v, arrays) for v in layout["tuple"])
    return [_decode(v, arrays) for v in layout["list"]]


def _write(path: Path, value: Any) -> None:
    arrays: dict[str, np.ndarray] = {}
    layout = _encode(value, arrays, "v")
    manifest = json.dumps({"format": FORMAT, "layout": layout, "digest": content_digest(arrays)})

    def save(tmp: Path) -> None:
        with open(tmp, "wb") as handle:
            # numpy's stub types **kwds as if they could be allow_pickle
            np.savez(handle, __manifest__=np.array(manifest), **arrays)  # type: ignore[arg-type]

    atomic_write(path, save)


class DamagedEntry(ValueError):
    """A cache entry that cannot be used."""


def _read(path: Path) -> Any:
    """The value an entry holds.

    Raises:
        DamagedEntry: the file is no readable entry of this format, or its arrays do not
            match the digest in its manifest.
    """
    try:
        with np.load(path, allow_pickle=False) as data:
            manifest = json.loads(str(data["__manifest__"]))
            arrays = {name: data[name] for name in data.files if name != "__manifest__"}
    except Exception as exc:  # BadZipFile, bad CRC, EOFError, KeyError, ValueError, ...
        raise DamagedEntry(f"unreadable ({type(exc).__name__}: {exc})") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise DamagedEntry("not an entry of this cache format")
    if content_digest(arrays) != manifest.get("digest"):
        raise DamagedEntry("its arrays do not match the digest in its manifest")
    try:
        return _decode(manifest["layout"], arrays)
    except Exception as exc:  # a layout naming arrays the entry lacks, ...
        raise DamagedEntry(f"its layout is unusable ({type(exc).__name__}: {exc})") from exc


@cache
def code_digest() -> str:
    """A digest of the code that computes entries: pmlbench's source and the major.minor
    versions of numpy, scipy and scikit-learn. Taken once per process, since a process runs
    the code it imported."""
    return content_digest(pmlbench_source_digest(), library_versions())


def entry_path(namespace: str, key_parts: Any, root: Path) -> Path:
    digest = content_digest(namespace, key_parts, FORMAT, __version__, code_digest())
    return root / namespace / digest[:2] / f"{digest}.npz"


def cached_array(namespace: str, key_parts: Any, compute: Callable[[], T]) -> T:
    """``compute()``, or its stored value for the same namespace and key parts.

    Args:
        namespace: what is cached, e.g. "knn_graph"; also the entry's subdirectory.
        key_parts: everything the value depends on (arrays, numbers, strings, containers).
        compute: produces the value: an array, a sparse matrix, or a tuple/list of them.
    """
    root = cache_dir()
    if root is None:
        return compute()
    path = entry_path(namespace, key_parts, root)
    if path.is_file():
        try:
            value = _read(path)
        except DamagedEntry as exc:
            stats[f"{namespace}:damaged"] += 1
            print_warning(f"damaged cache entry {path}: {exc}; recomputing and replacing it")
        else:
            stats[f"{namespace}:hit"] += 1
            return value
    stats[f"{namespace}:miss"] += 1
    value = compute()
    try:
        _write(path, value)
    except (OSError, UnwritablePath) as exc:  # a full or read-only disk costs the reuse only
        _warn_unwritable(root, exc)
    return value


_warned_unwritable: set[Path] = set()


def _warn_unwritable(root: Path, exc: Exception) -> None:
    """Say once per process and cache directory that entries cannot be written there."""
    if root in _warned_unwritable:
        return
    _warned_unwritable.add(root)
    reason = exc.reason if isinstance(exc, UnwritablePath) else f"{type(exc).__name__}: {exc}"
    print_warning(
        f"cache_dir={root} cannot be written ({reason}); computing without the shared-work "
        "cache (set cache_dir=<a directory you can write>, or cache_dir=null)"
    )
