"""
Table 2 as LaTeX for a paper
============================

The report writes the paper's Table 2 (mean ± std over splits per dataset and method, the
best of each row in bold) as ``table2.tex`` beside ``table2.md`` and ``table2.csv``: a
booktabs table (``\\usepackage{booktabs}``) to ``\\input`` in a paper.
"""

# %%
# Results to tabulate
# -------------------
import shutil
import tempfile
from pathlib import Path

from pmlbench.api import run
from pmlbench.report import ReportOptions, build_report, write_report

workdir = Path(tempfile.mkdtemp(prefix="pmlbench-example-"))
shared = [
    f"results_store={workdir / 'store'}",
    f"cache_dir={workdir / 'cache'}",
    "protocol.n_splits=2",
]
for method in ("mlknn", "pml3er"):
    for dataset in ("genbase", "emotions"):
        run(
            [f"method={method}", f"dataset={dataset}", *shared],
            workdir / "runs" / f"{method}-{dataset}",
        )

# %%
# The report, two metrics
# -----------------------
# ``metrics`` keeps the table short; ``pmlbench report DIR --metrics average_precision
# hamming_loss`` does the same on the command line.
options = ReportOptions(metrics=["average_precision", "hamming_loss"], plots=False, html=False)
report = build_report([workdir / "runs"], options)
write_report(report, workdir / "report")

# %%
# table2.tex
# ----------
print((workdir / "report" / "table2.tex").read_text())

shutil.rmtree(workdir)
