"""MyST substitutions for the counts the pages quote about the leaderboard's archive.

``{{ archive_units }}`` and its siblings (:func:`substitutions`) are read from
docs/leaderboard-results.tar.xz when the site is built.
"""

from __future__ import annotations

from typing import Any

from . import archive


def substitutions(found: dict[str, Any]) -> dict[str, str]:
    """The substitutions, as the pages print them (thousands separated, sizes rounded)."""
    from pmlbench.runner.status import Status

    statuses = found["statuses"]
    done = statuses.get(Status.DONE.value, 0)
    declined = statuses.get(Status.NOT_APPLICABLE.value, 0)
    failed = statuses.get(Status.FAILED.value, 0)
    return {
        "archive_units": f"{found['units']:,}",
        "archive_finished": f"{done:,}",
        "archive_na": f"{declined:,}",
        "archive_failed": f"{failed:,}",
        "archive_methods": f"{found['methods']:,}",
        "archive_declined_lines": f"{found['declined_lines']:,}",
        "archive_size": f"{found['bytes'] / 1e6:.1f} MB",
    }


def add_substitutions(app: Any, config: Any) -> None:
    config.myst_substitutions = {
        **substitutions(archive.counts()),
        **(config.myst_substitutions or {}),
    }


def setup(app: Any) -> None:
    app.connect("config-inited", add_substitutions)
