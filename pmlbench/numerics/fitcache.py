"""A small in-process cache for work that depends only on the training data.

Hyper-parameter tuning refits a method on the same inner-CV fold for every grid point;
work that does not depend on the tuned parameter (PML3ER's label enrichment, the Gram
matrix XᵀX) is computed once per fold and reused. Keys are content fingerprints of the
arrays (:func:`pmlbench.core.digest.content_digest`, never object identities), so a
changed array can never hit a stale entry.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any


class LRUCache:
    """Least-recently-used mapping with at most ``size`` entries."""

    def __init__(self, size: int):
        self.size = size
        self._items: OrderedDict = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get_or_compute(self, key: Any, compute: Callable[[], Any]) -> tuple[Any, bool]:
        """(value, whether it came from the cache)."""
        if key in self._items:
            self._items.move_to_end(key)
            self.hits += 1
            return self._items[key], True
        self.misses += 1
        value = compute()
        self._items[key] = value
        while len(self._items) > self.size:
            self._items.popitem(last=False)
        return value, False

    def clear(self) -> None:
        self._items.clear()
