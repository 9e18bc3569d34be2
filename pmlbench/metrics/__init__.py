"""Evaluation metrics: the seven PML metrics plus coverage, under two conventions."""

from pmlbench.metrics.base import CONVENTIONS, Metric, degenerate_rows

__all__ = ["CONVENTIONS", "Metric", "degenerate_rows"]
