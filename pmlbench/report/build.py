"""Building a report from result directories and writing it: the API behind
``pmlbench report``.

:func:`build_report` reads the results and fills a :class:`~pmlbench.report.model.Report`;
:func:`write_report` writes every file of it (each table module renders its own tables,
:mod:`pmlbench.report.html` the page, :mod:`pmlbench.report.figures` the figures);
:func:`print_report` shows it in the terminal.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
from rich.console import Console

from pmlbench.core.atomic import atomic_write, atomic_write_text
from pmlbench.core.safe_text import csv_frame
from pmlbench.errors import PmlbenchError
from pmlbench.report import bayes as bayes_tables
from pmlbench.report import disambiguation as disambiguation_tables
from pmlbench.report import html as html_page
from pmlbench.report import pairwise as pairwise_tables
from pmlbench.report import plots, summary, table2, wtl_table
from pmlbench.report.across import (
    friedman_frame,
    iman_davenport_text,
    rank_definition,
    rank_tests,
    ranks_frame,
    wilcoxon_tests,
)
from pmlbench.report.figures import (
    CAPTIONS,
    captions_markdown,
    draw_figures,
    figure_captions,
    posthoc_name,
)
from pmlbench.report.model import Report, ReportOptions
from pmlbench.report.outdir import replace_previous, subfolder
from pmlbench.report.prepare import filter_noting_dropped_methods, prepare
from pmlbench.report.render import markdown_escape, markdown_table, metric_name
from pmlbench.report.sources import load_results
from pmlbench.report.unfinished import (
    STATUS_NOT_APPLICABLE,
    declined_cells,
    place_unfinished,
    unfinished_where,
)
from pmlbench.runner.status import Status
from pmlbench.stats.bayesian import DEFAULT_THRESHOLD
from pmlbench.stats.wtl import UNTESTED, Comparisons, compare_with_reference, win_tie_loss

PARQUET_FILE = "results.parquet"
PLOTS_DIR = "plots"  # the figures' folder inside --out
MISSING_PYARROW = "--format parquet needs pyarrow: pip install 'pmlbench[parquet]'"


STATUS_VALUES = frozenset(s.value for s in Status)


def _unfinished_warnings(failures: pd.DataFrame, placed: pd.DataFrame) -> list[str]:
    """One line per failed or timed-out unit. Units their method declined up front (not
    applicable) are by design, not faults: one line per method, dataset and reason, with
    its noise levels and splits (a suite declines hundreds; a line each would bury the
    failures). Declined units that cannot be placed (no dataset or method) get a line each."""
    lines = []
    for row in failures.to_dict("records"):
        status = row.get("status")
        if status != STATUS_NOT_APPLICABLE:
            label = Status(status).label if status in STATUS_VALUES else Status.FAILED.label
            lines.append(f"{label}: {row['unit']}: {row['error']} ({row['path']})")
    declined = placed[placed["status"] == STATUS_NOT_APPLICABLE]
    grouped = declined.dropna(subset=["dataset", "level", "method"])
    for (method, dataset, reason), rows in grouped.groupby(
        ["method", "dataset", "error"], sort=True
    ):
        levels = ", ".join(sorted(set(rows["level"])))
        splits = ", ".join(str(int(s)) for s in sorted(set(rows["split"].dropna())))
        units = f"{len(rows)} unit" + ("s" if len(rows) > 1 else "")
        lines.append(
            f"not applicable: {method} on {dataset} ({levels}), {units} (splits {splits}): {reason}"
        )
    for row in declined.drop(grouped.index).itertuples():
        lines.append(f"not applicable: {row.unit}: {row.error} ({row.file})")
    return lines


def _unmatched_warnings(
    comparisons: Comparisons, declined: frozenset[tuple[str, str, str]]
) -> list[str]:
    """Splits left out of the paired tests, except where the reason is that one of the two
    methods declined the dataset (listed once as not applicable instead)."""

    def declined_by_either(baseline: str, dataset: str, level: str) -> bool:
        return any((m, dataset, level) in declined for m in (baseline, comparisons.reference))

    lines = []
    unmatched = comparisons.unmatched
    for (baseline, dataset, level, only), rows in unmatched.groupby(
        ["baseline", "dataset", "level", "only_in"], sort=False
    ):
        if declined_by_either(baseline, dataset, level):
            continue
        pairs = sorted(set(zip(rows["seed"], rows["split"], strict=True)))
        shown = ", ".join(f"seed {s} split {p}" for s, p in pairs[:6])
        more = f" and {len(pairs) - 6} more" if len(pairs) > 6 else ""
        metrics = rows["metric"].nunique()
        lines.append(
            f"{comparisons.reference} vs {baseline} on {dataset} ({level}): "
            f"{len(pairs)} splits only in {only} ({shown}{more}; {metrics} metrics); "
            "left out of the paired test, see unmatched.csv"
        )
    untested = comparisons.comparisons[comparisons.comparisons["outcome"] == UNTESTED]
    for (baseline, dataset, level), rows in untested.groupby(
        ["baseline", "dataset", "level"], sort=False
    ):
        if declined_by_either(baseline, dataset, level):
            continue
        lines.append(
            f"{comparisons.reference} vs {baseline} on {dataset} ({level}): fewer than "
            f"2 matched splits for {len(rows)} metrics; not tested and not counted in "
            "win/tie/loss"
        )
    return lines


def build_report(paths: Iterable[str | Path], options: ReportOptions | None = None) -> Report:
    """Read results under ``paths`` and compute tables and tests (nothing is written)."""
    options = options or ReportOptions()
    if "parquet" in options.formats and not have_pyarrow():
        raise PmlbenchError(MISSING_PYARROW)
    loaded = load_results(paths)
    # filtered once, here: the provenance counts only what the report shows
    kept, where_notes = filter_noting_dropped_methods(loaded.records, options.where)
    loaded = replace(
        loaded, records=kept, failures=unfinished_where(loaded.failures, options.where)
    )
    prepared = prepare(loaded.records, metrics=options.metrics, reference=options.reference)
    notes, warnings = [*where_notes, *prepared.notes], []
    placed = place_unfinished(prepared, loaded.failures)
    if options.plots and not plots.have_matplotlib():
        warnings.append(plots.MISSING_MATPLOTLIB)
    comparisons = wtl = wilcoxon = None
    reference = prepared.methods[0] if options.reference is not None else None
    if reference is not None:
        if len(prepared.methods) < 2:
            raise PmlbenchError(f"only {reference} has results; win/tie/loss needs other methods")
        comparisons = compare_with_reference(
            prepared.records,
            reference,
            prepared.directions,
            test=options.test,
            alpha=options.alpha,
            correction=options.correction,
            baselines=prepared.methods[1:],
        )
        wtl = win_tie_loss(comparisons.comparisons, prepared.metrics)
        warnings += _unmatched_warnings(comparisons, declined_cells(placed))
        wilcoxon = wilcoxon_tests(
            prepared, reference, options.alpha, options.correction, options.blocks
        )
    bayes = None
    if options.bayesian and reference is not None:
        bayes = bayes_tables.bayesian_results(
            prepared, reference, options.rope, DEFAULT_THRESHOLD, blocks=options.blocks
        )
    hierarchical = None
    if options.hierarchical and reference is not None:
        from pmlbench.report.hierarchical import hierarchical_tests

        hierarchical = hierarchical_tests(
            prepared, reference, options.rope, DEFAULT_THRESHOLD, options.blocks, notes
        )
    ranks = rank_tests(prepared, options.alpha, reference, notes, options.blocks)
    pairwise = pairwise_tables.pairwise_tests(prepared, options.blocks, options.alpha)
    pairwise_levels = (
        pairwise_tables.pairwise_by_level(prepared, options.alpha)
        if options.pairwise_by_level
        else None
    )
    warnings += _unfinished_warnings(loaded.failures, placed)
    for run_dir in loaded.incomplete:
        warnings.append(f"incomplete run (no results.csv): {run_dir}")
    return Report(
        options,
        loaded,
        prepared,
        table2.summarise(prepared, options.digits),
        comparisons,
        wtl,
        ranks,
        wilcoxon,
        notes,
        warnings,
        bayes,
        placed,
        pairwise,
        pairwise_levels,
        disambiguation_tables.disambiguation_frame(prepared),
        hierarchical,
    )


def have_pyarrow() -> bool:
    """Whether pyarrow (the ``parquet`` extra) can be imported."""
    try:
        return importlib.util.find_spec("pyarrow") is not None
    except (ImportError, ValueError):
        return False


def stats_markdown(report: Report) -> str:
    """Friedman, post-hoc and Wilcoxon results as Markdown."""
    alpha, reference = report.options.alpha, report.comparisons and report.comparisons.reference
    blocks = pairwise_tables.BLOCK_LABELS[report.options.blocks]
    nemenyi = report.options.posthoc == "nemenyi"
    parts = [
        "# Tests across datasets\n\n",
        f"One block per {blocks}; the Friedman test ranks the blocks where every method has "
        "a result, ranks follow each metric's direction. "
        f"{rank_definition(report.options.blocks)} alpha = {alpha:g}. Every pair of "
        f"methods: pairwise.md and pairwise.csv ({pairwise_tables.TEST_NAME}); the diagrams' "
        f"bars: {posthoc_name(report.options.posthoc)}.\n",
    ]
    for metric, r in report.ranks.items():
        f = r.friedman
        cd = (
            f"; Nemenyi CD = {r.critical_difference:.3f} (depends on the pool of methods ranked)"
            if nemenyi
            else ""
        )
        parts.append(
            f"\n## {markdown_escape(metric_name(metric))}\n\n"
            f"Friedman chi2_F = {f.chi2:.3f} (p = {f.pvalue:.3g}), {iman_davenport_text(f)} "
            f"(p = {f.f_pvalue:.3g}); k = {f.k} methods, N = {f.n_blocks} blocks{cd}."
            "\n\n"
        )
        order = sorted(zip(f.average_ranks, f.methods, strict=True))
        parts.append(
            markdown_table(
                ["method", "average rank"],
                [[markdown_escape(m), f"{rank:.3f}"] for rank, m in order],
                ["l", "r"],
            )
        )
        significant = r.pairwise[r.pairwise["significant_nemenyi"] | r.pairwise["significant_holm"]]
        if len(significant):
            parts.append(
                "\nSignificantly different pairs:\n\n"
                + markdown_table(
                    ["method", "method", "rank difference", "p (Nemenyi)", "p (Holm)"],
                    [
                        [
                            markdown_escape(s.method_a),
                            markdown_escape(s.method_b),
                            f"{abs(s.rank_a - s.rank_b):.3f}",
                            f"{s.p_nemenyi:.3g}",
                            f"{s.p_holm:.3g}",
                        ]
                        for s in significant.itertuples(index=False)
                    ],
                    ["l", "l", "r", "r", "r"],
                )
            )
        if r.control is not None:
            parts.append(
                f"\nHolm post-hoc against {markdown_escape(str(reference))}:\n\n"
                + markdown_table(
                    ["method", "average rank", "z", "p", "p (Holm)", "significant"],
                    [
                        [
                            markdown_escape(c.method),
                            f"{c.rank:.3f}",
                            f"{c.z:.3f}",
                            f"{c.p:.3g}",
                            f"{c.p_holm:.3g}",
                            "yes" if c.significant_holm else "no",
                        ]
                        for c in r.control.itertuples(index=False)
                    ],
                    ["l", "r", "r", "r", "r", "l"],
                )
            )
    if report.wilcoxon is not None and len(report.wilcoxon):
        parts.append(
            f"\n## Wilcoxon signed-rank test of {markdown_escape(str(reference))} across "
            "datasets\n\n"
        )
        parts.append(
            markdown_table(
                [
                    "vs",
                    "metric",
                    "datasets",
                    "reference better",
                    "baseline better",
                    "p",
                    "p adjusted",
                    "outcome",
                ],
                [
                    [
                        markdown_escape(w.baseline),
                        markdown_escape(metric_name(w.metric)),
                        str(w.n_datasets),
                        str(w.reference_better),
                        str(w.baseline_better),
                        f"{w.pvalue:.3g}",
                        f"{w.p_adjusted:.3g}",
                        w.outcome,
                    ]
                    for w in report.wilcoxon.itertuples(index=False)
                ],
                ["l", "l", "r", "r", "r", "r", "r", "l"],
            )
        )
    return "".join(parts)


def summary_markdown(report: Report) -> str:
    """The plain-language summary."""
    p, options = report.prepared, report.options
    lines = [
        "# Summary\n",
        f"{len(report.loaded.files)} result files; {p.records['dataset'].nunique()} "
        f"datasets, {len(p.blocks)} PML datasets (dataset x noise level), "
        f"{len(p.methods)} methods ({', '.join(markdown_escape(m) for m in p.methods)}), "
        f"metrics: {', '.join(markdown_escape(metric_name(m)) for m in p.metrics)}.",
    ]
    if report.comparisons is not None:
        lines.append("\n## Win/tie/loss per PML dataset")
        lines += summary.wtl_sentences(report.comparisons, p.metrics)
    else:
        lines.append("\nNo reference method given: pass --reference METHOD for win/tie/loss.")
    reference = report.comparisons.reference if report.comparisons is not None else None
    if report.ranks:
        lines.append("\n## Ranks across datasets\n")
        lines += summary.rank_sentences(
            report.ranks, options.alpha, options.posthoc, reference, report.pairwise
        )
    if report.wilcoxon is not None and len(report.wilcoxon) and reference is not None:
        lines.append("")
        lines += summary.wilcoxon_sentences(report.wilcoxon, reference, options.alpha)
    if report.bayes is not None:
        lines.append("\n## Bayesian comparisons\n")
        lines += summary.bayesian_sentences(report.bayes)
    if report.warnings or report.notes:
        lines.append("\n## Warnings and notes\n")
        lines += [f"- {markdown_escape(w)}" for w in [*report.warnings, *report.notes]]
    return "\n".join(lines) + "\n"


def _write_csv(frame: pd.DataFrame, path: Path) -> Path:
    """A table as CSV, its text cells safe for a spreadsheet (pmlbench.core.safe_text.csv_cell:
    hidden characters escaped, no cell run as a formula)."""
    atomic_write_text(path, csv_frame(frame).to_csv(index=False))
    return path


def _write_text(text: str, path: Path) -> Path:
    atomic_write_text(path, text)
    return path


def write_report(report: Report, out_dir: str | Path) -> list[Path]:
    """Write tables, test results, the summary and figures into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    p, digits = report.prepared, report.options.digits
    written = [
        _write_text(
            table2.to_markdown(p, report.table2, digits, report.declined), out / "table2.md"
        ),
        _write_text(table2.to_latex(p, report.table2, digits, report.declined), out / "table2.tex"),
        _write_csv(report.table2, out / "table2.csv"),
    ]
    if report.comparisons is not None:
        written += [
            _write_text(
                wtl_table.to_markdown(report.wtl, report.comparisons, p, digits), out / "wtl.md"
            ),
            _write_text(wtl_table.to_latex(report.wtl, report.comparisons), out / "wtl.tex"),
            _write_csv(report.wtl, out / "wtl.csv"),
            _write_csv(report.comparisons.comparisons, out / "comparisons.csv"),
            _write_csv(report.comparisons.unmatched, out / "unmatched.csv"),
            _write_csv(report.wilcoxon, out / "wilcoxon.csv"),
        ]
    if report.pairwise is not None:
        written += [
            _write_csv(report.pairwise, out / "pairwise.csv"),
            _write_text(
                pairwise_tables.to_markdown(report.pairwise, p, report.options.alpha, digits),
                out / "pairwise.md",
            ),
        ]
    if report.pairwise_levels is not None:
        written += [
            _write_csv(report.pairwise_levels, out / "pairwise_by_level.csv"),
            _write_text(
                pairwise_tables.by_level_markdown(
                    report.pairwise_levels, p, report.options.alpha, digits
                ),
                out / "pairwise_by_level.md",
            ),
        ]
    if report.disambiguation is not None and len(report.disambiguation):
        written += [
            _write_csv(report.disambiguation, out / "disambiguation.csv"),
            _write_text(
                disambiguation_tables.to_markdown(report.disambiguation, digits, report.declined),
                out / "disambiguation.md",
            ),
        ]
    if report.hierarchical is not None and report.bayes is not None:
        from pmlbench.report import hierarchical as hierarchical_tables

        written += [
            _write_csv(report.hierarchical, out / "bayes_hierarchical.csv"),
            _write_text(
                hierarchical_tables.to_markdown(
                    report.hierarchical, report.bayes.reference, report.bayes.threshold
                ),
                out / "bayes_hierarchical.md",
            ),
        ]
    if report.bayes is not None:
        b = report.bayes
        written += [
            _write_text(bayes_tables.to_markdown(b, p, digits), out / "bayes.md"),
            _write_text(bayes_tables.to_latex(b, p, digits), out / "bayes.tex"),
            _write_csv(b.per_dataset, out / "bayes.csv"),
            _write_csv(b.across, out / "bayes_across.csv"),
            _write_text(bayes_tables.wtl_markdown(b), out / "bayes_wtl.md"),
            _write_text(bayes_tables.wtl_latex(b), out / "bayes_wtl.tex"),
            _write_csv(b.wtl, out / "bayes_wtl.csv"),
        ]
    if "parquet" in report.options.formats:
        written.append(write_parquet(p.records, out / PARQUET_FILE))
    written += [
        _write_text(stats_markdown(report), out / "stats.md"),
        _write_csv(ranks_frame(report.ranks), out / "ranks.csv"),
        _write_csv(friedman_frame(report.ranks, report.options.alpha), out / "friedman.csv"),
        _write_csv(
            pd.concat(
                [r.pairwise.assign(metric=m) for m, r in report.ranks.items()], ignore_index=True
            )
            if report.ranks
            else pd.DataFrame(),
            out / "posthoc.csv",
        ),
        _write_csv(report.loaded.failures, out / "failures.csv"),
        _write_text(summary_markdown(report), out / "summary.md"),
    ]
    draw = report.options.plots and plots.have_matplotlib()
    figures = draw_figures(report, subfolder(out, PLOTS_DIR)) if draw else []
    written += figures
    captions = figure_captions(report, figures)
    if captions:
        written.append(
            _write_text(captions_markdown(captions, figures), subfolder(out, PLOTS_DIR) / CAPTIONS)
        )
    if report.options.html:
        written.append(
            html_page.write_html(
                report,
                out / html_page.HTML_FILE,
                summary=summary_markdown(report),
                figures=figures,
                captions=captions,
            )
        )
    return replace_previous(out, written)  # an earlier report's other files go


def parquet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every column of one type, as parquet needs: a text column holding
    some numbers (results of methods whose parameter has different types) becomes text,
    a column of Python numbers becomes numeric."""
    frame = frame.copy()
    for column in frame.columns:
        if frame[column].dtype != object:
            continue
        present = frame[column].dropna()
        kinds = {type(v) for v in present}
        if len(kinds) <= 1:
            continue
        if all(issubclass(k, (int, float, np.number)) and k is not bool for k in kinds):
            frame[column] = pd.to_numeric(frame[column])
        else:
            frame[column] = frame[column].map(lambda v: v if pd.isna(v) else str(v))
    return frame


def write_parquet(records: pd.DataFrame, path: Path) -> Path:
    """The report's records as parquet (pyarrow), written atomically."""
    if not have_pyarrow():
        raise PmlbenchError(MISSING_PYARROW)
    frame = parquet_safe(records)
    return atomic_write(path, lambda p: frame.to_parquet(p, engine="pyarrow", index=False))


def print_report(report: Report, console: Console | None = None) -> None:
    """Table 2, Table 3 and the summary in the terminal (rich)."""
    console = console or Console()
    for table in table2.to_rich(
        report.prepared,
        report.table2,
        report.options.digits,
        width=console.width,
        declined=report.declined,
    ):
        console.print(table)
    if report.comparisons is not None:
        for table in wtl_table.to_rich(report.wtl, report.comparisons, width=console.width):
            console.print(table)
    if report.pairwise is not None:
        for table in pairwise_tables.to_rich(
            report.pairwise, report.prepared, report.options.digits, width=console.width
        ):
            console.print(table)
    if report.bayes is not None:
        for table in bayes_tables.wtl_rich(report.bayes, width=console.width):
            console.print(table)
    console.print(summary_markdown(report), highlight=False, markup=False, soft_wrap=True)
