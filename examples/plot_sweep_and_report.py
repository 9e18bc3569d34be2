r"""
Sweep and report
================

A sweep over methods and datasets, then ``pmlbench report``: the paper's Table 2, every pair
of methods by the Wilcoxon signed-rank test with Holm's correction (the pairwise matrix) and
the critical-difference diagram. This is the command line's

.. code-block:: sh

    python -m pmlbench -m method=mlknn,ridge,pml3er dataset=genbase,medical,emotions,yeast \
        protocol.n_splits=2
    pmlbench report outputs/multirun/<date>/<time> --reference pml3er

run from Python on four small bundled datasets with two splits each.
"""

# %%
# The sweep
# ---------
# :func:`pmlbench.cli.main.main` takes the command line's arguments; ``-m`` makes it a
# Hydra multirun, one job per method and dataset. Everything is written under a temporary
# directory: the sweep, the result store and the shared-work cache.
import shutil
import tempfile
from pathlib import Path

import matplotlib.image as mpimg
import matplotlib.pyplot as plt

from pmlbench.cli.main import main
from pmlbench.report import ReportOptions, build_report, write_report
from pmlbench.report.pairwise import matrix_markdown

workdir = Path(tempfile.mkdtemp(prefix="pmlbench-example-"))
status = main(
    [
        "-m",
        "method=mlknn,ridge,pml3er",
        "dataset=genbase,medical,emotions,yeast",
        "protocol.n_splits=2",
        "quiet=true",
        f"hydra.sweep.dir={workdir / 'sweep'}",
        f"results_store={workdir / 'store'}",
        f"cache_dir={workdir / 'cache'}",
    ]
)
assert status == 0

# %%
# The report
# ----------
# :func:`pmlbench.report.build_report` computes every table and test as data;
# :func:`pmlbench.report.write_report` writes them (Markdown, LaTeX, CSV, figures) as
# ``pmlbench report`` does.
report = build_report([workdir / "sweep"], ReportOptions(reference="pml3er"))
written = write_report(report, workdir / "report")
table2 = (workdir / "report" / "table2.md").read_text()
print("## average precision" + table2.split("## average precision")[1].split("\n## ")[0])

# %%
# Every pair of methods
# ---------------------
# The Wilcoxon signed-rank test over the datasets for each pair, Holm-corrected across the
# pairs of a metric: the matrix the terminal and report.html show (with four datasets no
# pair can be significant at 0.05; the suite's leaderboard has nineteen).
print(matrix_markdown(report.pairwise, "average_precision", higher=True))

# %%
# The critical-difference diagram
# -------------------------------
# Methods on the axis of their average rank over the datasets (best to the left); a bar
# joins methods the pairwise tests do not tell apart. The report writes it as SVG, PDF and
# PNG into ``plots/``.
diagram = workdir / "report" / "plots" / "cd_average_precision.png"
fig, ax = plt.subplots(figsize=(8, 3))
ax.imshow(mpimg.imread(diagram))
ax.set_axis_off()
fig.tight_layout()

shutil.rmtree(workdir)
