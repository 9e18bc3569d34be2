"""What a suite's numbers say, in sentences generated from the report (the leaderboard's
"What the numbers say"): the pools of methods and datasets behind the ranks, which method
leads each metric in each pool and how many others it beats by the Wilcoxon-Holm tests,
whether any method beats the control and where the control beats the others, why pairs that
do not differ are not thereby equal and which pairs the Bayesian test finds practically
equivalent, and the reading aids a newcomer needs (the control, n/a, tuning choices at a
grid's edge) (:mod:`pmlbench.report.claims` computes what the sentences state).

Everything here is computed from :class:`~pmlbench.report.model.Report`; nothing is typed in
by hand, so the text follows the numbers when the suite runs again.
"""

from __future__ import annotations

import pandas as pd

from pmlbench.core.budget import BUDGET_TEXT
from pmlbench.report.claims import (
    ALL_METHODS,
    CONTROL,
    FULL_COVERAGE,
    Claims,
    Pool,
    Power,
    compute_claims,
)
from pmlbench.report.model import Report
from pmlbench.report.render import markdown_escape, metric_name
from pmlbench.report.tuning_summary import tuning_summary

PAIRWISE = "Wilcoxon-Holm across datasets"


def _significant(report: Report, metric: str) -> pd.DataFrame:
    table = report.pairwise
    if table is None or table.empty:
        return pd.DataFrame(columns=["method_a", "method_b", "better", "significant", "p_holm"])
    return table[(table["metric"] == metric) & (table["level"] == "all")]


def _names(items) -> str:
    return ", ".join(markdown_escape(str(i)) for i in items)


def _beaten(pairs: pd.DataFrame, method: str, among: set[str] | None = None) -> list[str]:
    """The methods ``method`` is significantly better than (among ``among``, if given)."""
    won = pairs[pairs["significant"].astype(bool) & (pairs["better"] == method)]
    others = set(won["method_a"]).union(won["method_b"]) - {method}
    if among is not None:
        others &= among
    return sorted(others, key=str.lower)


def _pool_datasets(pool: Pool) -> str:
    names = pool.datasets()
    return f" ({_names(names)})" if names is not None else ""


def pools_finding(pools: list[Pool]) -> list[str]:
    """Which methods and datasets the ranks and leaders come from."""
    if not pools:
        return []
    first = pools[0]
    n = first.ranks[next(iter(first.ranks))].n_blocks
    text = (
        f"Ranks and leaders come from {'two pools' if len(pools) > 1 else 'one pool'}: "
        f"*{ALL_METHODS}*, the {len(first.methods)} methods over the "
        + (
            f"{n} datasets where every one of them has a result{_pool_datasets(first)}"
            if first.datasets() is not None
            else "datasets where every one of them has a result (named per metric)"
        )
    )
    if len(pools) > 1:
        second = pools[1]
        n = second.ranks[next(iter(second.ranks))].n_blocks
        text += (
            f"; and *{FULL_COVERAGE}*, the {len(second.methods)} methods with a result on "
            f"every dataset ({_names(second.methods)}) over all {n} of them, where a lead "
            "earned on the first pool's datasets alone does not carry over"
        )
    return [text + ". Each method's datasets: [Coverage](#coverage)."]


def _lead_text(pool: Pool, metric: str, pairs: pd.DataFrame, among: set[str] | None) -> str:
    leaders, rank = pool.leaders(metric)
    if len(leaders) == 1:
        lead = f"{markdown_escape(leaders[0])} has the best average rank ({rank:.2f})"
    else:
        lead = f"{_names(leaders)} share the best average rank ({rank:.2f})"
    verdicts = []
    for leader in leaders:
        beaten = _beaten(pairs, leader, among)
        who = markdown_escape(leader) if len(leaders) > 1 else "it"
        verdicts.append(
            f"{who} is significantly better than {_names(beaten)}"
            if beaten
            else f"{who} is not significantly better than any other method"
            + (" of the pool" if among is not None else "")
        )
    return f"{lead}; {'; '.join(verdicts)}"


def metric_findings(report: Report, claims: Claims) -> list[str]:
    """One sentence per metric: its leader in each rank pool and whom the leader beats, and
    how many pairs do not differ (which is not equality)."""
    lines = []
    for metric in report.prepared.metrics:
        ranked = [pool for pool in claims.pools if metric in pool.ranks]
        if not ranked:
            continue
        pairs = _significant(report, metric)
        tested = pairs[pairs["p_holm"].notna()] if "p_holm" in pairs else pairs
        parts = []
        for pool in ranked:
            result = pool.ranks[metric]
            where = (
                f"over the {result.n_blocks} datasets where all {result.k} methods have a result"
                if pool.name == ALL_METHODS
                else f"among the {result.k} methods with full coverage, over all "
                f"{result.n_blocks} datasets"
            )
            if pool.datasets() is None:
                where += f" ({_names(pool.ranked[metric])})"
            among = None if pool.name == ALL_METHODS else set(pool.methods)
            parts.append(f"{where}, {_lead_text(pool, metric, pairs, among)}")
        quiet = int((~tested["significant"].astype(bool)).sum())
        lines.append(
            f"**{metric_name(metric)}** ({PAIRWISE}): "
            + "; ".join(parts)
            + f". {quiet} of {len(tested)} pairs of methods do not differ significantly, "
            "which is no evidence that they are equal (below)."
        )
    return lines


def _power_text(power: Power, alpha: float) -> str:
    text = (
        f"Holm's correction over the {power.pairs} pairs of a metric rejects its first pair "
        f"only at p < {alpha:g}/{power.pairs} = {power.first_threshold:.2g}, and the "
        f"Wilcoxon signed-rank test over N datasets cannot give a p below that of N "
        f"differences all in one direction: {power.best_p:.2g} for the {power.smallest_n} "
        "datasets of the smallest pairs"
    )
    if power.weak_pairs:
        text += (
            f", so the {power.weak_pairs} pairs with at most {power.weak_n} common datasets "
            "cannot pass that first threshold whatever their results"
        )
    return text


def equivalence_findings(report: Report, claims: Claims) -> list[str]:
    """Why "does not differ" is not "equal", and the equivalences the Bayesian signed-rank
    test supports."""
    lines = []
    powers = list(dict.fromkeys(claims.power.values()))
    alpha = report.options.alpha
    if powers:
        if len(powers) == 1:
            reach = _power_text(powers[0], alpha) + "."
        else:
            reach = (
                "; ".join(
                    f"{metric_name(m)}: {_power_text(v, alpha)}" for m, v in claims.power.items()
                )
                + "."
            )
        lines.append(f"Not differing significantly is not being equal. {reach}")
    bayes = claims.bayes
    if bayes.empty:
        return lines
    rope = float(bayes["rope"].iloc[0])
    pairs: dict[tuple[str, str], list[str]] = {}
    for r in bayes[bayes["outcome"] == "tie"].itertuples(index=False):
        first, second = sorted((str(r.reference), str(r.baseline)))
        key = (first, second)
        names = pairs.setdefault(key, [])
        if metric_name(r.metric) not in names:
            names.append(metric_name(r.metric))
    references = [markdown_escape(str(r)) for r in dict.fromkeys(bayes["reference"])]
    compared = " and ".join(
        [", ".join(references[:-1]), references[-1]] if len(references) > 1 else references
    )
    text = (
        "Equivalence is claimed only from the Bayesian signed-rank test over datasets with "
        f"its region of practical equivalence (ROPE ±{rope:g} on the metric's scale), here "
        f"for {compared} against every other method "
        "([Bayesian signed-rank tests](#bayesian-signed-rank-tests)): "
    )
    if pairs:
        text += (
            "practically equivalent (P(ROPE) >= "
            + f"{claims.threshold:g}) are "
            + "; ".join(
                f"{markdown_escape(a)} and {markdown_escape(b)} ({', '.join(v)})"
                for (a, b), v in sorted(pairs.items())
            )
        )
    else:
        text += (
            f"no pair is practically equivalent on any metric at P(ROPE) >= {claims.threshold:g}"
        )
    lines.append(text + ".")
    return lines


def control_findings(report: Report) -> list[str]:
    """Which methods are significantly better than the control, and where the control is
    significantly better than the others, by metric (Wilcoxon-Holm across datasets)."""
    if CONTROL not in report.prepared.methods:
        return []
    better: dict[str, list[str]] = {}
    wins: dict[str, list[str]] = {}
    for metric in report.prepared.metrics:
        pairs = _significant(report, metric)
        mine = pairs[
            pairs["significant"].astype(bool)
            & ((pairs["method_a"] == CONTROL) | (pairs["method_b"] == CONTROL))
        ]
        for row in mine.to_dict("records"):
            other = str(row["method_b"] if row["method_a"] == CONTROL else row["method_a"])
            target = wins if row["better"] == CONTROL else better
            target.setdefault(other, []).append(metric_name(metric))
    if better:
        shown = "; ".join(
            f"{markdown_escape(m)} ({', '.join(v)})" for m, v in sorted(better.items())
        )
        text = (
            f"**The control {CONTROL}** ({PAIRWISE}): significantly better than {CONTROL} are "
            f"{shown}; no other method is significantly better than {CONTROL} on any metric."
        )
    else:
        text = (
            f"**The control {CONTROL}** ({PAIRWISE}): no PML method is significantly better "
            f"than {CONTROL} on any metric (nor is any other method on this page)."
        )
    if wins:
        text += f" {CONTROL} (least squares on the candidate labels, not a PML method) is " + (
            "significantly better than "
            + "; ".join(f"{markdown_escape(m)} ({', '.join(v)})" for m, v in sorted(wins.items()))
            + "."
        )
    return [text]


def tuning_edge_findings(report: Report, share: float = 0.5) -> list[str]:
    """Tuned parameters whose smallest or largest grid value scores better than the value
    next to it in more than ``share`` of the units: the best value may lie beyond the grid.
    Units where the edge only tied with its neighbour are named beside, not counted."""
    summaries, _ = tuning_summary(report.prepared.records)
    lines = []
    for s in summaries:
        for edge, count, tied, side in (
            (s.high, s.at_high, s.tied_high, "largest"),
            (s.low, s.at_low, s.tied_low, "smallest"),
        ):
            if edge is not None and count - tied > share * s.units:
                ties = f" (and tied with it in {tied} more)" if tied else ""
                lines.append(
                    f"{markdown_escape(s.method)} selects {markdown_escape(s.parameter)} = "
                    f"{markdown_escape(edge)}, the {side} value of its grid "
                    f"({', '.join(markdown_escape(v) for v in s.grid)}), scoring better than "
                    f"the next value in {count - tied} of {s.units} tuned units{ties}: the best "
                    f"value may lie beyond the grid (`tune.grid.{s.parameter}=[...]` widens it)."
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
            f"n/a is a budget cap that the suite sets ({BUDGET_TEXT}), not a "
            "limit of the method: each line under [Not applicable](#not-applicable) names the "
            "option that lifts the cap (e.g. `method.max_order=null`)."
        )
    return aids


def findings_markdown(report: Report, claims: Claims | None = None) -> str:
    """The leaderboard's "What the numbers say" section body (a bullet list); ``claims``
    are computed from ``report`` when not given."""
    claims = claims if claims is not None else compute_claims(report)
    lines = [
        *pools_finding(claims.pools),
        *metric_findings(report, claims),
        *equivalence_findings(report, claims),
        *control_findings(report),
        *tuning_edge_findings(report),
        *empty_label_findings(report),
        *reading_aids(report),
    ]
    return "".join(f"- {line}\n" for line in lines)


__all__ = [
    "control_findings",
    "empty_label_findings",
    "equivalence_findings",
    "findings_markdown",
    "metric_findings",
    "pools_finding",
    "reading_aids",
    "tuning_edge_findings",
]
