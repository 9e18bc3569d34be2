"""The grid points of a method's ``fit_grid`` (pmlbench.plugin.MethodHooks): one configured
estimator per point, and the points grouped by the parameters their shared work depends on.

A method fits a whole tuning grid at once by doing the work that does not depend on the
tuned parameters once per group of points that agree on the parameters it does depend on
(LIFT's clusterings, PML-LD's label enhancement, PML-LENFN's features and enhancement).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sklearn.base import clone


def point_models(estimator: Any, points: Sequence[Mapping[str, Any]]) -> list[Any]:
    """``clone(estimator).set_params(**point)`` for every grid point, in grid order."""
    return [clone(estimator).set_params(**dict(point)) for point in points]


def groups_by(models: Sequence[Any], names: Sequence[str]) -> dict[tuple, list[int]]:
    """Indices of ``models`` grouped by their values of the parameters ``names`` (groups in
    the order of their first member, indices in grid order)."""
    groups: dict[tuple, list[int]] = {}
    for index, model in enumerate(models):
        params = model.get_params(deep=False)
        groups.setdefault(tuple(params[name] for name in names), []).append(index)
    return groups
