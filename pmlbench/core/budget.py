"""The suite's time budget: one rule for every method and dataset (issue 32).

What counts is a unit's fit + predict time as its split record holds it (``fit_seconds`` +
``predict_seconds``; the fit of a tuned unit includes its selection over the grid and the
refit), against ML-kNN's on the same split of the same data, tuned the same way. A method is
within budget on a dataset when, at every noise level, the median over splits of

    (fit + predict seconds) / max(ML-kNN's fit + predict seconds, FLOOR_SECONDS)

is at most ``BUDGET_RATIO``. The floor keeps fixed costs (imports of a solver, a worker
start) from counting on datasets where ML-kNN takes a few milliseconds. A method whose
published form would exceed the budget on an input declines it before any work
(:class:`pmlbench.errors.NotApplicable`) through a cap option that names the budget
(``method.max_order`` and the like), which ``<option>=null`` lifts.
"""

from __future__ import annotations

BASELINE_METHOD = "mlknn"
BUDGET_RATIO = 60.0
FLOOR_SECONDS = 1.0
BUDGET_TEXT = "60x ML-kNN's time per split, tuning included"


def budget_ratio(seconds: float, baseline_seconds: float) -> float:
    """A unit's time over the baseline's on the same split, the baseline floored at
    ``FLOOR_SECONDS``."""
    return float(seconds) / max(float(baseline_seconds), FLOOR_SECONDS)
