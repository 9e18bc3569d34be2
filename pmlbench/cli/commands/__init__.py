"""Sub-commands of ``pmlbench``: list, check-plugin, report."""
