"""pmlbench's dry-run sweeper (discovered by Hydra in the ``hydra_plugins`` namespace package)."""
