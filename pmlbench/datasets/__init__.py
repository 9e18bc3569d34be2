"""Datasets: the bundled benchmark sets and loaders for users' own files."""

from pmlbench.datasets.dataset import Dataset

__all__ = ["Dataset"]
