"""The dataset contract: what every dataset plugin returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from pmlbench.core.checks import check_features, check_label_matrix
from pmlbench.core.safe_text import has_hidden, visible
from pmlbench.errors import PmlbenchError

# Smallest dataset the protocol accepts: a 50 % test part leaves 15 training instances, enough
# for the 10-neighbour kNN of ML-kNN and its relatives inside 5-fold tuning. Fewer cannot give
# a benchmark number; refusing them here names the key to change before any split is drawn.
MIN_INSTANCES = 30


@dataclass
class Dataset:
    """Features, ground truth and (for real PML data) natural candidate labels.

    Attributes:
        X: n x d features, dense float array or CSR matrix.
        Y: n x l ground-truth labels, 0/1.
        name: short name used in results.
        label_names: l label names.
        Y_candidates: n x l candidate labels for data with natural label noise, else None.
            When present, runs train on these and no noise model is applied.
        meta: free-form provenance (source, citation, ...).
    """

    X: np.ndarray | sp.csr_matrix
    Y: np.ndarray
    name: str
    label_names: list[str] = field(default_factory=list)
    Y_candidates: np.ndarray | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip() or has_hidden(self.name):
            raise PmlbenchError(
                f"dataset name {visible(str(self.name))!r} is empty or "
                "holds control or bidirectional characters, which would act on terminals and "
                "files instead of being shown; give the dataset a plain name (dataset.display_name)"
            )
        self.X = check_features(self.X, what=f"features of dataset {self.name!r}")
        n = self.X.shape[0]
        self.Y = check_label_matrix(self.Y, what=f"labels of dataset {self.name!r}", n_rows=n)
        if self.Y.shape[1] == 0:
            raise PmlbenchError(
                f"dataset {self.name!r} has no labels (its label matrix has {n} rows and 0 "
                "columns); a multi-label dataset needs at least one label column"
            )
        if not self.label_names:
            self.label_names = [f"label{j}" for j in range(self.Y.shape[1])]
        if len(self.label_names) != self.Y.shape[1]:
            raise PmlbenchError(
                f"dataset {self.name!r} has {self.Y.shape[1]} labels but {len(self.label_names)} "
                "label names; give one name per label column"
            )
        if self.Y_candidates is not None:
            self.Y_candidates = check_label_matrix(
                self.Y_candidates, what=f"candidate labels of dataset {self.name!r}", n_rows=n
            )
            if self.Y_candidates.shape != self.Y.shape:
                raise PmlbenchError(
                    f"dataset {self.name!r}: candidate labels have shape {self.Y_candidates.shape} "
                    f"but ground truth has {self.Y.shape}; they must match"
                )
            if np.any(self.Y > self.Y_candidates):
                raise PmlbenchError(
                    f"dataset {self.name!r}: some ground-truth labels are not candidates; in PML "
                    "the candidate set must contain every true label"
                )
        if n < MIN_INSTANCES:
            raise PmlbenchError(
                f"dataset {self.name!r} has {n} instances, too few for pmlbench's protocol "
                f"(at least {MIN_INSTANCES}: half are held out for testing and the kNN-based "
                "methods need 10 neighbours in the rest); choose a larger dataset (dataset=..., "
                "or dataset.path=... for your own file)"
            )

    @property
    def n_instances(self) -> int:
        return self.X.shape[0]

    @property
    def n_labels(self) -> int:
        return self.Y.shape[1]

    def summary(self) -> dict[str, Any]:
        """Sizes and label statistics, for run records and `pmlbench list`."""
        info = {
            "n": self.n_instances,
            "d": self.X.shape[1],
            "l": self.n_labels,
            "label_cardinality": float(self.Y.sum(axis=1).mean()),
            "sparse_features": bool(sp.issparse(self.X)),
        }
        if self.Y_candidates is not None:
            info["avg_candidates"] = float(self.Y_candidates.sum(axis=1).mean())
        return info
