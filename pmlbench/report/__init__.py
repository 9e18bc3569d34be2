"""Publication-ready reports from result directories (``pmlbench report``).

:func:`build_report` reads every results.csv under the given directories and computes the
paper's Table 2 (mean ± std per PML dataset and method), Table 3 (win/tie/loss of a
reference method) and tests across datasets; :func:`write_report` writes them as Markdown,
LaTeX (booktabs) and CSV with figures and a plain-language summary.
"""

from pmlbench.report.build import build_report, print_report, summary_markdown, write_report
from pmlbench.report.model import Report, ReportOptions
from pmlbench.report.prepare import Prepared, prepare
from pmlbench.report.sources import LoadedResults, load_results

__all__ = [
    "LoadedResults",
    "Prepared",
    "Report",
    "ReportOptions",
    "build_report",
    "load_results",
    "prepare",
    "print_report",
    "summary_markdown",
    "write_report",
]
