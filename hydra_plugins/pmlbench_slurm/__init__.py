"""pmlbench's SLURM launcher (discovered by Hydra in the ``hydra_plugins`` namespace package)."""
