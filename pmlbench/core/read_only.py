"""Read-only views: how the protocol hands arrays to plugin code it does not trust.

A method or metric plugin receives every array as a read-only view of the protocol's own
array, so a plugin that writes into what it was handed fails at the write instead of
changing the data that the bipartition rule, the other metrics or the saved predictions
see. :func:`writes_read_only` recognises that failure, so the caller can name the plugin.

The views guard against careless writes, not against code set on getting around them (a
dense view can be made writable again); they copy nothing.
"""

from __future__ import annotations

import copy
from typing import Any, TypeVar

import numpy as np
import scipy.sparse as sp

T = TypeVar("T")

# The formats whose entries live in numpy arrays; LIL keeps Python lists, DOK a dict.
_ARRAY_FORMATS = ("csr", "csc", "bsr", "coo", "dia")


def _frozen(values: np.ndarray) -> np.ndarray:
    view = values.view()
    view.flags.writeable = False
    return view


def read_only(values: T) -> T:
    """A read-only view of a dense array or a scipy sparse matrix or array; anything else
    (None, lists, scalars) as it is.

    A sparse matrix gives a matrix of the same class and shape whose index and value arrays
    (``data``, ``indices``, ``indptr``; ``coords`` for COO) are read-only views of the
    original's, with its cached format flags (sorted indices, canonical format) kept, so
    scipy does not check a canonical matrix again and never sorts it or sums its duplicates
    in place. The original stays writable for its owner.

    Raises:
        TypeError: a LIL or DOK matrix, whose entries no view can protect.
    """
    given: Any = values
    if isinstance(given, np.ndarray):
        return _frozen(given)  # type: ignore[return-value]
    if not sp.issparse(given):
        return values
    if given.format not in _ARRAY_FORMATS:
        raise TypeError(
            f"a {given.format.upper()} sparse matrix has no read-only view; convert it to CSR first"
        )
    view = copy.copy(given)  # a new object sharing every attribute, format flags included
    for name, attribute in vars(given).items():
        if isinstance(attribute, np.ndarray):
            setattr(view, name, _frozen(attribute))
        elif isinstance(attribute, tuple) and all(isinstance(a, np.ndarray) for a in attribute):
            setattr(view, name, tuple(_frozen(a) for a in attribute))  # COO's coords
    return view


def writes_read_only(exc: BaseException) -> bool:
    """Whether ``exc`` is what numpy, scipy or compiled code raise on a write into a
    read-only array ("assignment destination is read-only", "output array is read-only",
    "buffer source array is read-only", ...)."""
    return isinstance(exc, ValueError) and "read-only" in str(exc)
