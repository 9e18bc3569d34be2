"""PML-DDA: partial multi-label learning via dual decomposition alignment (2026).

"Partial Multi-Label Learning via Dual Decomposition Alignment" (the authors' code: github
CcAmbiguous/PML-DDA, ``main_PML.m``, ``DDA_PML.m``, ``function/``, ``deep_classifier/``). The
paper's full text could not be read while this package was written, so no equation numbers
are cited: the formulas in these modules are the ones the authors' code computes.

Two stages, as the code runs them (a MATLAB program, then a PyTorch one reading its output):

- :mod:`~pmlbench.methods.pml_dda.decomposition`: the features min-max scaled and mapped to
  RBF kernel features (``Kernel_mapping.m``, the same file as PML-PLR's:
  :mod:`pmlbench.numerics.kernel_features`), then the alternating updates of ``DDA_PML.m``, which
  decompose features and candidate labels and return a projection U and the disambiguated
  labels P (NumPy, float64);
- :mod:`~pmlbench.methods.pml_dda.network`: an MLP on the projected features ``(UᵀX)ᵀ``,
  trained on P with a binary cross-entropy whose negatives are the non-candidates only
  (PyTorch, float32).

The estimator is :class:`~pmlbench.methods.pml_dda.estimator.PMLDDA` (plugin ``pml_dda``). It
needs PyTorch, an optional extra (``pip install "pmlbench[deep]"``), imported only when a fit
runs (:mod:`pmlbench.core.torch_runtime`); docs/methods/pml_dda.md lists where pmlbench
departs from the authors' code and how closely the two agree.
"""

from pmlbench.methods.pml_dda.estimator import PMLDDA

__all__ = ["PMLDDA"]
