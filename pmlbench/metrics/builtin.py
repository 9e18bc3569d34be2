"""The built-in metric plugins, registered in pyproject.toml under ``pmlbench.metrics``."""

from pmlbench.metrics import bipartition as _bip
from pmlbench.metrics import ranking as _rank
from pmlbench.metrics.base import Metric

subset_accuracy = Metric(
    "subset_accuracy",
    _bip.subset_accuracy,
    True,
    "bipartition",
    "share of instances whose predicted label set is exactly right",
)
hamming_loss = Metric(
    "hamming_loss",
    _bip.hamming_loss,
    False,
    "bipartition",
    "share of wrongly predicted (instance, label) entries",
)
one_error = Metric(
    "one_error",
    _rank.one_error,
    False,
    "scores",
    "share of instances whose top-ranked label is irrelevant",
)
ranking_loss = Metric(
    "ranking_loss",
    _rank.ranking_loss,
    False,
    "scores",
    "share of (relevant, irrelevant) label pairs ranked wrongly",
)
average_precision = Metric(
    "average_precision",
    _rank.average_precision,
    True,
    "scores",
    "mean precision at the rank of each relevant label",
)
macro_f1 = Metric(
    "macro_f1",
    _bip.macro_f1,
    True,
    "bipartition",
    "F1 averaged over labels",
)
micro_f1 = Metric(
    "micro_f1",
    _bip.micro_f1,
    True,
    "bipartition",
    "F1 over all (instance, label) entries",
)
coverage = Metric(
    "coverage",
    _rank.coverage,
    False,
    "scores",
    "mean depth (worst rank - 1) needed to cover all relevant labels, unnormalised",
)

# The paper's seven metrics, in its order: the default of the ``metrics`` setting
# (pmlbench.protocol.settings.EXPERIMENT).
PAPER_METRICS = (
    "subset_accuracy",
    "hamming_loss",
    "one_error",
    "ranking_loss",
    "average_precision",
    "macro_f1",
    "micro_f1",
)
