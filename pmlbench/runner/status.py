"""What became of a unit: one status type for every place that records or shows it.

A unit's status is written in three places, always as the member's value: each entry of a
run's units.json (``computed``, ``cached``, ``failed``, ``not_applicable``, ``timed_out``),
the ``status`` of each store record (``done`` for a finished unit, or the unfinished
outcome its file records), and the dry run's store states (``done``, ``failed``,
``not_applicable``, ``timed_out``, ``missing``). Reports add ``damaged`` for a store file
that does not check out.

:data:`OUTCOMES` are the outcomes of a unit that did not finish, each recorded in a store
file of its own; pmlbench.runner.format.OUTCOME_SUFFIXES is the one table from outcome to
file, through which the store writes, reads and lists them (pmlbench.runner.store).
"""

from __future__ import annotations

from enum import Enum


class Status(str, Enum):
    """The status of a unit; compares equal to its value (``Status.FAILED == "failed"``)."""

    DONE = "done"  # a finished unit's store record (and its dry-run state)
    COMPUTED = "computed"  # computed by this run
    CACHED = "cached"  # reused from the result store
    FAILED = "failed"  # raised; retried by the next run
    NOT_APPLICABLE = "not_applicable"  # refused by its method up front; not retried
    TIMED_OUT = "timed_out"  # stopped at unit_timeout; retried only with a higher limit
    MISSING = "missing"  # in a dry run: nothing in the store
    DAMAGED = "damaged"  # in a report: a store file that does not check out

    def __str__(self) -> str:
        return self.value

    @property
    def label(self) -> str:
        """How the command line and the dry run name it (``n/a``, ``timed out``, ...)."""
        return LABELS[self]


LABELS: dict[Status, str] = {
    Status.DONE: "done",
    Status.COMPUTED: "computed",
    Status.CACHED: "reused",  # one word for it, in sweeps and single runs
    Status.FAILED: "failed",
    Status.NOT_APPLICABLE: "n/a",
    Status.TIMED_OUT: "timed out",
    Status.MISSING: "missing",
    Status.DAMAGED: "damaged",
}

# The outcomes of a unit that did not finish, each recorded in a store file of its own (in
# the order reports list them).
OUTCOMES: tuple[Status, ...] = (Status.FAILED, Status.TIMED_OUT, Status.NOT_APPLICABLE)
# Outcomes that leave a unit unfinished as a run counts it (a not-applicable unit is done
# with: its method declined it).
UNFINISHED: tuple[Status, ...] = (Status.FAILED, Status.TIMED_OUT)
