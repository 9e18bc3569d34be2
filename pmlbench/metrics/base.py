"""The metric plugin contract.

A metric plugin is a :class:`Metric`: a function ``f(Y_true, Y_pred, scores, **options)``
returning a float, together with its direction (higher or lower is better) and what it
needs (a score matrix or a bipartition). Options the function does not accept are not
passed, so a third-party metric may ignore ``convention`` and ``zero_division``.
"""

from __future__ import annotations

import inspect
import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pmlbench.core.read_only import read_only, writes_read_only
from pmlbench.errors import PluginError

CONVENTIONS = ("zhang", "sklearn")
NEEDS = ("scores", "bipartition")


def degenerate_rows(Y_true: np.ndarray) -> np.ndarray:
    """Boolean mask of rows whose relevant set is empty or full (undefined for ranking metrics)."""
    counts = Y_true.sum(axis=1)
    return (counts == 0) | (counts == Y_true.shape[1])


@dataclass(frozen=True)
class Metric:
    """A named evaluation metric with its direction and its input.

    Attributes:
        name: canonical name (also the entry-point name).
        func: ``func(Y_true, Y_pred, scores, **options) -> float``.
        higher_is_better: the direction used for bold-facing, ranks and win/tie/loss.
        needs: ``"scores"`` (ranking metrics) or ``"bipartition"``.
        description: one line shown by ``pmlbench list``.
    """

    name: str
    func: Callable[..., float]
    higher_is_better: bool
    needs: str
    description: str = ""
    _accepted: frozenset = field(default=frozenset(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.needs not in NEEDS:
            raise PluginError(
                f"metric {self.name!r} declares needs={self.needs!r}; use one of {list(NEEDS)}"
            )
        if not isinstance(self.higher_is_better, bool):
            raise PluginError(
                f"metric {self.name!r} has no direction; set higher_is_better=True or False"
            )
        params = inspect.signature(self.func).parameters
        accepts_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        accepted = frozenset(["*"]) if accepts_any else frozenset(params)
        object.__setattr__(self, "_accepted", accepted)

    @property
    def arrow(self) -> str:
        return "↑" if self.higher_is_better else "↓"

    def __call__(
        self, Y_true: np.ndarray, Y_pred: np.ndarray, scores: np.ndarray, **options
    ) -> float:
        """The metric on read-only views of its inputs: a metric that changed the labels or
        scores in place would corrupt every metric computed after it, so that fails here,
        naming the metric."""
        if "*" not in self._accepted:
            options = {k: v for k, v in options.items() if k in self._accepted}
        try:
            value = self.func(read_only(Y_true), read_only(Y_pred), read_only(scores), **options)
        except ValueError as exc:
            if not writes_read_only(exc):
                raise
            raise PluginError(
                f"metric {self.name!r} tried to change its inputs in place ({exc}); a metric "
                "must leave the labels and scores it is given unchanged (copy them first)"
            ) from None
        return self._checked(value)

    def _checked(self, value: Any) -> float:
        """The value as a float: one real number, NaN allowed (undefined on the input, as
        the built-in metrics say it), infinity and anything else refused naming the metric."""
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value[()]
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            shown = " ".join(repr(value).split())
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            raise PluginError(
                f"metric {self.name!r} returned {type(value).__name__} {shown}; a metric must "
                "return one real number (NaN where it is undefined)"
            )
        if math.isinf(value):
            raise PluginError(
                f"metric {self.name!r} returned {float(value)}; a metric must return a finite "
                "number, or NaN where it is undefined"
            )
        return float(value)
