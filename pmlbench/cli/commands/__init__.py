"""Sub-commands of ``pmlbench``: list, check-plugin, report."""

from __future__ import annotations

import re


def plain(doc: str | None) -> str:
    """A module docstring as ``--help`` text: reST inline literals and roles
    (````pmlbench list````, ``:mod:`pmlbench.testing```) lose their markup."""
    text = re.sub(r":[\w:.-]+:`~?([^`]+)`", r"\1", doc or "")
    return re.sub(r"``([^`]+)``", r"\1", text)
