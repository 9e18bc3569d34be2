"""PML-LD: partial multi-label learning with label distribution (Xu, Liu & Geng, AAAI 2020).

Two stages, as the authors' ``main.m`` (github palm-ml/PML_LD):

1. :mod:`~pmlbench.methods.pml_ld.enhancement` (``LE/``): label enhancement, the candidate
   labels turned into label distributions with a kernel model, a kNN-graph smoothness term
   and local label correlations of k-means groups on the elliptope.
2. :mod:`~pmlbench.methods.pml_ld.msvr` (``PL-LEAF/plmsvr.m``): a multi-output support vector
   regressor with an RBF kernel fitted to those distributions.

The estimator is :class:`~pmlbench.methods.pml_ld.estimator.PMLLD` (plugin ``pml_ld``).

Only the paper's abstract could be read while this was written (no copy of the full text was
reachable), so no equation numbers are cited: the formulas in these modules are the ones the
authors' code computes, and docs/methods/pml_ld.md lists where that code and its demo depart
from what a benchmark should do.
"""

from pmlbench.methods.pml_ld.estimator import PMLLD

__all__ = ["PMLLD"]
