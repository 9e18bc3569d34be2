"""Declarative hyper-parameter constraints, checked before any work.

A method (or any plugin class) lists what each constructor parameter may hold, in the spirit
of scikit-learn's ``_parameter_constraints``::

    class MLkNN(ValidatedParameters, BaseEstimator):
        parameter_constraints = {
            "k": [Interval(int, 1, None)],
            "s": [Interval(float, 0, None)],
        }

Each parameter maps to a list of accepted forms; a value is valid when one of them accepts
it. Forms: :class:`Interval` (integers or reals in a range), :class:`Options` (a fixed set of
values), :class:`Type` (any instance of a type, e.g. ``Type(str)``), :class:`Dict` (a
mapping, optionally without some reserved keys) and ``None`` (the value None). Integers stay
integers: ``3.5`` is not an ``Interval(int, ...)``, and neither are ``3.0`` or ``True``. A
real interval accepts integers (``lambda2=10``) but never booleans, NaN or inf (unless
``finite=False``).

:func:`validate_parameters` raises one :class:`PmlbenchError` line naming the config key
(``method.k``), the value and what is allowed; the runner calls it when it builds a method,
before any data is loaded, and :class:`ValidatedParameters` lets a method call it at the
start of ``fit`` for library use.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pmlbench.errors import PmlbenchError

Closed = Literal["both", "left", "right", "neither"]


def _bound(value: float, kind: type) -> str:
    if kind is int and float(value).is_integer():
        return str(int(value))
    return f"{value:g}"


@dataclass(frozen=True)
class Interval:
    """Numbers of ``kind`` (int or float) between ``low`` and ``high`` (None: unbounded).

    ``closed`` says which bounds belong to the interval. ``kind=float`` accepts integers
    too; ``kind=int`` accepts integers only (Python or numpy), never floats or booleans.
    """

    kind: type
    low: float | None = None
    high: float | None = None
    closed: Closed = "both"
    finite: bool = True

    def __post_init__(self) -> None:
        if self.kind not in (int, float):
            raise TypeError("Interval kind must be int or float")
        if self.closed not in ("both", "left", "right", "neither"):
            raise TypeError(f"Interval closed must be both, left, right or neither: {self.closed}")

    def accepts(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return False
        if isinstance(value, numbers.Integral):
            value = int(value)  # exact comparison with the bounds, even beyond float range
        elif self.kind is int:
            return False
        elif math.isnan(value) or (self.finite and math.isinf(value)):
            return False
        low_ok = (
            self.low is None
            or value > self.low
            or (value == self.low and self.closed in ("both", "left"))
        )
        high_ok = (
            self.high is None
            or value < self.high
            or (value == self.high and self.closed in ("both", "right"))
        )
        return bool(low_ok and high_ok)

    def describe(self) -> str:
        kind = "an integer" if self.kind is int else "a number"
        if self.low is None and self.high is None:
            return kind if self.kind is int or not self.finite else "a finite number"
        left = "[" if self.closed in ("both", "left") and self.low is not None else "("
        right = "]" if self.closed in ("both", "right") and self.high is not None else ")"
        low = "-inf" if self.low is None else _bound(self.low, self.kind)
        high = "inf" if self.high is None else _bound(self.high, self.kind)
        return f"{kind} in {left}{low}, {high}{right}"


@dataclass(frozen=True)
class Options:
    """One of a fixed set of values (compared with ``==``, booleans never equal numbers)."""

    values: tuple[Any, ...]

    def accepts(self, value: Any) -> bool:
        for v in self.values:
            try:
                if bool(value == v) and isinstance(value, bool) == isinstance(v, bool):
                    return True
            except (TypeError, ValueError):  # e.g. an array, whose == is element-wise
                return False
        return False

    def describe(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self.values)


@dataclass(frozen=True)
class Type:
    """Any instance of ``kind`` (booleans are not integers here)."""

    kind: type

    def accepts(self, value: Any) -> bool:
        if isinstance(value, bool) and self.kind is not bool:
            return False
        return isinstance(value, self.kind)

    def describe(self) -> str:
        names = {
            str: "a string",
            bool: "true or false",
            list: "a list",
            dict: "a mapping",
            Mapping: "a mapping",
        }
        return names.get(self.kind, f"a {self.kind.__name__}")


@dataclass(frozen=True)
class Dict:
    """A mapping with string keys, none of them in ``reserved``."""

    reserved: tuple[str, ...] = ()

    def accepts(self, value: Any) -> bool:
        if not isinstance(value, Mapping):
            return False
        return all(isinstance(k, str) and k not in self.reserved for k in value)

    def describe(self) -> str:
        if not self.reserved:
            return "a mapping with string keys"
        names = ", ".join(repr(r) for r in self.reserved)
        return f"a mapping whose keys are strings other than the reserved names {names}"


Constraint = Interval | Options | Type | Dict | None
Constraints = Mapping[str, Sequence[Constraint]]


def _accepts(constraint: Constraint, value: Any) -> bool:
    return value is None if constraint is None else constraint.accepts(value)


def _describe(constraint: Constraint) -> str:
    return "null" if constraint is None else constraint.describe()


def _hint(value: Any, accepted: Sequence[Constraint]) -> str:
    """A reminder for the commonest slip: a whole-number float where an integer is needed."""
    wants_int = any(isinstance(c, Interval) and c.kind is int for c in accepted)
    if wants_int and isinstance(value, float) and value.is_integer():
        return f" (write {int(value)}: integer parameters take no decimal point)"
    return ""


def check_parameter(name: str, value: Any, accepted: Sequence[Constraint], *, prefix: str) -> None:
    """Raise a one-line PmlbenchError unless one of ``accepted`` admits ``value``."""
    if any(_accepts(c, value) for c in accepted):
        return
    key = f"{prefix}.{name}" if prefix else name
    allowed = " or ".join(_describe(c) for c in accepted)
    shown = " ".join(repr(value).split())  # one line, even for a multi-line repr
    raise PmlbenchError(f"{key} must be {allowed}, got {shown}{_hint(value, accepted)}")


def validate_parameters(
    params: Mapping[str, Any], constraints: Constraints, *, prefix: str = "method"
) -> None:
    """Check every parameter that has constraints; parameters without any pass unchecked."""
    for name, accepted in constraints.items():
        if name in params:
            check_parameter(name, params[name], accepted, prefix=prefix)


def declared_constraints(obj: Any) -> Constraints:
    """The ``parameter_constraints`` of a plugin class or instance ({} when none)."""
    constraints = getattr(obj, "parameter_constraints", None)
    return constraints if isinstance(constraints, Mapping) else {}


class ValidatedParameters:
    """Mixin for estimators: ``self._validate_params()`` checks the declared constraints.

    List it before ``BaseEstimator`` among the bases: scikit-learn's ``BaseEstimator`` has a
    ``_validate_params`` of its own. The parameters checked are the constructor's
    (``get_params(deep=False)``), so a subclass with another constructor is checked on its
    own parameters only.
    """

    parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {}

    def _validate_params(self) -> None:
        get_params = getattr(self, "get_params", None)
        if callable(get_params):
            params = get_params(deep=False)
        else:
            params = {n: getattr(self, n) for n in self.parameter_constraints if hasattr(self, n)}
        validate_parameters(params, self.parameter_constraints)
