"""
Run one method
==============

One method on one bundled dataset under the paper's protocol: random 50/50 splits, uniform
candidate-label noise on the training half, the seven paper metrics on the test half. This
is ``python -m pmlbench method=mlknn dataset=genbase`` from Python, with two splits instead
of five to keep it short.
"""

# %%
# Run ML-kNN on genbase
# ---------------------
# :func:`pmlbench.api.run` takes the same ``key=value`` overrides as the command line and
# writes ``results.csv`` and ``run.json`` into the directory it is given.
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt

from pmlbench.api import load_results, run

workdir = Path(tempfile.mkdtemp(prefix="pmlbench-example-"))
run(
    [
        "method=mlknn",
        "dataset=genbase",
        "protocol.n_splits=2",
        f"results_store={workdir / 'store'}",
        f"cache_dir={workdir / 'cache'}",
    ],
    workdir / "run",
)

# %%
# The results are data
# --------------------
# One row per split and metric; :func:`pmlbench.api.load_results` reads them back as a
# pandas DataFrame.
results = load_results(workdir / "run")
summary = results.groupby("metric")["value"].agg(["mean", "std"]).round(3)
print(summary)

# %%
# A figure of the seven metrics
# -----------------------------
fig, ax = plt.subplots(figsize=(6, 3))
ax.barh(summary.index, summary["mean"], xerr=summary["std"], color="tab:blue")
ax.set_xlabel("mean over the splits (error bar: std)")
ax.set_title("ML-kNN on genbase, noise rate 1.0")
fig.tight_layout()

import shutil  # noqa: E402

shutil.rmtree(workdir)
