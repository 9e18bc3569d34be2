"""``example_synth``: a small seeded synthetic multi-label dataset.

Drawn by scikit-learn's ``make_multilabel_classification`` (a mixture-of-topics generator:
each instance picks a label set, then bag-of-words style features from those labels'
topics), with no unlabelled instances, so every ranking metric is defined.
"""

from __future__ import annotations

from dataclasses import dataclass

from sklearn.datasets import make_multilabel_classification

from pmlbench.plugin import Dataset, PmlbenchError


@dataclass
class SynthParams:
    """The loader's parameters; pmlbench turns these fields into the ``dataset`` config node."""

    n_instances: int = 300
    n_features: int = 20
    n_labels: int = 8
    avg_labels: int = 2
    seed: int = 0


def example_synth(
    n_instances: int = 300,
    n_features: int = 20,
    n_labels: int = 8,
    avg_labels: int = 2,
    seed: int = 0,
) -> Dataset:
    """Small synthetic multi-label data (make_multilabel_classification), seeded."""
    if min(n_instances, n_features, n_labels, avg_labels) < 1 or avg_labels >= n_labels:
        raise PmlbenchError(
            "example_synth needs positive sizes and dataset.avg_labels < dataset.n_labels"
        )
    X, Y = make_multilabel_classification(
        n_samples=int(n_instances),
        n_features=int(n_features),
        n_classes=int(n_labels),
        n_labels=int(avg_labels),
        allow_unlabeled=False,
        random_state=int(seed),
    )
    return Dataset(
        X=X,
        Y=Y,
        name="example_synth",
        meta={"source": "sklearn.datasets.make_multilabel_classification", "seed": int(seed)},
    )


# The Params route: a dataclass attribute instead of the signature (both give the same node).
example_synth.Params = SynthParams
