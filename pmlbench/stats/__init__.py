"""Statistics for comparing methods: paired tests per PML dataset, tests across datasets.

- :mod:`~pmlbench.stats.paired`: the paper's paired t-test and the Nadeau-Bengio corrected
  resampled t-test over matched splits.
- :mod:`~pmlbench.stats.wtl`: win/tie/loss of a reference method (the paper's Table 3).
- :mod:`~pmlbench.stats.multiple`: Holm's correction.
- :mod:`~pmlbench.stats.ranks`, :mod:`~pmlbench.stats.friedman`,
  :mod:`~pmlbench.stats.wilcoxon`: ranks by metric direction, Friedman with Nemenyi / Holm
  post-hoc tests and the Wilcoxon signed-rank test across datasets (Demšar, 2006).
"""

from pmlbench.stats.friedman import (
    FriedmanResult,
    control_posthoc,
    friedman_from_ranks,
    friedman_test,
    nemenyi_critical_difference,
    nonsignificant_groups,
    pairwise_posthoc,
)
from pmlbench.stats.multiple import CORRECTIONS, adjust_pvalues
from pmlbench.stats.paired import (
    TESTS,
    PairedTest,
    corrected_resampled_ttest,
    outcome,
    paired_ttest,
)
from pmlbench.stats.ranks import average_ranks, rank_within_blocks
from pmlbench.stats.wilcoxon import WilcoxonResult, wilcoxon_signed_rank
from pmlbench.stats.wtl import Comparisons, compare_with_reference, win_tie_loss

__all__ = [
    "CORRECTIONS",
    "TESTS",
    "Comparisons",
    "FriedmanResult",
    "PairedTest",
    "WilcoxonResult",
    "adjust_pvalues",
    "average_ranks",
    "compare_with_reference",
    "control_posthoc",
    "corrected_resampled_ttest",
    "friedman_from_ranks",
    "friedman_test",
    "nemenyi_critical_difference",
    "nonsignificant_groups",
    "outcome",
    "paired_ttest",
    "pairwise_posthoc",
    "rank_within_blocks",
    "win_tie_loss",
    "wilcoxon_signed_rank",
]
