"""``pmlbench report DIR [DIR...]``: tables, statistics, figures and a summary from results.

Reads every results.csv under the given run or multirun directories and writes into
``--out``: table2.{md,tex,csv} (mean ± std per PML dataset and method), with ``--reference``
wtl.{md,tex,csv} (win/tie/loss, with the effect size of every comparison in wtl.md),
stats.md and CSVs of the tests across datasets, pairwise.{csv,md} (every pair of methods:
Wilcoxon signed-rank over datasets, Holm-corrected), disambiguation.{csv,md} (training-side
measures of methods that expose them), figures under plots/, summary.md and
report.html (one self-contained page with all of it). With ``--bayesian`` also
bayes.{md,tex,csv}, bayes_across.csv and bayes_wtl.{md,tex,csv} (Bayesian comparisons with a
region of practical equivalence); with ``--format parquet`` also results.parquet. With
``--leaderboard PATH`` also the leaderboard page: one Markdown file of every metric's table,
ranks, Friedman test, critical-difference diagram (SVG beside it) and win/tie/loss, with the
command and package versions that produced it (docs/report.md).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from pmlbench.cli.commands import plain
from pmlbench.core.console import print_message, print_warning
from pmlbench.errors import PmlbenchError
from pmlbench.report import ReportOptions, build_report, print_report, write_report
from pmlbench.report.model import FORMATS, POSTHOCS
from pmlbench.report.pairwise import BLOCKS
from pmlbench.stats.bayesian import DEFAULT_ROPE, DEFAULT_THRESHOLD
from pmlbench.stats.multiple import CORRECTIONS
from pmlbench.stats.paired import TESTS


def _where(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected COLUMN=VALUE, got {text!r}")
    return key, value


def _grouped(pairs: list[tuple[str, str]]) -> dict[str, list[str]]:
    """Repeated ``--where`` filters by column: values of one column keep rows with any."""
    grouped: dict[str, list[str]] = {}
    for column, value in pairs:
        grouped.setdefault(column, []).append(value)
    return grouped


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pmlbench report",
        description=plain(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "dirs",
        nargs="+",
        metavar="DIR",
        help="run or multirun directories (searched recursively for results.csv)",
    )
    p.add_argument("--out", default="report", help="output directory (default: ./report)")
    p.add_argument(
        "--reference",
        metavar="METHOD",
        help="method compared with every other one (win/tie/loss, Wilcoxon, Holm vs control)",
    )
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (0.05)")
    p.add_argument(
        "--test",
        choices=TESTS,
        default="ttest",
        help="per-dataset test: ttest = paired t-test (paper), corrected = "
        "Nadeau-Bengio corrected resampled t-test",
    )
    p.add_argument(
        "--correction",
        choices=CORRECTIONS,
        default="none",
        help="multiple-testing correction over all win/tie/loss tests (none)",
    )
    p.add_argument(
        "--posthoc",
        choices=POSTHOCS,
        default="wilcoxon",
        help="what joins methods in the CD diagrams and the summary: wilcoxon = pairwise "
        "Wilcoxon signed-rank tests over datasets, Holm-corrected (default); nemenyi, holm = "
        "mean-rank post-hoc tests after Friedman, whose verdicts depend on the pool of methods",
    )
    p.add_argument(
        "--blocks",
        choices=BLOCKS,
        default="dataset",
        help="one block of the tests across datasets (pairwise Wilcoxon, Friedman): dataset = "
        "the mean over its noise levels and splits (default), level = dataset x noise level",
    )
    p.add_argument(
        "--pairwise-by-level",
        action="store_true",
        help="also test every pair of methods at each noise level on its own "
        "(pairwise_by_level.{csv,md})",
    )
    p.add_argument(
        "--leaderboard-test",
        choices=TESTS,
        default="corrected",
        help="per-dataset test of the leaderboard's win/tie/loss: corrected = Nadeau-Bengio "
        "corrected resampled t-test (default), ttest = the paper's paired t-test",
    )
    p.add_argument(
        "--metrics",
        nargs="+",
        metavar="METRIC",
        help="metrics to report, in this order (default: all)",
    )
    p.add_argument(
        "--where",
        action="append",
        type=_where,
        default=[],
        metavar="COLUMN=VALUE",
        help="keep only rows with this value, e.g. convention=zhang; repeatable: filters on "
        "different columns all apply, several values of one column keep rows with any",
    )
    p.add_argument(
        "--sensitivity",
        nargs="+",
        metavar="PARAM",
        help="method parameters to draw sensitivity curves for (default: any "
        "parameter swept over >= 3 values at a fixed noise level)",
    )
    p.add_argument(
        "--bayesian",
        action="store_true",
        help="also compare the reference with every other method by Bayesian tests: the "
        "correlated Bayesian t-test per PML dataset, the Bayesian signed-rank test across "
        "them (bayes.md, bayes_wtl.md; needs --reference)",
    )
    p.add_argument(
        "--rope",
        type=float,
        default=DEFAULT_ROPE,
        metavar="WIDTH",
        help=f"half-width of the region of practical equivalence for --bayesian, on the "
        f"metric's scale ({DEFAULT_ROPE:g}: one point of a metric in [0, 1]); a win, tie or "
        f"loss needs posterior probability >= {DEFAULT_THRESHOLD:g}",
    )
    p.add_argument(
        "--hierarchical",
        action="store_true",
        help="with --bayesian: also the hierarchical Bayesian model over split-level results "
        "(bayes_hierarchical.{csv,md}; pip install 'pmlbench[hierarchical]')",
    )
    p.add_argument(
        "--format",
        dest="formats",
        action="append",
        choices=FORMATS,
        default=[],
        help="extra output (repeatable): parquet = the records the report used as "
        "results.parquet (pip install 'pmlbench[parquet]')",
    )
    p.add_argument(
        "--leaderboard",
        metavar="PATH",
        help="also write the leaderboard page to PATH (e.g. docs/leaderboard.md) and its "
        "critical-difference diagrams to the folder named after it (docs/leaderboard/)",
    )
    p.add_argument("--digits", type=int, default=3, help="decimals in the tables (3)")
    p.add_argument("--no-plots", action="store_true", help="skip figures (no matplotlib needed)")
    p.add_argument(
        "--html",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="write report.html, one self-contained interactive page (default: on)",
    )
    p.add_argument("--quiet", action="store_true", help="print only the written directory")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    options = ReportOptions(
        reference=args.reference,
        alpha=args.alpha,
        test=args.test,
        correction=args.correction,
        posthoc=args.posthoc,
        blocks=args.blocks,
        pairwise_by_level=args.pairwise_by_level,
        leaderboard_test=args.leaderboard_test,
        metrics=args.metrics,
        where=_grouped(args.where),
        plots=not args.no_plots,
        sensitivity=args.sensitivity,
        digits=args.digits,
        html=args.html,
        bayesian=args.bayesian,
        rope=args.rope,
        hierarchical=args.hierarchical,
        formats=tuple(dict.fromkeys(args.formats)),
    )
    report = build_report(args.dirs, options)
    console = Console()
    if not args.quiet:
        print_report(report, console)
    for line in report.warnings:
        print_warning(line)
    try:
        written = write_report(report, args.out)
    except OSError as exc:
        raise PmlbenchError(f"cannot write the report into {args.out}: {exc}") from None
    names = {Path(p).name: Path(p) for p in written}
    first = names.get("report.html", names.get("summary.md"))
    opened = f"; open {first}" if first is not None else ""
    print_message(f"wrote {len(written)} files into {args.out}{opened}")
    if args.leaderboard:
        from pmlbench.report.leaderboard import write_leaderboard

        try:
            pages = write_leaderboard(report, args.leaderboard, ["pmlbench", "report", *argv])
        except OSError as exc:
            raise PmlbenchError(f"cannot write the leaderboard {args.leaderboard}: {exc}") from None
        print_message(f"wrote the leaderboard {args.leaderboard} ({len(pages) - 1} figures)")
    return 0
