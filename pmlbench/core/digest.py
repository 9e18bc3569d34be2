"""Content digests of arrays and plain data: the one fingerprint pmlbench uses for data.

Dense arrays are digested with their dtype and shape, sparse matrices as CSR (shape, then
the dtype, shape and bytes of data, indices and indptr), containers recursively with their
structure, and scalars as JSON. Equal content gives an equal digest; a change of any value,
dtype, shape or sparsity structure gives another one.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np
import scipy.sparse as sp


def _digest_array(hasher, value: np.ndarray) -> None:
    value = np.ascontiguousarray(value)
    hasher.update(f"{value.dtype.str}{value.shape}".encode())
    hasher.update(value.view(np.uint8).reshape(-1) if value.size else b"")


def _feed(hasher, value: Any) -> None:
    if sp.issparse(value):
        value = value.tocsr()
        hasher.update(f"sparse{value.shape}".encode())
        for part in (value.indptr, value.indices, value.data):
            _digest_array(hasher, part)
    elif isinstance(value, np.ndarray):
        hasher.update(b"ndarray")
        _digest_array(hasher, value)
    elif isinstance(value, dict):
        hasher.update(b"{")
        for key in sorted(value, key=str):
            hasher.update(json.dumps(str(key)).encode())
            _feed(hasher, value[key])
        hasher.update(b"}")
    elif isinstance(value, (list, tuple)):
        hasher.update(b"[")
        for item in value:
            _feed(hasher, item)
        hasher.update(b"]")
    else:
        hasher.update(
            json.dumps(
                value.item() if isinstance(value, np.generic) else value, sort_keys=True
            ).encode()
        )


def content_digest(*parts: Any) -> str:
    """A digest of arrays (dense or sparse), scalars, strings and containers of them."""
    hasher = hashlib.blake2b(digest_size=20)
    for part in parts:
        _feed(hasher, part)
    return hasher.hexdigest()
