"""The report's figures: which ones a report draws (critical-difference diagrams, noise and
sensitivity curves), how a CD diagram's bars are decided, and their captions.

The drawing itself is :mod:`pmlbench.report.plots` (matplotlib); the figures carry no title,
so that a paper sets its own: :func:`figure_captions` gives each one's caption, which
report.html shows and ``plots/captions.md`` lists.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pmlbench.report import plots
from pmlbench.report.model import Report
from pmlbench.report.render import metric_name

CAPTIONS = "captions.md"  # plots/captions.md: every figure's files and caption


def draw_figures(report: Report, out_dir: Path) -> list[Path]:
    """CD diagrams, noise curves and sensitivity curves (SVG, PDF and PNG, no titles: see
    :func:`figure_captions`)."""
    paths = cd_figures(report, out_dir)
    paths += plots.noise_curves(report.prepared, report.table2, out_dir)
    sweeps = plots.sensitivity_params(report.prepared, report.options.sensitivity)
    paths += plots.sensitivity_curves(report.prepared, sweeps, out_dir)
    return paths


def cd_caption(report: Report, metric: str) -> str:
    """The caption of metric ``metric``'s critical-difference diagram."""
    r = report.ranks[metric]
    unit = "datasets" if report.options.blocks == "dataset" else "PML datasets"
    return (
        f"{_capital(metric_name(metric))}: average ranks over {r.friedman.n_blocks} {unit} "
        "(best to the left); bars join methods not significantly different "
        f"({posthoc_name(report.options.posthoc)}, alpha {report.options.alpha:g})"
    )


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def figure_captions(report: Report, figures: Iterable[Path]) -> dict[str, str]:
    """Caption by figure (file stem): the figures carry no title, so that a paper sets its
    own; the page shows these and ``plots/captions.md`` lists them."""
    captions: dict[str, str] = {}
    metrics = sorted(report.prepared.metrics, key=len, reverse=True)
    for stem in dict.fromkeys(Path(f).stem for f in figures):
        metric = next((m for m in metrics if stem.endswith("_" + m)), None)
        if metric is None:
            continue
        name = _capital(metric_name(metric))
        if stem == f"cd_{metric}" and metric in report.ranks:
            captions[stem] = cd_caption(report, metric)
        elif stem == plots.noise_figure_stem(metric):
            captions[stem] = (
                f"{name} against the noise level: one panel per dataset, one line per method "
                "(mean ± std over splits)"
            )
        elif stem.startswith("sensitivity_"):
            method, _, param = stem[len("sensitivity_") : -len(metric) - 1].partition("_")
            captions[stem] = (
                f"{name} of {method} against its parameter {param} (mean over splits), one "
                "line per dataset, one panel per noise level"
            )
    return captions


def captions_markdown(captions: dict[str, str], figures: Iterable[Path]) -> str:
    """``plots/captions.md``: each figure's files and caption."""
    files: dict[str, list[str]] = {}
    for path in figures:
        files.setdefault(Path(path).stem, []).append(Path(path).name)
    lines = ["# Figures", ""]
    for stem, caption in captions.items():
        names = ", ".join(f"`{n}`" for n in sorted(files.get(stem, [])))
        lines += [f"## {stem}", "", f"{caption}.", "", f"Files: {names}", ""]
    return "\n".join(lines)


def posthoc_name(posthoc: str) -> str:
    """How a CD diagram's bars are decided, as its title and captions name it."""
    if posthoc == "wilcoxon":
        return "pairwise Wilcoxon signed-rank, Holm"
    if posthoc == "holm":
        return "Holm on mean ranks, depends on the pool of methods"
    return "Nemenyi, depends on the pool of methods"


def cd_figures(
    report: Report, out_dir: Path, formats: tuple[str, ...] = plots.FORMATS
) -> list[Path]:
    """The critical-difference diagram of every metric with a Friedman test,
    ``cd_<metric>.<format>`` in ``out_dir``."""
    from pmlbench.stats.friedman import nonsignificant_groups
    from pmlbench.stats.pairwise import pairwise_cliques

    paths: list[Path] = []
    posthoc = report.options.posthoc
    for metric, r in report.ranks.items():
        if posthoc == "wilcoxon" and report.pairwise is not None:
            pairs = report.pairwise[report.pairwise["metric"] == metric]
            groups = pairwise_cliques(r.friedman.methods, r.friedman.average_ranks, pairs)
        else:
            pairs = r.pairwise
            flag = "significant_holm" if posthoc == "holm" else "significant_nemenyi"
            different = {
                frozenset((a, b))
                for a, b, s in zip(pairs["method_a"], pairs["method_b"], pairs[flag], strict=True)
                if s
            }
            groups = nonsignificant_groups(
                list(r.friedman.methods),
                r.friedman.average_ranks,
                lambda a, b, d=different: frozenset((a, b)) in d,
            )
        title = cd_caption(report, metric)
        paths += plots.cd_diagram(
            r.friedman.methods,
            r.friedman.average_ranks,
            # the Nemenyi CD bar only where Nemenyi decides the bars; Wilcoxon-Holm has none
            float("nan") if posthoc == "wilcoxon" else r.critical_difference,
            groups,
            title,
            out_dir,
            f"cd_{metric}",
            formats,
        )
    return paths
