"""pmlbench's Hydra plugins (discovered by Hydra in the ``hydra_plugins`` namespace package)."""
