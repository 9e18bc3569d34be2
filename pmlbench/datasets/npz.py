"""Reading and writing pmlbench's npz dataset layout (CSR features, dense 0/1 labels)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from pmlbench.datasets.dataset import Dataset
from pmlbench.errors import PmlbenchError

REQUIRED_KEYS = ("X_data", "X_indices", "X_indptr", "X_shape", "Y")


def check_data_file(path: Path, what: str) -> None:
    """Refuse a missing or empty (0-byte) data file before any parser sees it."""
    if not path.is_file():
        raise PmlbenchError(f"{what}: file {path} does not exist; check the path")
    if path.stat().st_size == 0:
        raise PmlbenchError(f"{what}: file {path} is empty (0 bytes); re-create or re-download it")


def load_npz(
    path: str | Path, name: str | None = None, meta: dict | None = None, what: str | None = None
) -> Dataset:
    """Load a dataset stored as CSR arrays plus ``Y`` (and optional ``Y_candidates``).

    Args:
        path: the npz file.
        name: the dataset's name in results (default: the file's stem).
        meta: provenance to record (citation, ...).
        what: how error messages name the file (``dataset.path=...`` for users' files).
    """
    path = Path(path)
    what = what or str(path)
    check_data_file(path, what)
    try:
        with np.load(path, allow_pickle=False) as z:
            missing = [k for k in REQUIRED_KEYS if k not in z.files]
            if missing:
                held = f"holds only {z.files}" if z.files else "holds no arrays"
                raise PmlbenchError(
                    f"{what}: the npz file {held}; a pmlbench npz needs {list(REQUIRED_KEYS)} "
                    "(see docs/datasets.md)"
                )
            X = sp.csr_matrix(
                (z["X_data"], z["X_indices"], z["X_indptr"]), shape=tuple(z["X_shape"])
            )
            arrays = {
                k: z[k] for k in ("Y", "Y_candidates", "label_names", "source") if k in z.files
            }
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
        raise PmlbenchError(
            f"{what}: not a readable npz file ({type(exc).__name__}: {exc}); "
            "re-create or re-download it"
        ) from None
    info = dict(meta or {})
    if "source" in arrays:
        info.setdefault("source", str(arrays["source"]))
    return Dataset(
        X=X,
        Y=arrays["Y"],
        name=name or path.stem,
        label_names=[str(s) for s in arrays.get("label_names", [])],
        Y_candidates=arrays.get("Y_candidates"),
        meta=info,
    )
