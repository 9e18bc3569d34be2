"""PLAIN's label propagation: pseudo-labels from the candidates, the graphs and the network.

Once per epoch, before the network's pass over the data, the authors' ``label_propagation``
takes ``T`` gradient steps of size γ from ``Z = Y`` (the candidate labels) on::

    J(Z) = α/2·tr(Zᵀ(I − Ŵ)Z) + β/2·tr(Z(I − R̂)Zᵀ) + η/2·‖Z − Y‖² + 1/2·‖Z − P‖²

with Ŵ and R̂ the normalised instance and label graphs (:mod:`.graphs`) and P the network's
outputs on the training rows after the previous epoch (the candidates before the first).
The gradient the code steps along, term by term in its order::

    ∇J = α(Z − ŴZ) + η(Z − Y) + (Z − P) + β(Z − ZR̂)

(the code's names: ``gamma`` is α, ``alpha`` is η, ``zeta`` is β, ``eta`` is the step γ; the
weight of ‖Z − P‖² is the pivot 1). Each column of the result is then min-max scaled to
[0, 1] (scikit-learn's ``MinMaxScaler``; a constant column becomes 0): these are the
pseudo-labels the network fits in that epoch and PLAIN's disambiguation scores. In float32
the scaling can round a column's largest value to 1 + 2⁻²³, a target that PyTorch's
binary cross-entropy refuses on the CPU (on a GPU it does not check): values are clipped
to [0, 1] (``MinMaxScaler(clip=True)``), which moves only such one-ulp excursions.

Arithmetic as the code's: float32 tensors, ŴZ by SciPy on the CPU (float32), every other
term by PyTorch on the fit's device, each operation rounded in the code's order.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.preprocessing import MinMaxScaler


def propagate(
    torch: Any,
    graph: sp.csr_matrix,
    correlation: Any,
    candidates: Any,
    predictions: Any,
    *,
    alpha: float,
    beta: float,
    eta: float,
    step: float,
    iterations: int,
) -> np.ndarray:
    """``iterations`` steps of size ``step`` on J from Z = Y, then each column min-max scaled.

    Args:
        torch: the torch module (imported by the caller: PyTorch is optional).
        graph: Ŵ, n x n float32 CSR.
        correlation: R̂, a q x q float32 tensor on the fit's device.
        candidates: Y, an n x q float32 tensor on the fit's device.
        predictions: P, an n x q float32 tensor on the fit's device.
        alpha, beta, eta: the weights of the instance graph, the label graph and the
            candidates (the paper's α, β, η).
        step: the step size γ.
        iterations: T.

    Returns:
        The pseudo-labels, n x q float32 (NumPy).
    """
    device = candidates.device
    Z = candidates
    with torch.no_grad():
        for _ in range(iterations):
            spread = torch.from_numpy(graph @ Z.cpu().numpy()).to(device)
            gradient = (
                alpha * (Z - spread)
                + eta * (Z - candidates)
                + (Z - predictions)
                + beta * (Z - Z @ correlation)
            )
            Z = Z - step * gradient
    return minmax_columns(Z.cpu().numpy())


def minmax_columns(Z: np.ndarray) -> np.ndarray:
    """Each column scaled to [0, 1] as scikit-learn's ``MinMaxScaler`` does (in Z's dtype; a
    constant column becomes 0), values clipped to [0, 1]."""
    return MinMaxScaler(clip=True).fit_transform(Z)
