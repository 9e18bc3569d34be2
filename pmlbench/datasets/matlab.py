"""MATLAB .mat files in the PML community layout.

Keys: ``data`` (instances x features), ``target`` (ground truth) and, for real PML data,
``partial_labels`` (candidates). Label matrices are stored labels x instances, with 0/1 or
-1/+1 entries; both are converted here (and only here) to instances x labels, 0/1.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp

from pmlbench.datasets.dataset import Dataset
from pmlbench.errors import PmlbenchError


def _labels(M, n: int, key: str, path: Path) -> np.ndarray:
    M = M.toarray() if sp.issparse(M) else np.asarray(M)
    if M.ndim != 2 or n not in M.shape:
        raise PmlbenchError(
            f"{path}: {key!r} has shape {M.shape}, which does not match {n} instances"
        )
    if M.shape[0] != n or (M.shape[1] == n and M.shape[0] == n):
        M = M.T  # community layout: labels x instances
    values = np.unique(M)
    if set(values.tolist()) <= {-1, 1} or set(values.tolist()) <= {-1, 0, 1} and -1 in values:
        if 0 in values:
            raise PmlbenchError(f"{path}: {key!r} mixes -1, 0 and 1; use one encoding")
        M = (M == 1).astype(np.uint8)
    return M


def load_mat(path: str | Path, *, name: str | None = None) -> Dataset:
    """Load ``data`` / ``target`` / ``partial_labels`` from a MATLAB v5 .mat file."""
    path = Path(path)
    if not path.is_file():
        raise PmlbenchError(f".mat file {path} does not exist; check dataset.path")
    try:
        contents = scipy.io.loadmat(path)
    except NotImplementedError:
        raise PmlbenchError(
            f"{path} is a MATLAB v7.3 (HDF5) file; re-save it in MATLAB with save(..., '-v7')"
        ) from None
    except (ValueError, OSError) as exc:
        raise PmlbenchError(f"{path} is not a readable .mat file ({exc})") from None
    missing = [k for k in ("data", "target") if k not in contents]
    if missing:
        raise PmlbenchError(
            f"{path} lacks {missing}; expected the PML layout data / target / partial_labels"
        )
    X = contents["data"]
    X = sp.csr_matrix(X) if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    Y = _labels(contents["target"], n, "target", path)
    candidates = (
        _labels(contents["partial_labels"], n, "partial_labels", path)
        if "partial_labels" in contents
        else None
    )
    return Dataset(
        X=X,
        Y=Y,
        name=name or path.stem,
        Y_candidates=candidates,
        meta={"source": str(path), "format": "mat"},
    )
