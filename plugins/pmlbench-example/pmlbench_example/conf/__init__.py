"""YAML presets shipped with pmlbench-example (found through the pmlbench.presets entry point)."""
