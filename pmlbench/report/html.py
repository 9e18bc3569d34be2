"""The report as one self-contained HTML page (``report.html``).

The page opens from disk with no network: its CSS and JavaScript are inlined from the
package data under ``pmlbench/report/assets/``, figures are embedded as ``data:`` URIs, and
the numbers are embedded once as JSON from which a small dependency-free script builds the
tables (sortable by any column, filtered by metric, dataset, noise level and method, cells
switchable between mean ± std and rank). The cell texts come from the table modules'
public cells functions (table2, wtl_table, bayes), the ones that write table2.md and wtl.md,
so the page shows the numbers of table2.csv and wtl.csv.

Nothing is computed here that the report has not computed already, except the rank of
each method within a Table 2 row (for the rank view). The provenance is read by
:mod:`pmlbench.report.provenance`, the summary converted by
:mod:`pmlbench.report.markdown_html`.
"""

from __future__ import annotations

import base64
import html
import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from pmlbench import __version__
from pmlbench.core.atomic import atomic_write_text
from pmlbench.core.safe_text import visible
from pmlbench.report import bayes as bayes_tables
from pmlbench.report import disambiguation as disambiguation_tables
from pmlbench.report import pairwise as pairwise_tables
from pmlbench.report import table2 as table2_tables
from pmlbench.report import wtl_table
from pmlbench.report.across import rank_definition
from pmlbench.report.figures import posthoc_name
from pmlbench.report.markdown_html import markdown_html
from pmlbench.report.model import Report
from pmlbench.report.provenance import Provenance, provenance
from pmlbench.report.render import metric_name
from pmlbench.runner.format import RESULTS_FILE
from pmlbench.runner.status import Status
from pmlbench.stats.ranks import merge_near_ties
from pmlbench.stats.wtl import OUTCOMES

HTML_FILE = "report.html"
ASSETS = ("report.html", "report.css", "report.js")
# figure kinds, in page order: file-name prefix -> (heading, caption prefix)
FIGURE_KINDS = {
    "cd": ("Critical-difference diagrams", "Critical-difference diagram"),
    "noise": ("Metric versus noise", "Metric versus noise level"),
    "sensitivity": ("Parameter sensitivity", "Sensitivity"),
}


def asset(name: str) -> str:
    """The text of a page asset shipped in the package (``pmlbench/report/assets``)."""
    folder = resources.files("pmlbench.report") / "assets"
    return (folder / name).read_text(encoding="utf-8")


def write_html(
    report: Report,
    path: str | Path,
    *,
    summary: str,
    figures: Sequence[Path] = (),
    command: Sequence[str] | None = None,
    captions: Mapping[str, str] | None = None,
) -> Path:
    """Write ``report.html`` (atomically) and return its path; see :func:`render_html`."""
    path = Path(path)
    page = render_html(report, summary=summary, figures=figures, command=command, captions=captions)
    atomic_write_text(path, page)
    return path


def render_html(
    report: Report,
    *,
    summary: str,
    figures: Sequence[Path] = (),
    command: Sequence[str] | None = None,
    captions: Mapping[str, str] | None = None,
) -> str:
    """The page's text.

    Args:
        report: the computed report (tables, comparisons, ranks, loaded inputs).
        summary: the plain-language summary (Markdown, as summary.md).
        figures: figure files written by the report (SVG preferred over PNG of the same name).
        command: the command line that made the report (default: ``sys.argv``).
        captions: caption by figure file stem (the figures carry no title).
    """
    data = page_data(report, command)
    p = report.prepared
    n_units = len(data["units"])
    title = f"pmlbench report: {len(p.methods)} methods on {len(p.blocks)} PML datasets"
    reference = report.comparisons.reference if report.comparisons is not None else None
    subtitle = " · ".join(
        [
            f"{len(p.methods)} methods",
            f"{p.records['dataset'].nunique()} datasets",
            f"{len(p.blocks)} PML datasets (dataset × noise level)",
            f"{len(p.metrics)} metrics",
            *([f"reference {reference}"] if reference else []),
            f"generated {data['prov']['generated']}",
        ]
    )
    cards = [
        (len(p.methods), "methods", ""),
        (len(p.blocks), "PML datasets", ""),
        (len(p.metrics), "metrics", ""),
        (f"{len(p.records):,}", "result rows", ""),
        (n_units, "units not finished", "warn" if n_units else "ok"),
    ]
    links = {"units not finished": "#units-section", "PML datasets": "#results"}
    sections = [
        ("summary", "Summary", _summary_section(summary)),
        ("results", "Results", _results_section()),
        ("wtl-section", "Win/tie/loss", _wtl_section(report)),
    ]
    if report.bayes is not None:
        sections.append(("bayes-section", "Bayesian", _bayes_section(report)))
    sections += [
        ("ranks-section", "Ranks", _ranks_section(report)),
    ]
    if report.pairwise is not None:
        body = pairwise_tables.to_html(
            report.pairwise, p, report.options.alpha, report.options.digits
        )
        sections.append(
            ("pairwise-section", "Pairwise", _section("pairwise-section", "Pairwise", "", body))
        )
    if report.disambiguation is not None:
        body = disambiguation_tables.to_html(
            report.disambiguation, report.options.digits, report.declined
        )
        sections.append(
            (
                "disambiguation-section",
                "Disambiguation",
                _section("disambiguation-section", "Disambiguation (training part)", "", body),
            )
        )
    figure_html = _figures_section(figures, p.metrics, captions or {})
    if figure_html:
        sections.append(("figures", "Figures", figure_html))
    sections += [
        ("units-section", "Not finished", _units_section(data["units"])),
        ("provenance", "Provenance", _provenance_section(data["prov"], report)),
    ]
    parts = {
        "version": _e(__version__),
        "title": _e(title),
        "heading": _e(
            f"{', '.join(p.methods[:6])}{' …' if len(p.methods) > 6 else ''} "
            f"on {len(p.blocks)} PML datasets"
        ),
        "subtitle": _e(subtitle),
        "cards": "".join(_card(n, label, cls, links.get(label)) for n, label, cls in cards),
        "links": "".join(f'<a href="#{anchor}">{_e(name)}</a>' for anchor, name, _ in sections),
        "sections": "\n".join(body for _, _, body in sections),
        "footer": _e(f"Written by pmlbench {__version__} on {data['prov']['generated']}."),
        "css": asset("report.css"),
        "js": asset("report.js"),
        "data": _json_for_script(data),
    }
    # one pass, so that text inserted for one placeholder is never scanned for another
    return re.sub(r"\{\{(\w+)\}\}", lambda m: parts[m.group(1)], asset("report.html"))


def _card(number: Any, label: str, cls: str, href: str | None) -> str:
    inner = f'<span class="n">{_e(number)}</span><span class="l">{_e(label)}</span>'
    if href:
        return f'<a class="card {cls}" href="{href}">{inner}</a>'
    return f'<div class="card {cls}">{inner}</div>'


def _e(value: Any) -> str:
    """Text for HTML: hidden characters (controls, bidirectional and other format
    characters: pmlbench.core.safe_text.visible) shown as escapes (a U+202E in a command
    line must not reverse what the page shows), then HTML-escaped."""
    return html.escape(visible(str(value), keep_newlines=True), quote=True)


def _shown_strings(value: Any) -> Any:
    """``value`` with pmlbench.core.safe_text.visible applied to every string in it, keys
    included (the page's script writes these strings into the page)."""
    if isinstance(value, str):
        return visible(value, keep_newlines=True)
    if isinstance(value, dict):
        return {_shown_strings(k): _shown_strings(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_shown_strings(v) for v in value]
    return value


def _json_for_script(data: dict[str, Any]) -> str:
    """JSON that cannot end its <script> element early (``</`` becomes ``<\\/``), its strings
    free of control and bidirectional characters (:func:`_shown_strings`)."""
    text = json.dumps(
        _shown_strings(data), ensure_ascii=False, allow_nan=False, separators=(",", ":")
    )
    return text.replace("</", "<\\/").replace("<!--", "<\\!--")


def _number(value: Any) -> float | None:
    """A finite float, or None (JSON has no NaN or infinity)."""
    if value is None:
        return None
    value = float(value)
    return value if np.isfinite(value) else None


def _pvalue(value: Any) -> str:
    number = _number(value)
    return "–" if number is None else f"{number:.3g}"


# ---------------------------------------------------------------------------- data


def page_data(report: Report, command: Sequence[str] | None = None) -> dict[str, Any]:
    """Everything the page's script renders, as JSON-ready lists (indices into the axes)."""
    p = report.prepared
    metrics = {m: i for i, m in enumerate(p.metrics)}
    methods = {m: i for i, m in enumerate(p.methods)}
    blocks = {b: i for i, b in enumerate(p.blocks)}
    datasets = list(dict.fromkeys(d for d, _ in p.blocks))
    levels = _level_order(p.blocks)
    data: dict[str, Any] = {
        "digits": report.options.digits,
        "reference": report.comparisons.reference if report.comparisons is not None else None,
        "metrics": [[m, metric_name(m), bool(p.directions[m])] for m in p.metrics],
        "methods": list(p.methods),
        "datasets": datasets,
        "levels": levels,
        "blocks": [[datasets.index(d), levels.index(level)] for d, level in p.blocks],
        "t2": _table2_cells(report, metrics, methods, blocks),
        "na": sorted(
            [blocks[(dataset, level)], methods[method]]
            for method, dataset, level in report.declined
            if method in methods and (dataset, level) in blocks
        ),
        "cmp": [],
        "wtl": None,
        "eff": None,
        "bayes": None,
        "ranks": _ranks(report, metrics, methods),
        "rankUnit": "datasets" if report.options.blocks == "dataset" else "dataset x noise levels",
        "units": unit_rows(report),
        "prov": provenance(report.loaded, command),
    }
    if report.comparisons is not None and report.wtl is not None:
        data["cmp"] = _comparisons(report, metrics, methods, blocks)
        data["wtl"] = {
            "test": wtl_table.describe_test(report.comparisons),
            **_wtl_counts(wtl_table.grid(report.wtl), metrics, methods),
        }
        data["eff"] = _effect_sizes(report, metrics, methods, blocks)
    if report.bayes is not None:
        data["bayes"] = _bayes(report, metrics, methods, blocks)
    return data


def _wtl_counts(
    grid: wtl_table.Grid,
    metrics: Mapping[str, int],
    methods: Mapping[str, int],
    rows: str = "rows",
) -> dict[str, list[Any]]:
    """A win/tie/loss grid as the page's script reads it: the baselines (method indices) and,
    under ``rows``, [baseline, metric (-1: total), count...] per cell of a metric shown."""
    return {
        "baselines": [methods[b] for b in grid.baselines],
        rows: [
            [methods[baseline], -1 if metric == "total" else metrics[metric], *counts]
            for (baseline, metric), counts in grid.counts.items()
            if metric == "total" or metric in metrics
        ],
    }


def _effect_sizes(report: Report, metrics, methods, blocks) -> dict[str, Any]:
    """The per-dataset comparisons of wtl.md: header and, per comparison, [baseline, metric,
    block, cell texts (as in wtl.md), sort keys (numbers or None) per cell]."""
    comparisons = report.comparisons
    assert comparisons is not None
    frame = wtl_table.ordered_comparisons(comparisons, report.prepared)
    texts = wtl_table.comparison_rows(comparisons, frame, report.options.digits)
    holm = comparisons.correction == "holm"
    rows = []
    for r, text in zip(frame.itertuples(index=False), texts, strict=True):
        keys = [
            float(r.n),
            _number(r.mean_difference),
            _number(r.cohens_d) if np.isfinite(r.cohens_d) else None,
            _number(r.pvalue),
            *([_number(r.p_adjusted)] if holm else []),
        ]
        rows.append(
            [methods[r.baseline], metrics[r.metric], blocks[(r.dataset, r.level)], text[3:], keys]
        )
    return {"header": wtl_table.comparison_header(comparisons)[3:], "rows": rows}


def _bayes(report: Report, metrics, methods, blocks) -> dict[str, Any]:
    """The Bayesian tables of bayes.md and bayes_wtl.md, texts formatted as there."""
    b, p, digits = report.bayes, report.prepared, report.options.digits
    assert b is not None
    code = {"win": 0, "tie": 1, "loss": 2, "undecided": 3}
    frame = bayes_tables.ordered_per_dataset(b, p)
    per_dataset = [
        [
            methods[r.baseline],
            metrics[r.metric],
            blocks[(r.dataset, r.level)],
            text[3:],
            [float(r.n), _number(r.mean_difference)]
            + [_number(v) for v in (r.p_reference_better, r.p_equivalent, r.p_baseline_better)],
            code.get(r.outcome, -1),
        ]
        for r, text in zip(
            frame.itertuples(index=False),
            bayes_tables.per_dataset_rows(frame, digits),
            strict=True,
        )
    ]
    across = [
        [
            methods[r.baseline],
            metrics[r.metric],
            text[2:],
            [float(r.n_datasets), _number(r.mean_difference)]
            + [_number(v) for v in (r.p_reference_better, r.p_equivalent, r.p_baseline_better)],
        ]
        for r, text in zip(
            b.across.itertuples(index=False), bayes_tables.across_rows(b, digits), strict=True
        )
        if r.metric in metrics
    ]
    return {
        "test": bayes_tables.describe(b),
        "threshold": b.threshold,
        "rope": b.rope,
        **_wtl_counts(
            wtl_table.grid(b.wtl, bayes_tables.OUTCOME_COLUMNS), metrics, methods, rows="wtl"
        ),
        "cmp": per_dataset,
        "cmpHeader": bayes_tables.PER_DATASET_HEADER[3:],
        "across": across,
        "acrossHeader": bayes_tables.ACROSS_HEADER[2:],
    }


def _level_order(blocks: list[tuple[str, str]]) -> list[str]:
    """Noise levels in the order the report's rows use within a dataset."""
    position: dict[str, list[int]] = {}
    first: dict[str, int] = {}
    for index, (dataset, level) in enumerate(blocks):
        start = next(i for i, b in enumerate(blocks) if b[0] == dataset)
        position.setdefault(level, []).append(index - start)
        first.setdefault(level, index)
    return sorted(position, key=lambda lv: (float(np.mean(position[lv])), first[lv]))


def _table2_cells(report: Report, metrics, methods, blocks) -> list[list[Any]]:
    """[metric, block, method, mean text, std text, best, mean, rank] per Table 2 cell.

    The texts come from the function that writes table2.md; the rank is that of the mean
    within its row in the metric's direction (1 = best, means that agree to the tie
    tolerance tie and share the average rank), as the Friedman test ranks block means.
    """
    summary = report.table2
    if summary.empty:
        return []
    cells = table2_tables.cells(summary, report.options.digits)
    higher = summary["metric"].map(report.prepared.directions).astype(bool)
    signed = summary["mean"].where(higher, -summary["mean"])
    # means that agree to the tie tolerance tie, as in the Friedman ranks (stats.ranks)
    signed = signed.groupby([summary["metric"], summary["dataset"], summary["level"]]).transform(
        lambda values: merge_near_ties(values.to_numpy())
    )
    ranks = signed.groupby([summary["metric"], summary["dataset"], summary["level"]]).rank(
        ascending=False, method="average"
    )
    out = []
    for row, rank in zip(summary.itertuples(index=False), ranks, strict=True):
        if row.metric not in metrics:
            continue
        mean_text, std_text, best = cells[(row.metric, row.dataset, row.level)][row.method]
        out.append(
            [
                metrics[row.metric],
                blocks[(row.dataset, row.level)],
                methods[row.method],
                mean_text,
                std_text,
                int(best),
                _number(row.mean),
                _number(rank),
            ]
        )
    return out


def _comparisons(report: Report, metrics, methods, blocks) -> list[list[int]]:
    """[baseline, metric, block, 1 win / 0 tie / -1 loss] per tested comparison."""
    code = dict(zip(OUTCOMES, (1, 0, -1), strict=True))
    assert report.comparisons is not None  # called only for a report with a reference
    frame = report.comparisons.comparisons
    return [
        [methods[r.baseline], metrics[r.metric], blocks[(r.dataset, r.level)], code[r.outcome]]
        for r in frame[["baseline", "metric", "dataset", "level", "outcome"]].itertuples(
            index=False
        )
        if r.outcome in code and r.metric in metrics and (r.dataset, r.level) in blocks
    ]


def _ranks(report: Report, metrics, methods) -> list[list[Any]]:
    """[metric, average rank per method (None if absent), N, p text, p, CD] per metric."""
    rows = []
    for metric, r in report.ranks.items():
        if metric not in metrics:
            continue
        average: list[float | None] = [None] * len(methods)
        for method, rank in zip(r.friedman.methods, r.friedman.average_ranks, strict=True):
            average[methods[method]] = _number(rank)
        rows.append(
            [
                metrics[metric],
                average,
                int(r.friedman.n_blocks),
                _pvalue(r.friedman.f_pvalue),
                _number(r.friedman.f_pvalue),
                # the Nemenyi CD only where Nemenyi draws the diagrams' bars
                _number(r.critical_difference) if report.options.posthoc == "nemenyi" else None,
            ]
        )
    return rows


def unit_rows(report: Report) -> list[list[str]]:
    """[status, unit, error, where] for every unit or run that did not produce results.

    Failures carry their own ``status`` column when the loader records one (e.g. timed out,
    not applicable); without it they are "failed". Runs with a record but no results are
    "incomplete".
    """
    rows = []
    failures = report.loaded.failures
    for row in failures.to_dict(orient="records"):
        status = row.get("status")
        rows.append(
            [
                str(status) if isinstance(status, str) and status else str(Status.FAILED),
                str(row.get("unit", "")),
                str(row.get("error", "")),
                str(row.get("path", "")),
            ]
        )
    for run_dir in report.loaded.incomplete:
        rows.append(
            ["incomplete", Path(run_dir).name, f"a run record but no {RESULTS_FILE}", str(run_dir)]
        )
    return rows


# ---------------------------------------------------------------------------- sections


def _section(anchor: str, title: str, lead: str, body: str) -> str:
    lead_html = f'<p class="lead">{lead}</p>' if lead else ""
    return f'<section class="panel" id="{anchor}"><h2>{_e(title)}</h2>{lead_html}{body}</section>'


def _summary_section(summary: str) -> str:
    return _section(
        "summary",
        "Summary",
        "",
        f'<div class="summary">{markdown_html(summary)}</div>',
    )


def _results_section() -> str:
    return _section(
        "results",
        "Results per PML dataset",
        "The paper's Table 2: rows are PML datasets (dataset × noise level), columns methods. "
        "Click a column header to sort by it (methods: best first; click again to reverse); "
        "the filters above apply to every table.",
        '<div id="table2"><noscript>The tables need JavaScript; table2.md holds the same '
        "numbers.</noscript></div>",
    )


def _wtl_section(report: Report) -> str:
    lead = (
        f"Win/tie/loss of {_e(report.comparisons.reference)} against each method, counted over "
        "PML datasets: a win means the reference is significantly better in the metric's "
        "direction (the paper's Table 3)."
        if report.comparisons is not None
        else ""
    )
    body = '<div id="wtl"></div>'
    if report.comparisons is not None:
        body += (
            '<details id="wtl-details"><summary>Per PML dataset: the mean difference ± its '
            "standard error and Cohen's d beside each p-value (as in wtl.md)</summary>"
            '<div id="wtl-cmp"></div></details>'
        )
    return _section("wtl-section", "Win/tie/loss", lead, body)


def _bayes_section(report: Report) -> str:
    b = report.bayes
    assert b is not None
    lead = (
        f"Bayesian comparison of {_e(b.reference)} with each method (Benavoli et al., JMLR "
        f"2017), region of practical equivalence ±{b.rope:g} on the metric's scale. Per PML "
        f"dataset the correlated Bayesian t-test decides a win, a tie (practically "
        f"equivalent) or a loss when its posterior probability is at least {b.threshold:g}; "
        "otherwise the comparison is undecided (win/tie/loss/undecided, as in bayes_wtl.md)."
    )
    body = (
        '<div id="bayes-wtl"></div>'
        '<h3 style="margin-top:16px">Across PML datasets: Bayesian signed-rank test</h3>'
        '<div id="bayes-across"></div>'
        '<details id="bayes-details"><summary>Per PML dataset: posterior probabilities of the '
        "correlated Bayesian t-test (as in bayes.md)</summary>"
        '<div id="bayes-cmp"></div></details>'
    )
    return _section("bayes-section", "Bayesian comparison", lead, body)


def _ranks_section(report: Report) -> str:
    return _section(
        "ranks-section",
        "Average ranks across datasets",
        f"{rank_definition(report.options.blocks)} Friedman test at alpha "
        f"{report.options.alpha:g}; the diagrams' bars: "
        f"{posthoc_name(report.options.posthoc)}.",
        '<div id="ranks"></div>',
    )


def _data_uri(path: Path) -> str:
    mime = "image/svg+xml" if path.suffix == ".svg" else "image/png"
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


def _figure_metric(stem: str, metrics: Sequence[str]) -> str | None:
    matches = [m for m in metrics if stem == m or stem.endswith("_" + m)]
    return max(matches, key=len) if matches else None


def _figures_section(
    figures: Sequence[Path], metrics: Sequence[str], captions: Mapping[str, str]
) -> str:
    """Figures grouped by kind, one per file stem (SVG preferred), embedded as data: URIs."""
    chosen: dict[Path, Path] = {}
    for path in figures:
        path = Path(path)
        if path.suffix not in (".svg", ".png") or not path.is_file():
            continue
        stem = path.with_suffix("")
        if stem not in chosen or path.suffix == ".svg":
            chosen[stem] = path
    groups: dict[str, list[str]] = {}
    for stem, path in chosen.items():
        kind = stem.name.split("_", 1)[0]
        kind = kind if kind in FIGURE_KINDS else "other"
        metric = _figure_metric(stem.name, metrics)
        what = metric_name(metric) if metric else stem.name
        caption = FIGURE_KINDS.get(kind, ("Other figures", "Figure"))[1]
        if kind == "sensitivity" and metric:
            detail = stem.name[len("sensitivity_") : -len(metric) - 1]
            caption += f" ({detail.replace('_', ' ', 1)})"
        groups.setdefault(kind, []).append(
            f'<figure data-metric="{_e(metric or "")}" data-kind="{_e(kind)}">'
            f'<img src="{_data_uri(path)}" alt="{_e(caption)}: {_e(what)}" loading="eager">'
            f"<figcaption>{_e(caption)}: {_e(what)} <code>{_e(path.name)}</code>"
            + (f"<br>{_e(captions[stem.name])}" if stem.name in captions else "")
            + "</figcaption>"
            "</figure>"
        )
    if not groups:
        return ""
    order = [*FIGURE_KINDS, "other"]
    body = "".join(
        f'<div class="fig-group" data-kind="{kind}"><h3>'
        f"{_e(FIGURE_KINDS.get(kind, ('Other figures',))[0])}</h3>"
        f'<div class="figs">{"".join(groups[kind])}</div></div>'
        for kind in order
        if kind in groups
    )
    return _section(
        "figures",
        "Figures",
        "The figures written under plots/, embedded in this page: click one to enlarge it. "
        "The metric filter applies.",
        body,
    )


def _units_section(units: list[list[str]]) -> str:
    if not units:
        body = '<div class="badges"><span class="badge ok">every unit finished</span></div>'
    else:
        counts = Counter(u[0] for u in units)
        badges = "".join(
            f'<span class="badge {_e(status)}">{n} {_e(status)}</span>'
            for status, n in counts.most_common()
        )
        body = (
            f'<div class="badges">{badges}</div>'
            '<form class="filters" onsubmit="return false"><label>Status '
            '<select id="f-status" data-key="status"></select></label></form>'
            '<div id="units"></div>'
        )
    return _section(
        "units-section",
        "Units that did not finish",
        "Failed, timed-out, not-applicable and incomplete units or runs the report found; "
        "they contribute no numbers to the tables above.",
        body,
    )


def _provenance_section(prov: Provenance, report: Report) -> str:
    o = report.options
    settings = [
        f"reference {o.reference}" if o.reference else "no reference",
        f"test {o.test}",
        f"correction {o.correction}",
        f"alpha {o.alpha:g}",
        f"post-hoc {o.posthoc}",
        f"{o.digits} decimals",
    ]
    if o.bayesian:
        settings.append(f"Bayesian comparisons, ROPE {o.rope:g}")
    if o.where:
        settings.append("where " + ", ".join(f"{k}={v}" for k, v in o.where.items()))
    inputs = prov["inputs"]
    shown = "".join(f"<li><code>{_e(i)}</code></li>" for i in inputs[:200])
    more = f"<li>… and {len(inputs) - 200} more</li>" if len(inputs) > 200 else ""
    items = [
        ("report command", f'<pre class="cmd">{_e(prov["report_command"])}</pre>'),
        ("report settings", _e("; ".join(settings))),
        ("generated", _e(prov["generated"])),
        ("pmlbench commit (report)", f"<code>{_e(prov['report_commit'])}</code>"),
        (
            "inputs",
            f"{prov['sources']} runs or store units; {len(inputs)} result files or stores read"
            f"<details><summary>list the inputs</summary><ul>{shown}{more}</ul></details>",
        ),
    ]
    dl = "".join(f"<dt>{_e(k)}</dt><dd>{v}</dd>" for k, v in items)
    return _section(
        "provenance",
        "Provenance",
        "How the results were computed, read from the run records (run.json) and result-store "
        "records of every result file, and how this report was made.",
        f'<dl class="kv">{dl}</dl><div id="prov-tables"></div>',
    )
