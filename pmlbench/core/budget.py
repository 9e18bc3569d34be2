"""The suite's time budget: one rule for every method and dataset (issue 32).

What counts is a unit's CPU time as the result store records it (``cpu_seconds``: drawing
the candidates, the whole tuning over the grid and the refit, predicting and scoring, in the
unit's process and every process working for it), against ML-kNN's on the same split of the
same data, tuned the same way. CPU time, unlike wall time, does not grow when other work
shares the cores, so ratios measured at different moments of a long suite compare. A method
is within budget on a dataset when, at every noise level, the median over splits of

    (CPU seconds) / max(ML-kNN's CPU seconds, FLOOR_SECONDS)

is at most ``BUDGET_RATIO``. The floor keeps fixed costs (imports of a solver, a worker
start) from counting on datasets where ML-kNN takes a few milliseconds. A method whose
published form would exceed the budget on an input declines it before any work
(:class:`pmlbench.errors.NotApplicable`) through a cap option (``method.max_order`` and the
like), which ``<option>=null`` lifts.
"""

from __future__ import annotations

BASELINE_METHOD = "mlknn"
BUDGET_RATIO = 60.0
FLOOR_SECONDS = 1.0
BUDGET_TEXT = "60x ML-kNN's CPU time per split, tuning included"
