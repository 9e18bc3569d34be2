"""Sub-commands of the ``pmlbench`` console script (besides running experiments)."""
