"""Checks on user-supplied arrays, shared by datasets, noise models, methods and metrics."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from pmlbench.errors import PmlbenchError


def check_features(X, *, what: str = "features") -> np.ndarray | sp.csr_matrix:
    """Return X as a float64 dense array or CSR matrix; refuse NaN, inf and non-2-D input."""
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        values = X.data
    else:
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
