"""The command line: ``pmlbench`` / ``python -m pmlbench`` and its sub-commands."""

from pmlbench.cli.main import main

__all__ = ["main"]
