"""
Compare two methods with the Bayesian test
==========================================

A p-value that does not reject is no evidence that two methods are equal. The Bayesian tests
of Benavoli et al. (JMLR 2017) give instead the probabilities that one method is better by
more than a region of practical equivalence (ROPE), that the two are practically equivalent,
or that the other is better (``pmlbench report --bayesian`` uses them).
"""

# %%
# Results of two methods
# ----------------------
# PML3ER against its control, ridge on the candidate labels, on three small datasets with
# three splits each.
import shutil
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from pmlbench.api import load_results, run
from pmlbench.stats.bayesian import bayesian_signed_rank, correlated_bayesian_ttest

workdir = Path(tempfile.mkdtemp(prefix="pmlbench-example-"))
shared = [
    f"results_store={workdir / 'store'}",
    f"cache_dir={workdir / 'cache'}",
    "protocol.n_splits=3",
]
datasets = ("genbase", "medical", "emotions")
for method in ("pml3er", "ridge"):
    for dataset in datasets:
        run(
            [f"method={method}", f"dataset={dataset}", *shared],
            workdir / "runs" / f"{method}-{dataset}",
        )
df = load_results(workdir / "runs")
ap = df[df["metric"] == "average_precision"]

# %%
# Per dataset: the correlated Bayesian t-test
# -------------------------------------------
# Over the matched splits of one dataset, corrected for the overlap of random train/test
# splits (rho = n_test / (n_test + n_train)). ROPE: 0.01 of average precision.
rows = []
for dataset in datasets:
    pair = ap[ap["dataset"] == dataset].pivot_table(index="split", columns="method", values="value")
    sizes = ap[ap["dataset"] == dataset].iloc[0]
    result = correlated_bayesian_ttest(
        pair["pml3er"], pair["ridge"], sizes["n_train"], sizes["n_test"], rope=0.01
    )
    rows.append((dataset, result.p_a_better, result.p_equivalent, result.p_b_better))
    print(
        f"{dataset:9s} P(pml3er better) = {result.p_a_better:.3f}, "
        f"P(equivalent) = {result.p_equivalent:.3f}, P(ridge better) = {result.p_b_better:.3f}"
    )

# %%
# Across datasets: the Bayesian signed-rank test
# ----------------------------------------------
# On the per-dataset means, one pair per dataset (three here; the leaderboard has nineteen).
means = ap.groupby(["dataset", "method"])["value"].mean().unstack("method")
across = bayesian_signed_rank(means["pml3er"], means["ridge"], rope=0.01, seed=0)
print(
    f"across datasets: P(pml3er better) = {across.p_a_better:.3f}, P(equivalent) = "
    f"{across.p_equivalent:.3f}, P(ridge better) = {across.p_b_better:.3f}"
)
rows.append(("across", across.p_a_better, across.p_equivalent, across.p_b_better))

# %%
# The three probabilities as a figure
# -----------------------------------
labels = [r[0] for r in rows]
probabilities = np.array([r[1:] for r in rows])
fig, ax = plt.subplots(figsize=(6, 2.8))
left = np.zeros(len(rows))
for column, (name, colour) in enumerate(
    [
        ("pml3er better", "tab:blue"),
        ("equivalent (ROPE 0.01)", "tab:gray"),
        ("ridge better", "tab:orange"),
    ]
):
    ax.barh(labels, probabilities[:, column], left=left, color=colour, label=name)
    left += probabilities[:, column]
ax.set_xlim(0, 1)
ax.set_xlabel("posterior probability (average precision)")
ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=3, fontsize="small")
fig.tight_layout()

shutil.rmtree(workdir)
