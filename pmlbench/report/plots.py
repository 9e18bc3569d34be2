"""Figures (matplotlib, the optional ``plots`` extra), each written as SVG, PDF and PNG (300
dpi), with no title drawn in: a figure's caption is in the report's page and in
``plots/captions.md`` (pmlbench.report.figures.figure_captions), where a paper can take it.

- critical-difference diagram per metric (Demšar, 2006, Fig. 1): methods on an average-rank
  axis (best to the left), the Nemenyi critical difference, and thick bars joining methods
  whose differences are not significant;
- noise robustness per metric: the metric against the noise parameter, one panel per
  dataset and one line (mean ± std over splits) per method;
- sensitivity (the paper's Figure 2): the metric against a swept method parameter on a log
  axis at a fixed noise level, one line per dataset.

matplotlib is imported only here and only when a figure is drawn; figures are built on
``matplotlib.figure.Figure`` so no interactive backend is involved.
"""

from __future__ import annotations

import importlib.util
import math
import re
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pmlbench.core.atomic import atomic_write
from pmlbench.errors import PmlbenchError
from pmlbench.report.prepare import PARAM_PREFIX, Prepared, format_value
from pmlbench.report.render import arrow, metric_name

FORMATS = ("svg", "pdf", "png")
PNG_DPI = 300  # print resolution


MISSING_MATPLOTLIB = (
    "figures skipped: they need matplotlib: pip install 'pmlbench[plots]' "
    "(or pass --no-plots); the tables are written"
)


def noise_figure_stem(metric: str) -> str:
    """The file name (without suffix) of a metric's noise-curve figure."""
    return f"noise_{metric}"


def have_matplotlib() -> bool:
    """Whether matplotlib can be imported (figures are drawn only then)."""
    try:
        return importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):
        return False


def require_matplotlib() -> None:
    """Fail in one line when a figure is drawn but matplotlib is missing."""
    if not have_matplotlib():
        raise PmlbenchError(
            "plots need matplotlib: pip install 'pmlbench[plots]' (or pass --no-plots)"
        )


def _figure(width: float, height: float):
    require_matplotlib()
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height))


def _save(fig, out_dir: Path, stem: str, formats: tuple[str, ...] = FORMATS) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9_.=-]+", "_", stem)
    import matplotlib
    from matplotlib.text import Text

    for text in fig.findobj(Text):  # names are drawn as written: a $ in a label is no math
        text.set_parse_math(False)
    paths = []
    # text stays text in SVG (editable, and much faster than converting glyphs to paths); a
    # fixed hash salt and no date make the same figure the same SVG file, byte for byte
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "pmlbench"}):
        for fmt in formats:
            path = out_dir / f"{stem}.{fmt}"
            # no creation date: the same figure is the same file
            metadata = {"Date": None} if fmt == "svg" else None
            if fmt == "pdf":
                metadata = {"CreationDate": None}
            # written beside and renamed into place, as every file pmlbench writes: a link
            # of that name is replaced, never written through
            atomic_write(path, partial(_savefig, fig, fmt=fmt, metadata=metadata))
            paths.append(path)
    return paths


def _savefig(fig: Any, path: Path, *, fmt: str, metadata: dict[str, Any] | None) -> None:
    fig.savefig(path, format=fmt, dpi=PNG_DPI, metadata=metadata)


def cd_diagram(
    names,
    average_ranks,
    critical_difference: float,
    groups: list[tuple[str, ...]],
    title: str,
    out_dir: Path,
    stem: str,
    formats: tuple[str, ...] = FORMATS,
) -> list[Path]:
    """Critical-difference diagram: rank axis, CD bar, non-significance bars, method labels.

    ``title`` is the figure's caption; it is not drawn (the page and captions.md show it).
    """
    names = list(names)
    ranks = np.asarray(average_ranks, dtype=np.float64)
    k = len(names)
    position = dict(zip(names, ranks, strict=True))
    # methods tied at one rank share one stem: a bar over them would be a short block
    # standing alone on the axis, read as a marker rather than a clique
    groups = [g for g in groups if np.ptp([position[m] for m in g]) > 1e-12]
    order = list(np.argsort(ranks, kind="stable"))
    n_left = math.ceil(k / 2)
    left, right = order[:n_left], order[n_left:][::-1]
    step, bar_gap = 0.35, 0.18
    base = 0.35 + bar_gap * len(groups)
    bottom = -(base + step * max(len(left), len(right)) + 0.2)
    fig = _figure(7.0, 1.0 + 0.45 * (1.1 - bottom))
    ax = fig.add_axes((0.25, 0.05, 0.5, 0.8))
    lo, hi = 1.0, float(max(k, 2))
    ax.set_xlim(lo, hi)
    ax.set_ylim(bottom, 1.1)
    ax.set_axis_off()
    ax.plot([lo, hi], [0, 0], color="black", lw=1)
    for tick in range(1, k + 1):
        ax.plot([tick, tick], [0, 0.08], color="black", lw=1)
        ax.text(tick, 0.14, str(tick), ha="center", va="bottom", fontsize=9)
    if np.isfinite(critical_difference) and critical_difference > 0:
        end = min(lo + critical_difference, hi)
        ax.plot([lo, end], [0.75, 0.75], color="black", lw=1.5)
        for x in (lo, end):
            ax.plot([x, x], [0.68, 0.82], color="black", lw=1)
        ax.text(
            (lo + end) / 2,
            0.86,
            f"CD = {critical_difference:.2f}",
            ha="center",
            va="bottom",
            fontsize=9,
        )
    for g, group in enumerate(groups):
        y = -(0.2 + bar_gap * g)
        xs = [position[m] for m in group]
        # a bar speaks for every method under it: its square ends stop short of the
        # nearest method outside the group (a third of the way to it at most)
        outside = [position[m] for m in names if m not in group]
        pad_left = min([0.1, *[(min(xs) - x) / 3 for x in outside if x < min(xs)]])
        pad_right = min([0.1, *[(x - max(xs)) / 3 for x in outside if x > max(xs)]])
        ax.plot(
            [min(xs) - pad_left, max(xs) + pad_right],
            [y, y],
            color="black",
            lw=3.5,
            solid_capstyle="butt",
        )
    for side, members in (("left", left), ("right", right)):
        for row, i in enumerate(members):
            y = -(base + step * row)
            x_end = lo - 0.1 * (hi - lo) if side == "left" else hi + 0.1 * (hi - lo)
            ax.plot([ranks[i], ranks[i], x_end], [0, y, y], color="0.3", lw=0.8, clip_on=False)
            ax.text(
                x_end + (-0.01 if side == "left" else 0.01) * (hi - lo),
                y,
                f"{names[i]} ({ranks[i]:.2f})",
                ha="right" if side == "left" else "left",
                va="center",
                fontsize=9,
                clip_on=False,
            )
    return _save(fig, out_dir, stem, formats)


def _grid(n: int, width: float = 3.6, height: float = 2.8, legend_space: float = 0.0):
    """A figure with ``n`` panels in up to three columns and fixed margins (in inches), so
    that no layout pass has to measure text before the figure is drawn."""
    cols = min(3, n)
    rows = math.ceil(n / cols)
    fig_w, fig_h = width * cols, height * rows + 0.5 + legend_space
    fig = _figure(fig_w, fig_h)
    fig.subplots_adjust(
        left=0.75 / fig_w,
        right=1 - 0.2 / fig_w,
        bottom=0.55 / fig_h,
        top=1 - (0.35 + legend_space) / fig_h,
        wspace=0.35,
        hspace=0.5 * 2.8 / height,
    )
    axes = [fig.add_subplot(rows, cols, i + 1) for i in range(n)]
    return fig, axes


def noise_curves(prepared: Prepared, summary: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Per metric: metric vs noise parameter, a panel per dataset and noise model, a line per
    method. Levels of different noise models never share a line (their parameters mean
    different things); natural candidates and parameterless models have no axis to go on."""
    numeric = {lv: v for lv, v in prepared.level_values.items() if v}
    paths: list[Path] = []
    for metric in prepared.metrics:
        rows = summary[(summary["metric"] == metric) & summary["level"].isin(list(numeric))]
        model = rows["level"].map(lambda lv: prepared.level_noise.get(lv, ""))
        panels = []
        for (dataset, noise), data in rows.groupby(["dataset", model], sort=True):
            params = _varying_param([numeric[lv] for lv in data["level"].unique()])
            if params is not None:
                panels.append((dataset, noise, params, data))
        if not panels:
            continue
        several = len({noise for _, noise, _, _ in panels}) > 1
        fig, axes = _grid(len(panels), legend_space=0.3 * math.ceil(len(prepared.methods) / 6))
        handles = {}
        for ax, (dataset, noise, param, data) in zip(axes, panels, strict=True):
            for method in prepared.methods:
                line = data[data["method"] == method].copy()
                if line.empty:
                    continue
                line["x"] = line["level"].map(lambda lv, p=param: numeric[lv].get(p, np.nan))
                line = line.dropna(subset=["x"]).sort_values("x")
                handles[method] = ax.errorbar(
                    line["x"],
                    line["mean"],
                    yerr=line["std"].fillna(0.0),
                    marker="o",
                    ms=4,
                    capsize=3,
                    label=method,
                )
            ax.set_title(f"{dataset}, {noise}" if several else dataset, fontsize=10)
            ax.set_xlabel(f"{noise} {param}" if several else f"noise {param}")
            ax.set_ylabel(f"{metric_name(metric)} {arrow(prepared.directions[metric])}")
            ax.grid(alpha=0.3)
        fig.legend(
            list(handles.values()),
            list(handles),
            loc="upper center",
            ncol=min(len(handles), 6),
            fontsize=8,
            frameon=False,
        )
        paths += _save(fig, out_dir, noise_figure_stem(metric))
    return paths


def _varying_param(levels: list[dict[str, float]]) -> str | None:
    keys = sorted({k for lv in levels for k in lv})
    for key in keys:
        if len({lv.get(key) for lv in levels if key in lv}) >= 2:
            return key
    return None


def sensitivity_params(prepared: Prepared, requested: list[str] | None) -> list[tuple[str, str]]:
    """(method name, parameter) pairs swept at fixed noise: given, or those with >= 3 values."""
    records = prepared.records
    columns = [c for c in records.columns if c.startswith(PARAM_PREFIX)]
    if requested:
        found = []
        for param in requested:
            column = param if param.startswith(PARAM_PREFIX) else PARAM_PREFIX + param
            if column not in columns:
                raise PmlbenchError(
                    f"--sensitivity {param}: no results have a {column} column; "
                    f"swept parameters: {[c[len(PARAM_PREFIX) :] for c in columns]}"
                )
            methods = [
                m for m, rows in records.groupby("method_name") if rows[column].nunique() >= 2
            ]
            if not methods:
                raise PmlbenchError(f"--sensitivity {param}: the parameter never varies")
            found += [(m, column) for m in methods]
        return found
    found = []
    for method, rows in records.groupby("method_name", sort=True):
        for column in columns:
            values = pd.to_numeric(rows[column], errors="coerce")
            if values.notna().all() and (values > 0).all():
                per_block = rows.assign(_v=values).groupby(["dataset", "level"])["_v"].nunique()
                if len(per_block) and per_block.max() >= 3:
                    found.append((method, column))
    return found


def sensitivity_curves(
    prepared: Prepared, sweeps: list[tuple[str, str]], out_dir: Path
) -> list[Path]:
    """Per swept parameter and metric: metric vs parameter (log axis), a line per dataset,
    a panel per noise level. Other swept parameters of the method stay at their most common
    value (the fixed value of a one-at-a-time sweep)."""
    records = prepared.records
    paths: list[Path] = []
    for method, column in sweeps:
        rows = records[records["method_name"] == method]
        others = [
            c
            for c in rows.columns
            if c.startswith(PARAM_PREFIX) and c != column and rows[c].nunique() > 1
        ]
        for other in others:
            values = rows[other]
            if pd.to_numeric(values, errors="coerce").isna().any():
                # compared as text: a tuned configuration's grid (JSON text) beside numbers
                values = values.map(format_value)
            mode = values.value_counts().sort_index().idxmax()
            rows = rows[values == mode]
        x = pd.to_numeric(rows[column], errors="coerce")
        rows = rows.assign(_x=x).dropna(subset=["_x"])
        name = column[len(PARAM_PREFIX) :]
        for metric in prepared.metrics:
            data = rows[rows["metric"] == metric]
            levels = [
                lv
                for lv in dict.fromkeys(lv for _, lv in prepared.blocks)
                if (data["level"] == lv).any()
                and data.loc[data["level"] == lv, "_x"].nunique() >= 2
            ]
            if not levels:
                continue
            fig, axes = _grid(len(levels))
            for ax, level in zip(axes, levels, strict=True):
                at = data[data["level"] == level]
                means = at.groupby(["dataset", "_x"])["value"].mean().reset_index()
                for dataset, line in means.groupby("dataset", sort=True):
                    ax.plot(line["_x"], line["value"], marker="o", ms=4, label=dataset)
                if (at["_x"] > 0).all():
                    ax.set_xscale("log")
                ax.set_xlabel(name)
                ax.set_ylabel(f"{metric_name(metric)} {arrow(prepared.directions[metric])}")
                ax.set_title(f"{method}, noise {level}", fontsize=10)
                ax.grid(alpha=0.3)
                ax.legend(fontsize=8)
            paths += _save(fig, out_dir, f"sensitivity_{method}_{name}_{metric}")
    return paths
