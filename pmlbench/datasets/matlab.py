"""MATLAB .mat files in the two layouts that multi-label and PML datasets are distributed in.

- PML layout: ``data`` (instances x features), ``target`` (ground truth) and, for real PML
  data, ``partial_labels`` (candidates).
- Train/test layout (many multi-label datasets, e.g. the Yahoo sets): ``train_data``,
  ``train_target``, ``test_data``, ``test_target``. pmlbench's protocol draws its own seeded
  train/test splits, so the two parts are stacked (train rows first) into one dataset; the
  given split is not used.

Label matrices are stored labels x instances, with 0/1 or -1/+1 entries; both are converted
here (and only here) to instances x labels, 0/1. MATLAB v7.3 files are HDF5, which scipy does
not read: they get an error asking to re-save them as v7.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import scipy.io
import scipy.sparse as sp
from scipy.io.matlab import MatReadError

from pmlbench.core.checks import check_features, check_sparse_structure
from pmlbench.datasets.dataset import Dataset
from pmlbench.datasets.npz import check_data_file
from pmlbench.errors import PmlbenchError

PML_KEYS = ("data", "target")
SPLIT_KEYS = ("train_data", "train_target", "test_data", "test_target")


def _orientation(M: Any, n: int) -> str | None:
    """``labels x instances`` or ``instances x labels`` when a label matrix's shape says
    which (it has ``n`` instances), None when it is square."""
    shape: tuple[int, ...] = tuple(getattr(M, "shape", ()))
    if len(shape) != 2 or shape[0] == shape[1]:
        return None
    return "instances x labels" if shape[0] == n else "labels x instances"


def _labels(
    M: Any, n: int, key: str, rows_key: str, what: str, orientation: str | None = None
) -> np.ndarray:
    """An instances x labels 0/1 matrix from a stored label matrix (either orientation).

    A square matrix (as many labels as instances) does not say its orientation: it takes
    ``orientation``, that of another label matrix of the file, and is refused without one.
    """
    if sp.issparse(M):
        check_sparse_structure(M, what=f"{what}: {key!r}")
    M = M.toarray() if sp.issparse(M) else np.asarray(M)
    if M.ndim != 2 or n not in M.shape:
        raise PmlbenchError(
            f"{what}: {key!r} has shape {M.shape}, which does not match the {n} instances "
            f"(rows) of {rows_key!r}; store {key!r} as labels x instances and {rows_key!r} as "
            "instances x features (is one of them transposed?)"
        )
    if M.shape[0] == M.shape[1] and orientation is None:
        raise PmlbenchError(
            f"{what}: {key!r} is square ({n} x {n}: as many labels as instances), so whether "
            "it is labels x instances or instances x labels cannot be told; save the dataset "
            "as a pmlbench npz (docs/datasets.md), whose Y is always instances x labels"
        )
    if M.shape[0] != n or (M.shape[0] == M.shape[1] and orientation == "labels x instances"):
        M = M.T  # community layout: labels x instances
    values = np.unique(M)
    if set(values.tolist()) <= {-1, 1} or set(values.tolist()) <= {-1, 0, 1} and -1 in values:
        if 0 in values:
            raise PmlbenchError(f"{what}: {key!r} mixes -1, 0 and 1; use one encoding")
        M = (M == 1).astype(np.uint8)
    return M


def _features(M: Any, key: str, what: str) -> np.ndarray | sp.csr_matrix:
    if np.ndim(M) != 2 and not sp.issparse(M):
        return np.asarray(M)  # the callers name the key and the expected layout
    return check_features(M, what=f"{what}: {key!r}")


def _read(path: Path, what: str) -> dict[str, Any]:
    check_data_file(path, what)
    try:
        return scipy.io.loadmat(path)
    except NotImplementedError:
        raise PmlbenchError(
            f"{what}: {path.name} is a MATLAB v7.3 (HDF5) file, which scipy cannot read; "
            "re-save it in MATLAB or Octave with save(..., '-v7')"
        ) from None
    except (MatReadError, ValueError, OSError, TypeError) as exc:
        raise PmlbenchError(
            f"{what}: not a readable .mat file ({exc}); re-create or re-download it"
        ) from None


def _stack_split_layout(contents: dict[str, Any], what: str):
    """Features and labels of the train/test layout, train rows first."""
    X_parts, Y_parts = [], []
    for part in ("train", "test"):
        X = _features(contents[f"{part}_data"], f"{part}_data", what)
        if X.ndim != 2:
            raise PmlbenchError(
                f"{what}: '{part}_data' has shape {X.shape}; it must be instances x features"
            )
        X_parts.append(X)
        other = contents["test_target" if part == "train" else "train_target"]
        other_n = tuple(
            getattr(contents["test_data" if part == "train" else "train_data"], "shape", ())
        )
        Y_parts.append(
            _labels(
                contents[f"{part}_target"],
                X.shape[0],
                f"{part}_target",
                f"{part}_data",
                what,
                _orientation(other, other_n[0]) if len(other_n) == 2 else None,
            )
        )
    if X_parts[0].shape[1] != X_parts[1].shape[1]:
        raise PmlbenchError(
            f"{what}: 'train_data' has {X_parts[0].shape[1]} features but 'test_data' has "
            f"{X_parts[1].shape[1]}; both must be instances x features with the same columns"
        )
    if Y_parts[0].shape[1] != Y_parts[1].shape[1]:
        raise PmlbenchError(
            f"{what}: 'train_target' has {Y_parts[0].shape[1]} labels but 'test_target' has "
            f"{Y_parts[1].shape[1]}; both parts must have the same labels"
        )
    if any(sp.issparse(X) for X in X_parts):
        X = sp.vstack([sp.csr_matrix(X) for X in X_parts], format="csr")
    else:
        X = np.vstack(X_parts)
    return X, np.vstack(Y_parts), len(Y_parts[0])


def load_mat(path: str | Path, *, name: str | None = None, what: str | None = None) -> Dataset:
    """Load a MATLAB v5/v7 .mat file in the PML or the train/test layout (module docstring).

    Args:
        path: the .mat file.
        name: the dataset's name in results (default: the file's stem).
        what: how error messages name the file (``dataset.path=...`` for users' files).
    """
    path = Path(path)
    what = what or str(path)
    contents = _read(path, what)
    meta: dict[str, Any] = {"source": str(path), "format": "mat"}
    if all(k in contents for k in PML_KEYS):
        X = _features(contents["data"], "data", what)
        if X.ndim != 2:
            raise PmlbenchError(
                f"{what}: 'data' has shape {X.shape}; it must be instances x features"
            )
        n = X.shape[0]
        Y = _labels(contents["target"], n, "target", "data", what)
        candidates = (
            _labels(contents["partial_labels"], n, "partial_labels", "data", what)
            if "partial_labels" in contents
            else None
        )
    elif all(k in contents for k in SPLIT_KEYS):
        X, Y, n_train = _stack_split_layout(contents, what)
        candidates = None
        meta["layout"] = f"train_data/test_data stacked ({n_train} train rows first)"
    else:
        stored = sorted(k for k in contents if not k.startswith("__"))
        raise PmlbenchError(
            f"{what}: the .mat file holds {stored}; pmlbench reads either data / target "
            "(/ partial_labels) or train_data / train_target / test_data / test_target"
        )
    return Dataset(X=X, Y=Y, name=name or path.stem, Y_candidates=candidates, meta=meta)
