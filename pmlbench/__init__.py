"""pmlbench: a benchmarking framework for partial multi-label learning (PML)."""

from pmlbench.errors import PmlbenchError

__version__ = "0.1.0"

__all__ = ["PmlbenchError", "__version__"]
