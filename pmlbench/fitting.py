"""Fitting a method on a training split, with hyper-parameter tuning when configured."""

from __future__ import annotations

from typing import Any

from pmlbench.errors import PmlbenchError


def tuning_grid(tune: dict[str, Any]) -> dict[str, list]:
    """The parameters to tune: grid entries that are not null."""
    grid = {k: v for k, v in (tune.get("grid") or {}).items() if v is not None}
    for name, values in grid.items():
        if not isinstance(values, list) or not values:
            raise PmlbenchError(
                f"tune.grid.{name} must be a non-empty list of values, e.g. tune.grid.{name}=[1,10]"
            )
    return grid


def fit_with_tuning(estimator, X_train, Y_candidates, *, spec, Y_true_train, random_state):
    """Fit ``estimator``; select the grid's best values first when ``spec.tune`` has a grid."""
    grid = tuning_grid(spec.tune)
    if grid:
        raise PmlbenchError("hyper-parameter tuning is not available yet; set tune.grid={} ")
    estimator.fit(X_train, Y_candidates)
    return estimator, {}
