"""What a suite's numbers say, in sentences generated from the report (the leaderboard's
"What the numbers say"): which method leads each metric and how many others it beats by the
Wilcoxon-Holm tests, where the control beats PML methods, how much is not significant, and
the reading aids a newcomer needs (the control, n/a, tuning choices at a grid's edge).

Everything here is computed from :class:`~pmlbench.report.model.Report`; nothing is typed in
by hand, so the text follows the numbers when the suite runs again.
"""

from __future__ import annotations

import re
from collections import Counter

import pandas as pd

from pmlbench.report.model import Report
from pmlbench.report.render import markdown_escape, metric_name

CONTROL = "ridge"  # least squares on the candidates: a control, not a PML method
_TUNED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=([^,]+)")


def _leader(report: Report, metric: str) -> tuple[str, int, int] | None:
    """(best-ranked method, the blocks it was ranked over, methods ranked)."""
    ranks = report.ranks.get(metric)
    if ranks is None or not ranks.friedman.methods:
        return None
    friedman = ranks.friedman
    order = sorted(range(len(friedman.methods)), key=lambda i: (friedman.average_ranks[i], i))
    return friedman.methods[order[0]], int(friedman.n_blocks), len(friedman.methods)


def _significant(report: Report, metric: str) -> pd.DataFrame:
    table = report.pairwise
    if table is None or table.empty:
        return pd.DataFrame(columns=["method_a", "method_b", "better", "significant"])
    return table[(table["metric"] == metric) & (table["level"] == "all")]


def metric_findings(report: Report) -> list[str]:
    """One sentence per metric: its leader, whom the leader beats, what is not significant."""
    lines = []
    for metric in report.prepared.metrics:
        leader = _leader(report, metric)
        pairs = _significant(report, metric)
        tested = pairs[pairs["p_holm"].notna()] if "p_holm" in pairs else pairs
        if leader is None:
            continue
        method, n_blocks, n_methods = leader
        beaten = tested[tested["significant"] & (tested["better"] == method)]
        others = sorted(set(beaten["method_a"]).union(beaten["method_b"]) - {method}, key=str.lower)
        quiet = int((~tested["significant"]).sum())
        text = (
            f"**{metric_name(metric)}**: {markdown_escape(method)} has the best average rank "
            f"of the {n_methods} methods over the {n_blocks} datasets where all have a result"
        )
        if others:
            text += (
                f"; it is significantly better (Wilcoxon-Holm) than "
                f"{', '.join(markdown_escape(o) for o in others)}"
            )
        else:
            text += "; it is not significantly better than any other method (Wilcoxon-Holm)"
        text += f". {quiet} of {len(tested)} pairs of methods do not differ significantly."
        lines.append(text)
    return lines


def control_findings(report: Report) -> list[str]:
    """Where the control is significantly better than a PML method, by metric."""
    wins: dict[str, list[str]] = {}
    for metric in report.prepared.metrics:
        pairs = _significant(report, metric)
        won = pairs[
            pairs["significant"]
            & (pairs["better"] == CONTROL)
            & ((pairs["method_a"] == CONTROL) | (pairs["method_b"] == CONTROL))
        ]
        for row in won.to_dict("records"):
            other = row["method_b"] if row["method_a"] == CONTROL else row["method_a"]
            wins.setdefault(str(other), []).append(metric_name(metric))
    if not wins:
        return []
    parts = [f"{markdown_escape(m)} ({', '.join(v)})" for m, v in sorted(wins.items())]
    return [
        f"The control {CONTROL} (least squares on the candidate labels, not a PML method) is "
        f"significantly better than {'; '.join(parts)} (Wilcoxon-Holm across datasets)."
    ]


def tuning_edge_findings(report: Report, share: float = 0.5) -> list[str]:
    """Tuned parameters that settle on the largest or smallest value tried in more than
    ``share`` of the units: the best value may lie beyond the grid."""
    records = report.prepared.records
    if "tuned" not in records:
        return []
    units = records.drop_duplicates(["method", "dataset", "level", "seed", "split"])
    lines = []
    for method, rows in units.groupby("method", sort=True):
        chosen: dict[str, Counter[str]] = {}
        for text in rows["tuned"].dropna().astype(str):
            for name, value in _TUNED.findall(text):
                chosen.setdefault(name, Counter())[value.strip()] += 1
        for name, counts in sorted(chosen.items()):
            if len(counts) < 2:
                continue
            try:
                values = sorted(counts, key=float)
            except ValueError:
                continue
            total = sum(counts.values())
            for edge, side in ((values[-1], "largest"), (values[0], "smallest")):
                if counts[edge] > share * total:
                    lines.append(
                        f"{markdown_escape(str(method))} picks {name} = {edge}, the {side} "
                        f"of the values it chose ({', '.join(values)}), in {counts[edge]} of "
                        f"{total} tuned units: the best "
                        "value may lie beyond the tuning grid (`tune.grid."
                        f"{name}=[...]` widens it)."
                    )
    return lines


def empty_label_findings(report: Report, share: float = 0.2) -> list[str]:
    """Datasets where many instances have no true label: there subset accuracy rewards
    predicting the empty set, which explains scores that look odd next to the others."""
    from pmlbench.plugins import registry

    records = report.prepared.records
    subset = records[records["metric"] == "subset_accuracy"]
    installed = registry.plugins("dataset")
    lines = []
    for name in sorted(set(records["dataset"].astype(str))):
        if name not in installed:
            continue
        try:
            data = installed[name].load()()
        except Exception:  # not loadable here (e.g. needs parameters): say nothing
            continue
        empty = float((data.Y.sum(axis=1) == 0).mean())
        if empty <= share:
            continue
        means = subset[subset["dataset"] == name].groupby("method")["value"].mean()
        text = f"{markdown_escape(name)}: {empty:.0%} of the instances have no true label"
        if len(means) >= 2:
            low, high = means.idxmin(), means.idxmax()
            text += (
                f", so subset accuracy rewards predicting the empty set: from "
                f"{means[low]:.2f} ({markdown_escape(str(low))}) to {means[high]:.2f} "
                f"({markdown_escape(str(high))}) there, between methods that always predict a "
                "label and methods that may predict none"
            )
        lines.append(text + ".")
    return lines


def reading_aids(report: Report) -> list[str]:
    """What a newcomer needs to read the page: the control and n/a."""
    aids = []
    methods = set(report.prepared.records["method"])
    if CONTROL in methods:
        aids.append(
            f"{CONTROL} is a control, not a PML method: the same linear model as PML3ER's "
            "W-step trained on the candidate labels as they are. A PML method that does not "
            "beat it gains nothing from its label recovery."
        )
    if not report.unfinished.empty:
        aids.append(
            "n/a is a budget cap that the suite sets (10 times ML-kNN's time per split), not a "
            "limit of the method: each line under [Not applicable](#not-applicable) names the "
            "option that lifts the cap (e.g. `method.max_order=null`)."
        )
    return aids


def findings_markdown(report: Report) -> str:
    """The leaderboard's "What the numbers say" section body (a bullet list)."""
    lines = [
        *metric_findings(report),
        *control_findings(report),
        *tuning_edge_findings(report),
        *empty_label_findings(report),
        *reading_aids(report),
    ]
    return "".join(f"- {line}\n" for line in lines)


__all__ = [
    "control_findings",
    "empty_label_findings",
    "findings_markdown",
    "metric_findings",
    "reading_aids",
    "tuning_edge_findings",
]
