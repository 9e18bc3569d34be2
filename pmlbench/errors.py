"""User-facing errors.

Every problem a user can cause (bad data, bad config, a broken plugin) is raised as a
:class:`PmlbenchError` whose message names the problem and the fix in one line. The CLI
prints such errors without a traceback.
"""


class PmlbenchError(Exception):
    """An error caused by input or configuration, with a message that says how to fix it."""


class PluginError(PmlbenchError):
    """A plugin is missing, ambiguous, fails to import, or breaks its contract."""


class NotApplicable(PmlbenchError):
    """A method cannot run on this input within its published form's budget.

    Raised before any work, with one line naming the cap and the option that lifts it; a
    sweep records such a unit as not applicable ("n/a" in reports), never as a failure.
    """
