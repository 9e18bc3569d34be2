"""The report as data: what to compute (:class:`ReportOptions`) and everything computed
(:class:`Report`), which every renderer (Markdown, LaTeX, CSV, terminal, report.html, the
leaderboard) reads and none changes.

:func:`pmlbench.report.build.build_report` fills a :class:`Report` from result files;
nothing here reads files or computes statistics.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import pandas as pd

from pmlbench.core.parameters import Constraint, Interval, Options, check_parameter
from pmlbench.errors import PmlbenchError
from pmlbench.report.across import MetricRanks
from pmlbench.report.bayes import BayesianResults
from pmlbench.report.pairwise import BLOCKS
from pmlbench.report.prepare import Prepared
from pmlbench.report.sources import LoadedResults
from pmlbench.report.unfinished import declined_cells, empty_unfinished
from pmlbench.stats.bayesian import DEFAULT_ROPE
from pmlbench.stats.multiple import CORRECTIONS
from pmlbench.stats.paired import TESTS
from pmlbench.stats.wtl import Comparisons

# wilcoxon: CD-diagram cliques from the pairwise Wilcoxon-Holm tests (report/pairwise.py)
POSTHOCS = ("wilcoxon", "nemenyi", "holm")
FORMATS = ("parquet",)


class _RopeWidth(Interval):
    """A real number >= 0, named in an error as what it is: a width on a metric's scale."""

    def describe(self) -> str:
        return "a finite width >= 0 on the metric's scale"


# what each option may hold (pmlbench.core.parameters), checked in this order; an error names
# the option as ``pmlbench report`` spells it (OPTION_FLAGS), the value and what is allowed
OPTION_CONSTRAINTS: dict[str, list[Constraint]] = {
    "alpha": [Interval(float, 0, 1, closed="neither")],
    "test": [Options(TESTS)],
    "correction": [Options(CORRECTIONS)],
    "posthoc": [Options(POSTHOCS)],
    "blocks": [Options(BLOCKS)],
    "leaderboard_test": [Options(TESTS)],
    "digits": [Interval(int, 0, 10)],
    "rope": [_RopeWidth(float, 0, None)],
    "formats": [Options(FORMATS)],  # each of them
}
OPTION_FLAGS = {name: "--" + name.replace("_", "-") for name in OPTION_CONSTRAINTS} | {
    "formats": "--format"
}


@dataclass
class ReportOptions:
    """What to compute; the defaults reproduce the paper's protocol.

    Checked when made: each option against :data:`OPTION_CONSTRAINTS` (the declarative
    constraints of :mod:`pmlbench.core.parameters`), then the options that need another
    (``bayesian`` a ``reference``, ``hierarchical`` ``bayesian``); a bad one raises a
    one-line :class:`~pmlbench.errors.PmlbenchError` naming the option as ``pmlbench
    report`` spells it, the value and what is allowed.

    Attributes:
        reference: method whose win/tie/loss against every other method is counted.
        alpha: significance level of every test.
        test: ``"ttest"`` (paper) or ``"corrected"`` (Nadeau-Bengio) per PML dataset.
        correction: ``"none"`` (paper) or ``"holm"`` over all win/tie/loss tests.
        posthoc: what joins methods in the critical-difference diagrams and the summary:
            ``"wilcoxon"`` (default) the pairwise Wilcoxon signed-rank tests with Holm's
            correction (a verdict on two methods does not depend on the others ranked);
            ``"nemenyi"`` or ``"holm"`` the mean-rank post-hoc tests after Friedman (their
            verdicts depend on the pool of methods ranked; Benavoli et al., 2016).
        blocks: ``"dataset"`` (default: one block per dataset, the mean over its noise
            levels and splits) or ``"level"`` (dataset x noise level) for the tests across
            datasets: pairwise Wilcoxon, Friedman, Wilcoxon and Bayesian vs the reference.
        pairwise_by_level: also run the pairwise tests at each noise level on its own.
        leaderboard_test: the per-dataset test of the leaderboard's win/tie/loss:
            ``"corrected"`` (default, Nadeau-Bengio) or ``"ttest"``; ``test`` is Table 3's.
        metrics: metrics to report, in order (default: all, in results order).
        where: column -> value filters applied before anything else; a list of values
            keeps rows holding any of them.
        plots: draw figures (needs matplotlib).
        sensitivity: method parameters to draw sensitivity curves for (None: detect).
        digits: decimals in the tables.
        html: also write report.html, the self-contained interactive page.
        bayesian: also compare the reference with every other method by Bayesian tests
            with a region of practical equivalence (needs ``reference``).
        rope: half-width of that region, on each metric's scale.
        hierarchical: with ``bayesian``, also the hierarchical Bayesian model over the
            split-level results (report/hierarchical.py; needs pystan and baycomp).
        formats: extra output formats: ``"parquet"`` writes the records the report used
            as results.parquet (needs pyarrow).
    """

    reference: str | None = None
    alpha: float = 0.05
    test: str = "ttest"
    correction: str = "none"
    posthoc: str = "wilcoxon"
    blocks: str = "dataset"
    pairwise_by_level: bool = False
    leaderboard_test: str = "corrected"
    metrics: list[str] | None = None
    where: Mapping[str, str | Sequence[str]] = field(default_factory=dict)
    plots: bool = True
    sensitivity: list[str] | None = None
    digits: int = 3
    html: bool = True
    bayesian: bool = False
    rope: float = DEFAULT_ROPE
    hierarchical: bool = False
    formats: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.formats = tuple(self.formats)
        for name, accepted in OPTION_CONSTRAINTS.items():
            values = self.formats if name == "formats" else (getattr(self, name),)
            for value in values:
                check_parameter(OPTION_FLAGS.get(name, name), value, accepted, prefix="")
        if self.bayesian and self.reference is None:
            raise PmlbenchError(
                "--bayesian compares the reference with every other method: pass --reference METHOD"
            )
        if self.hierarchical and not self.bayesian:
            raise PmlbenchError("--hierarchical is a Bayesian comparison: add --bayesian")


@dataclass
class Report:
    """Everything a report shows, as data."""

    options: ReportOptions
    loaded: LoadedResults
    prepared: Prepared
    table2: pd.DataFrame
    comparisons: Comparisons | None
    wtl: pd.DataFrame | None
    ranks: dict[str, MetricRanks]
    wilcoxon: pd.DataFrame | None
    notes: list[str]
    warnings: list[str]
    bayes: BayesianResults | None = None
    # the units without results, placed in the tables' cells (report/unfinished.py)
    unfinished: pd.DataFrame = field(default_factory=empty_unfinished)
    # every pair of methods across datasets (report/pairwise.py), and per noise level
    pairwise: pd.DataFrame | None = None
    pairwise_levels: pd.DataFrame | None = None
    # training-side measures per PML dataset and method (report/disambiguation.py)
    disambiguation: pd.DataFrame | None = None
    # the hierarchical Bayesian comparisons of the reference (report/hierarchical.py)
    hierarchical: pd.DataFrame | None = None

    @cached_property
    def declined(self) -> frozenset[tuple[str, str, str]]:
        """(method, dataset, level) of the cells whose method declined the dataset up front."""
        return declined_cells(self.unfinished)
