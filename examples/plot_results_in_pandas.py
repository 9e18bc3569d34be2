"""
Results in pandas, and your own figure
======================================

Every run writes ``results.csv``, one row per split and metric; the result store holds the
same rows for every unit it ever computed. :func:`pmlbench.api.load_results` reads run
directories, sweep directories and stores into one tidy pandas DataFrame, from which any
figure is a few lines.
"""

# %%
# Results at three noise levels
# -----------------------------
# Two methods on genbase at candidate-noise rates 0.5, 1 and 2 (two splits each). The runs
# share one shared-work cache in a temporary directory.
import shutil
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt

from pmlbench.api import load_results, run

workdir = Path(tempfile.mkdtemp(prefix="pmlbench-example-"))
shared = [
    f"results_store={workdir / 'store'}",
    f"cache_dir={workdir / 'cache'}",
    "protocol.n_splits=2",
]
for method in ("mlknn", "pml3er"):
    for rate in (0.5, 1.0, 2.0):
        run(
            [f"method={method}", "dataset=genbase", f"noise.rate={rate}", *shared],
            workdir / "runs" / f"{method}-{rate}",
        )

# %%
# One DataFrame
# -------------
# ``load_results`` searches the directory for the runs' results.csv files; a sweep
# directory or a result store reads the same way.
df = load_results(workdir / "runs")
print(df.shape)
print(df[["dataset", "noise_rate", "method", "split", "metric", "value"]].head(8))

# %%
# A figure: average precision against the noise rate
# ---------------------------------------------------
ap = df[df["metric"] == "average_precision"]
means = ap.groupby(["method", "noise_rate"])["value"].agg(["mean", "std"]).reset_index()
fig, ax = plt.subplots(figsize=(5, 3.2))
for method, rows in means.groupby("method"):
    ax.errorbar(
        rows["noise_rate"], rows["mean"], yerr=rows["std"], marker="o", capsize=3, label=method
    )
ax.set_xlabel("candidate-noise rate (wrong candidates per true label)")
ax.set_ylabel("average precision")
ax.set_title("genbase, two splits per point")
ax.legend()
fig.tight_layout()

shutil.rmtree(workdir)
