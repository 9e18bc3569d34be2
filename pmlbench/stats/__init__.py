"""Statistics for comparing methods: paired tests per PML dataset, tests across datasets.

- :mod:`~pmlbench.stats.paired`: the paper's paired t-test and the Nadeau-Bengio corrected
  resampled t-test over matched splits.
- :mod:`~pmlbench.stats.wtl`: win/tie/loss of a reference method (the paper's Table 3).
- :mod:`~pmlbench.stats.multiple`: Holm's correction.
- :mod:`~pmlbench.stats.ranks`, :mod:`~pmlbench.stats.friedman`,
  :mod:`~pmlbench.stats.wilcoxon`: ranks by metric direction, Friedman with Nemenyi / Holm
  post-hoc tests and the Wilcoxon signed-rank test across datasets (Demšar, 2006).
- :mod:`~pmlbench.stats.pairwise`: every pair of methods by the Wilcoxon signed-rank test
  over datasets with Holm's correction, and the cliques of a critical-difference diagram.
- :mod:`~pmlbench.stats.bayesian`: Bayesian comparisons with a region of practical
  equivalence: the correlated Bayesian t-test per dataset, the Bayesian signed-rank test
  across datasets, and their win/tie/loss (Benavoli et al., 2017);
  :mod:`~pmlbench.stats.hierarchical`: the hierarchical model over split-level results
  (optional: pystan and baycomp).
"""

from pmlbench.stats.bayesian import (
    BayesianComparison,
    bayesian_comparisons,
    bayesian_outcome,
    bayesian_signed_rank,
    bayesian_win_tie_loss,
    correlated_bayesian_ttest,
)
from pmlbench.stats.friedman import (
    FriedmanResult,
    control_posthoc,
    friedman_from_ranks,
    friedman_test,
    nemenyi_critical_difference,
    nonsignificant_groups,
    pairwise_posthoc,
    tie_sum,
)
from pmlbench.stats.multiple import CORRECTIONS, adjust_pvalues
from pmlbench.stats.paired import (
    TESTS,
    EffectSize,
    PairedTest,
    corrected_resampled_ttest,
    outcome,
    paired_effect_size,
    paired_ttest,
)
from pmlbench.stats.pairwise import pairwise_cliques, pairwise_wilcoxon
from pmlbench.stats.ranks import average_ranks, rank_within_blocks
from pmlbench.stats.wilcoxon import (
    WilcoxonResult,
    exact_signed_rank_pvalue,
    wilcoxon_signed_rank,
)
from pmlbench.stats.wtl import Comparisons, compare_with_reference, win_tie_loss

__all__ = [
    "CORRECTIONS",
    "TESTS",
    "BayesianComparison",
    "Comparisons",
    "EffectSize",
    "FriedmanResult",
    "PairedTest",
    "WilcoxonResult",
    "adjust_pvalues",
    "average_ranks",
    "bayesian_comparisons",
    "bayesian_outcome",
    "bayesian_signed_rank",
    "bayesian_win_tie_loss",
    "compare_with_reference",
    "control_posthoc",
    "corrected_resampled_ttest",
    "correlated_bayesian_ttest",
    "exact_signed_rank_pvalue",
    "friedman_from_ranks",
    "friedman_test",
    "nemenyi_critical_difference",
    "nonsignificant_groups",
    "outcome",
    "paired_effect_size",
    "paired_ttest",
    "pairwise_cliques",
    "pairwise_wilcoxon",
    "pairwise_posthoc",
    "rank_within_blocks",
    "tie_sum",
    "win_tie_loss",
    "wilcoxon_signed_rank",
]
