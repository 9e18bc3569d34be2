"""Reading and writing pmlbench's npz dataset layout (CSR features, dense 0/1 labels)."""

from __future__ import annotations

import math
import zipfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from pmlbench.core.checks import check_features
from pmlbench.datasets.dataset import Dataset
from pmlbench.errors import PmlbenchError

REQUIRED_KEYS = ("X_data", "X_indices", "X_indptr", "X_shape", "Y")


def check_data_file(path: Path, what: str) -> None:
    """Refuse a missing or empty (0-byte) data file before any parser sees it."""
    if not path.is_file():
        raise PmlbenchError(f"{what}: file {path} does not exist; check the path")
    if path.stat().st_size == 0:
        raise PmlbenchError(f"{what}: file {path} is empty (0 bytes); re-create or re-download it")


# The leading bytes of files often given as an npz by mistake, and what they are.
_OTHER_FORMATS = (
    (b"\x93NUMPY", "a single .npy array, not an npz archive; save the arrays with np.savez"),
    (b"MATLAB", "a MATLAB .mat file; set dataset.format=mat or give it the .mat extension"),
    (b"\x89HDF", "an HDF5 file (MATLAB v7.3?); re-save it as npz or as a v7 .mat file"),
    (b"\x80", "a Python pickle, which pmlbench never loads; save the arrays with np.savez"),
)


def _diagnose_not_zip(path: Path, what: str) -> PmlbenchError:
    """The error for a data file that is not a zip archive: what it looks like instead."""
    with open(path, "rb") as handle:
        head = handle.read(4096)
    if head.startswith(b"PK"):
        return PmlbenchError(
            f"{what}: not a readable npz file (a truncated or damaged zip archive: its "
            "directory is missing); re-create or re-download it"
        )
    for magic, meaning in _OTHER_FORMATS:
        if head.startswith(magic):
            return PmlbenchError(f"{what}: the file is {meaning}")
    text = head.lstrip(b"\xef\xbb\xbf").lstrip().lower()
    if text.startswith((b"@relation", b"%")) or b"\n@relation" in text:
        return PmlbenchError(
            f"{what}: the file is ARFF text, not an npz archive; set dataset.format=arff "
            "or give it the .arff extension"
        )
    return PmlbenchError(
        f"{what}: not a readable npz file (not a zip archive); re-create it with np.savez "
        "(see docs/datasets.md)"
    )


def _available_memory() -> int | None:
    """Bytes of memory available now (Linux /proc/meminfo), None when unknown."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _array_headers(path: Path, what: str) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Shape and dtype of every array of an npz archive, read from the .npy headers only.

    Refuses, before any array is decompressed: a file that is not a zip archive (saying what
    it looks like), pickled (object) arrays, and arrays whose declared sizes exceed the
    memory available (a small file can declare gigabytes).
    """
    if not zipfile.is_zipfile(path):
        raise _diagnose_not_zip(path, what)
    headers: dict[str, tuple[tuple[int, ...], np.dtype]] = {}
    total = 0
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                if not info.filename.endswith(".npy"):
                    continue
                with archive.open(info) as member:
                    version = np.lib.format.read_magic(member)
                    read = (
                        np.lib.format.read_array_header_1_0
                        if version == (1, 0)
                        else np.lib.format.read_array_header_2_0
                    )
                    shape, _, dtype = read(member)
                if dtype.hasobject:
                    raise PmlbenchError(
                        f"{what}: array {info.filename[:-4]!r} holds Python objects, which "
                        "pmlbench never unpickles; store numbers (and label names as strings)"
                    )
                headers[info.filename[:-4]] = (tuple(shape), dtype)
                total += math.prod(shape) * dtype.itemsize
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, TypeError) as exc:
        raise PmlbenchError(
            f"{what}: not a readable npz file ({type(exc).__name__}: {exc}); "
            "re-create or re-download it"
        ) from None
    available = _available_memory()
    if available is not None and total > available:
        raise PmlbenchError(
            f"{what}: its arrays declare {_size(total)} once decompressed, more than the "
            f"{_size(available)} of memory available; check the file (a damaged or "
            "crafted archive?) or load it on a larger machine"
        )
    return headers


def _size(n_bytes: int) -> str:
    return f"{n_bytes / 1e9:.1f} GB" if n_bytes >= 1e9 else f"{n_bytes / 1e6:.1f} MB"


def _check_layout(
    headers: dict[str, tuple[tuple[int, ...], np.dtype]], X_shape: np.ndarray, what: str
) -> tuple[int, int]:
    """The feature matrix's shape, after checking that the arrays' declared shapes fit it."""
    if X_shape.shape != (2,) or X_shape.dtype.kind not in "iu" or (X_shape < 0).any():
        raise PmlbenchError(
            f"{what}: X_shape must hold two non-negative integers (rows, columns), got "
            f"{X_shape.tolist()}"
        )
    n, d = (int(v) for v in X_shape)
    data, indices, indptr = (headers[k][0] for k in ("X_data", "X_indices", "X_indptr"))
    problem = None
    if len(indptr) != 1 or indptr[0] != n + 1:
        problem = f"X_indptr has shape {indptr}, expected ({n + 1},) for {n} rows"
    elif len(data) != 1 or data != indices:
        problem = f"X_data has shape {data} and X_indices {indices}; both must be (nnz,)"
    elif data[0] > n * d:
        problem = f"X_data holds {data[0]} entries, more than {n} x {d}"
    else:
        for key in ("Y", "Y_candidates"):
            if key in headers and (len(headers[key][0]) != 2 or headers[key][0][0] != n):
                problem = f"{key} has shape {headers[key][0]}, expected ({n}, labels)"
                break
    if problem is not None:
        raise PmlbenchError(f"{what}: {problem}; re-create the file (see docs/datasets.md)")
    return n, d


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
    headers = _array_headers(path, what)  # sizes and structure checked before any data is read
    try:
        with np.load(path, allow_pickle=False) as z:
            missing = [k for k in REQUIRED_KEYS if k not in z.files]
            if missing:
                held = f"holds only {z.files}" if z.files else "holds no arrays"
                raise PmlbenchError(
                    f"{what}: the npz file {held}; a pmlbench npz needs {list(REQUIRED_KEYS)} "
                    "(see docs/datasets.md)"
                )
            shape = _check_layout(headers, z["X_shape"], what)
            X = sp.csr_matrix((z["X_data"], z["X_indices"], z["X_indptr"]), shape=shape)
            X = check_features(X, what=f"{what}: the features (X_data, X_indices, X_indptr)")
            arrays = {
                k: z[k] for k in ("Y", "Y_candidates", "label_names", "source") if k in z.files
            }
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, TypeError) as exc:
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
