"""A content-keyed on-disk cache for work shared across methods and hyper-parameters.

The kNN graph and the NNLS reconstruction weights of a training split depend only on its
features and k, not on the method or its other parameters, so they are computed once and
reused by every method, grid point and rerun that needs them::

    V = cached_array("nnls_weights", {"X": X, "neighbors": N}, lambda: nnls_weights(X, N))

The key is a digest of the namespace and the key parts (arrays by their bytes, dtype and
shape), so different data never share an entry, and any caller computing the same namespace from
the same parts shares it (PML3ER, PARTICLE and ML-kNN share one kNN graph per split). The
key also holds pmlbench's version; after changing the code that computes an entry within
one version, delete the cache directory. Entries are written to a temporary file and
renamed into place: parallel jobs racing for one entry both compute it and the last rename
wins with identical content; a reader sees a complete file or none.

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
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import scipy.sparse as sp

from pmlbench import __version__
from pmlbench.core.atomic import atomic_write
from pmlbench.core.digest import content_digest

ENV_VAR = "PMLBENCH_CACHE_DIR"
FORMAT = 1
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
    manifest = json.dumps({"format": FORMAT, "layout": layout})

    def save(tmp: Path) -> None:
        with open(tmp, "wb") as handle:
            np.savez(handle, __manifest__=np.array(manifest), **arrays)

    atomic_write(path, save)


def _read(path: Path) -> Any:
    with np.load(path, allow_pickle=False) as data:
        manifest = json.loads(str(data["__manifest__"]))
        if manifest.get("format") != FORMAT:
            raise ValueError("old cache format")
        arrays = {name: data[name] for name in data.files if name != "__manifest__"}
    return _decode(manifest["layout"], arrays)


def entry_path(namespace: str, key_parts: Any, root: Path) -> Path:
    digest = content_digest(namespace, key_parts, FORMAT, __version__)
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
        except (OSError, ValueError, KeyError):
            pass  # unreadable or from an older format: recompute and replace it
        else:
            stats[f"{namespace}:hit"] += 1
            return value
    stats[f"{namespace}:miss"] += 1
    value = compute()
    try:
        _write(path, value)
    except OSError:
        pass  # a full or read-only disk costs the reuse, not the result
    return value
