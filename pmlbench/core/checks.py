"""Checks on user-supplied arrays, shared by datasets, noise models, methods and metrics."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from pmlbench.errors import PmlbenchError


def check_sparse_structure(X, *, what: str = "features") -> None:
    """Refuse a sparse matrix whose index arrays do not describe a matrix of its shape.

    A crafted or damaged file can hold negative column indices, indices beyond the column
    count, or a non-monotone ``indptr``: scipy's routines would read memory outside the
    arrays (wrong numbers or a segmentation fault), so this runs before any of them touches
    the matrix (scipy's ``check_format(full_check=True)``, plus what it leaves out).
    """
    check_format = getattr(X, "check_format", None)  # CSR, CSC, BSR; COO checks on creation
    try:
        if callable(check_format):
            check_format(full_check=True)
            indptr = np.asarray(X.indptr)
            if indptr.size and (indptr[0] != 0 or indptr[-1] != len(X.indices)):
                raise ValueError("indptr does not start at 0 and end at the number of entries")
        elif X.format == "coo" and X.nnz:
            rows, cols = np.asarray(X.row), np.asarray(X.col)
            if min(rows.min(), cols.min()) < 0 or rows.max() >= X.shape[0]:
                raise ValueError("row or column index out of bounds")
            if cols.max() >= X.shape[1]:
                raise ValueError("column index out of bounds")
    except (ValueError, TypeError, IndexError) as exc:
        raise PmlbenchError(
            f"{what} are a damaged sparse matrix of shape {X.shape} ({exc}); re-create the file "
            "from the original data"
        ) from None


def _refuse_complex(X, what: str) -> None:
    if np.iscomplexobj(X.data if sp.issparse(X) else X):
        raise PmlbenchError(
            f"{what} are complex numbers; pmlbench needs real features (take the real part, "
            "the magnitude or both as separate columns before benchmarking)"
        )


def canonical_csr(X: sp.csr_matrix) -> sp.csr_matrix:
    """``X`` in the one canonical CSR form: duplicate entries summed (scipy's meaning of a
    repeated index), column indices sorted, explicit zeros dropped; a copy when ``X`` was not
    in that form already, ``X`` itself otherwise.

    Two files holding the same matrix must give the same numbers: code that compares stored
    entries (identical rows, whole-number checks) or sums them in storage order would
    otherwise see two matrices.
    """
    if X.has_canonical_format and X.has_sorted_indices and not np.any(X.data == 0):
        return X
    X = X.copy()
    X.sum_duplicates()  # also sorts the indices
    X.eliminate_zeros()
    return X


def check_features(X, *, what: str = "features") -> np.ndarray | sp.csr_matrix:
    """Return X as a float64 dense array or canonical CSR matrix (:func:`canonical_csr`);
    refuse NaN, inf, complex values, damaged sparse structure and non-2-D input."""
    if sp.issparse(X):
        check_sparse_structure(X, what=what)
        _refuse_complex(X, what)
        X = canonical_csr(sp.csr_matrix(X, dtype=np.float64))
        values = X.data
    else:
        if not isinstance(X, np.ndarray):
            try:
                X = np.asarray(X)
            except (TypeError, ValueError) as exc:
                raise PmlbenchError(
                    f"{what} are not numeric ({exc}); convert them to numbers"
                ) from None
        _refuse_complex(X, what)
        try:
            X = np.asarray(X, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise PmlbenchError(
                f"{what} are not numeric ({exc}); convert them to numbers"
            ) from None
        values = X
    if X.ndim != 2:
        raise PmlbenchError(
            f"{what} must be a 2-D matrix (instances x features), got shape {X.shape}"
        )
    if not np.all(np.isfinite(values)):
        bad = int(np.sum(~np.isfinite(values)))
        raise PmlbenchError(
            f"{what} contain {bad} NaN or infinite values; impute or drop them before benchmarking"
        )
    return X


def check_label_matrix(Y, *, what: str = "labels", n_rows: int | None = None) -> np.ndarray:
    """Return Y as a dense uint8 0/1 matrix (instances x labels); refuse any other encoding."""
    if sp.issparse(Y):
        Y = Y.toarray()
    Y = np.asarray(Y)
    if Y.ndim != 2:
        raise PmlbenchError(
            f"{what} must be a 2-D 0/1 matrix (instances x labels), got shape {Y.shape}"
        )
    if Y.size and not np.isin(Y, (0, 1)).all():
        found = np.unique(Y[~np.isin(Y, (0, 1))])[:5]
        hint = " (a -1/+1 encoding? map -1 to 0)" if np.isin(found, (-1,)).any() else ""
        raise PmlbenchError(
            f"{what} must be 0/1, found values {found.tolist()}{hint}; "
            "convert them to 0/1 indicators"
        )
    if n_rows is not None and Y.shape[0] != n_rows:
        raise PmlbenchError(
            f"{what} have {Y.shape[0]} rows but the features have {n_rows}; "
            "labels must be instances x labels (transpose a labels x instances matrix)"
        )
    return Y.astype(np.uint8, copy=False)


def check_feature_count(X, n_fitted: int, *, method: str) -> None:
    """Refuse test features whose column count differs from the training features'."""
    if X.shape[1] != n_fitted:
        raise PmlbenchError(
            f"{method} was fitted on {n_fitted} features, got {X.shape[1]}; "
            "use the same feature columns for test data"
        )


def as_dense(values, dtype=None) -> np.ndarray:
    """A dense array from a dense or sparse method output."""
    return np.asarray(values.toarray() if sp.issparse(values) else values, dtype=dtype)
