"""Min-max scaling and RBF kernel features on random anchors, as the MATLAB programs of
CcAmbiguous's PML methods compute them before their models (``main_PML.m``'s ``mapminmax``
and ``function/Kernel_mapping.m``; used by PML-PLR, PML-DDA, PML-MA and PML-LRIG).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pmlbench.errors import PmlbenchError

# MATLAB's mapminmax treats a feature whose gain would exceed this as constant (gain 1)
MAPMINMAX_MAX_GAIN = 1e14


def minmax_fit(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-feature minimum and range of the training rows (``mapminmax``'s settings)."""
    low = X.min(axis=0)
    return low, X.max(axis=0) - low


def constant_features(span: np.ndarray) -> np.ndarray:
    """The features ``mapminmax`` leaves unscaled: range 0 on the training rows, or a gain
    ``2 / range`` above :data:`MAPMINMAX_MAX_GAIN` (its rule for a constant row)."""
    with np.errstate(divide="ignore"):
        gain = 2.0 / span
    return ~(span > 0) | ~(np.abs(gain) <= MAPMINMAX_MAX_GAIN)


def minmax_apply(X: np.ndarray, low: np.ndarray, span: np.ndarray) -> np.ndarray:
    """``mapminmax``: each feature mapped linearly to [-1, 1] on the training rows (test rows
    may fall outside). A feature constant on the training rows passes through unchanged, on
    the test rows too: ``mapminmax`` gives it gain 1 and offset −1, so ``y = (x + 1) − 1``
    ("if xmax = xmin ... y = x")."""
    constant = constant_features(span)
    scaled = 2.0 * (X - low) / np.where(constant, 1.0, span) - 1.0
    scaled[:, constant] = (X[:, constant] + 1.0) - 1.0
    return scaled


def squared_distances(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``‖a_i‖² + ‖b_j‖² − 2a_i·b_j`` (``sqdist`` in ``Kernel_mapping.m``)."""
    return (A * A).sum(axis=1)[:, None] + (B * B).sum(axis=1)[None, :] - 2.0 * (A @ B.T)


def n_anchors(n: int, d: int) -> int:
    """``Kernel_mapping.m``: 5 anchors per feature, at most the training instances."""
    return min(5 * d, n)


@dataclass
class KernelMap:
    """``Kernel_mapping.m``: RBF features on anchors, centred on the training rows, + bias.

    The features come as the MATLAB code of the calling method lays them out: h x n
    (instances in columns, PML-PLR's and PML-DDA's code) or, with ``rows``, n x h (instances
    in rows, PML-MA's and PML-LRIG's); the bias is the last feature either way.
    """

    anchors: np.ndarray  # nAnchors x d
    width: float  # Xsigma: the mean squared training-anchor distance
    centre: np.ndarray  # per-anchor mean over the training rows
    rows: bool = False  # instances in rows (n x h) instead of columns (h x n)

    @classmethod
    def fit(
        cls, X: np.ndarray, anchor_rows: np.ndarray, *, method: str, rows: bool = False
    ) -> tuple[KernelMap, np.ndarray]:
        """The map fitted on the training rows X and their kernel features, the anchors being
        the rows ``anchor_rows`` of X; ``method`` names the caller in the error raised when
        the kernel width is 0."""
        anchors = X[anchor_rows]
        D = squared_distances(X, anchors)
        width = float(D.mean(axis=1).mean())
        if not width > 0:
            raise PmlbenchError(
                f"{method}: the training features are all equal after scaling (no feature "
                "varies on the training rows), so the kernel width is 0; check the dataset"
            )
        K = np.exp(-D / (2.0 * width))
        centre = K.mean(axis=0)
        mapping = cls(anchors, width, centre, rows)
        return mapping, mapping._finish(K)

    def transform(self, X: np.ndarray) -> np.ndarray:
        """The kernel features of the rows of X, laid out as :meth:`fit`'s."""
        return self._finish(np.exp(-squared_distances(X, self.anchors) / (2.0 * self.width)))

    def _finish(self, K: np.ndarray) -> np.ndarray:
        if self.rows:
            return np.hstack([K - self.centre, np.ones((K.shape[0], 1))])  # n x h
        return np.vstack([(K - self.centre).T, np.ones((1, K.shape[0]))])  # h x n
