"""The plain-language summary: what the tables say, in sentences (Markdown: every name is
written through pmlbench.report.render.markdown_escape)."""

from __future__ import annotations

import pandas as pd

from pmlbench.report.across import MetricRanks, iman_davenport_text
from pmlbench.report.bayes import BayesianResults
from pmlbench.report.render import markdown_escape, metric_name
from pmlbench.stats.paired import TEST_NAMES
from pmlbench.stats.wtl import Comparisons


def _metric(metric: str) -> str:
    return markdown_escape(metric_name(metric))


def _names(methods: pd.Series) -> str:
    return ", ".join(markdown_escape(m) for m in methods)


def _test_phrase(comparisons: Comparisons) -> str:
    text = f"{TEST_NAMES[comparisons.test]}, alpha {comparisons.alpha:g}"
    return text + (", Holm-corrected" if comparisons.correction == "holm" else "")


def wtl_sentences(comparisons: Comparisons, metrics: list[str]) -> list[str]:
    """E.g. "pml3er is significantly better than mlknn on 19 of 20 PML datasets in average
    precision, worse on 0 and not significantly different on 1 (paired t-test, alpha 0.05)"."""
    frame = comparisons.comparisons
    ref, phrase = markdown_escape(comparisons.reference), _test_phrase(comparisons)
    lines = []
    for baseline in dict.fromkeys(frame["baseline"]):
        mine = frame[frame["baseline"] == baseline]
        named = markdown_escape(baseline)
        lines.append(f"\n**{ref} vs {named}**\n")
        totals = {"win": 0, "tie": 0, "loss": 0}
        for metric in metrics:
            counts = mine.loc[mine["metric"] == metric, "outcome"].value_counts()
            tested = int(sum(counts.get(o, 0) for o in totals))
            if not tested:
                continue
            win, tie, loss = (int(counts.get(o, 0)) for o in ("win", "tie", "loss"))
            totals = {
                "win": totals["win"] + win,
                "tie": totals["tie"] + tie,
                "loss": totals["loss"] + loss,
            }
            lines.append(
                f"- {ref} is significantly better than {named} on {win} of "
                f"{tested} PML datasets in {_metric(metric)}, significantly worse "
                f"on {loss} and not significantly different on {tie} ({phrase})."
            )
        n = sum(totals.values())
        if n:
            lines.append(
                f"- In total: {totals['win']} wins, {totals['tie']} ties and "
                f"{totals['loss']} losses in {n} comparisons."
            )
    return lines


def rank_sentences(
    ranks: dict[str, MetricRanks],
    alpha: float,
    posthoc: str,
    reference: str | None,
    pairwise: pd.DataFrame | None = None,
) -> list[str]:
    """One sentence per metric: Friedman's verdict, the average ranks and, for the reference,
    the methods it is significantly apart from by ``posthoc`` ("wilcoxon": the pairwise
    Wilcoxon-Holm tests in ``pairwise``, report/pairwise.py; "holm", "nemenyi": mean ranks)."""
    lines = []
    for metric, r in ranks.items():
        f = r.friedman
        order = sorted(zip(f.average_ranks, f.methods, strict=True))
        ranking = ", ".join(f"{markdown_escape(m)} {rank:.2f}" for rank, m in order)
        differ = f.f_pvalue < alpha
        verdict = (
            "the methods differ significantly"
            if differ
            else "no significant difference between the methods"
        )
        unit = "datasets" if r.blocks == "dataset" else "PML datasets"
        text = (
            f"- {_metric(metric)}: {verdict} over {f.n_blocks} {unit} (Friedman "
            f"chi2_F = {f.chi2:.2f}, {iman_davenport_text(f, 2)}, p = "
            f"{f.f_pvalue:.3g}). Average ranks: {ranking}."
        )
        if differ and reference is not None and reference in f.methods:
            if posthoc == "wilcoxon" and pairwise is not None:
                rows = pairwise[(pairwise["metric"] == metric) & pairwise["significant"]]
                rows = rows[(rows["method_a"] == reference) | (rows["method_b"] == reference)]
                other = rows["method_b"].where(rows["method_a"] == reference, rows["method_a"])
                better = pd.DataFrame({"method": other[rows["better"] == reference]})
                worse = pd.DataFrame({"method": other[rows["better"] != reference]})
                how = "pairwise Wilcoxon signed-rank over datasets, Holm"
            elif posthoc == "holm" and r.control is not None:
                better = r.control[r.control["significant_holm"] & (r.control["z"] < 0)]
                worse = r.control[r.control["significant_holm"] & (r.control["z"] > 0)]
                how = "Holm post-hoc vs the reference"
            else:
                pairs = r.pairwise[r.pairwise["significant_nemenyi"]]
                mine = pairs[(pairs["method_a"] == reference) | (pairs["method_b"] == reference)]
                other = mine["method_b"].where(mine["method_a"] == reference, mine["method_a"])
                mine_rank = mine["rank_a"].where(mine["method_a"] == reference, mine["rank_b"])
                other_rank = mine["rank_b"].where(mine["method_a"] == reference, mine["rank_a"])
                better = pd.DataFrame({"method": other[mine_rank < other_rank]})
                worse = pd.DataFrame({"method": other[mine_rank > other_rank]})
                how = f"Nemenyi, CD = {r.critical_difference:.2f}"
            parts = []
            if len(better):
                parts.append(f"significantly better than {_names(better['method'])}")
            if len(worse):
                parts.append(f"significantly worse than {_names(worse['method'])}")
            verdict = " and ".join(parts) or "not significantly apart from any method"
            text += f" {markdown_escape(reference)} ranks {verdict} ({how})."
        lines.append(text)
    small = [
        (r.friedman.n_blocks, r.friedman.k)
        for r in ranks.values()
        if r.friedman.n_blocks <= 10 or r.friedman.k <= 5
    ]
    if small:
        n, k = small[0]
        lines.append(
            f"- Note: the Friedman and post-hoc p-values are large-sample "
            f"approximations (rule of thumb: more than 10 datasets and more than 5 "
            f"methods); with N = {n} and k = {k} read them with care."
        )
    return lines


def wilcoxon_sentences(wilcoxon: pd.DataFrame, reference: str, alpha: float) -> list[str]:
    lines = []
    for baseline, rows in wilcoxon.groupby("baseline", sort=False):
        wins = [_metric(m) for m in rows.loc[rows["outcome"] == "win", "metric"]]
        losses = [_metric(m) for m in rows.loc[rows["outcome"] == "loss", "metric"]]
        lines.append(
            f"- {markdown_escape(reference)} vs {markdown_escape(baseline)} across datasets "
            "(Wilcoxon signed-rank, "
            f"alpha {alpha:g}): significantly better in {len(wins)} of {len(rows)} "
            f"metrics{' (' + ', '.join(wins) + ')' if wins else ''}, significantly "
            f"worse in {len(losses)}{' (' + ', '.join(losses) + ')' if losses else ''}."
        )
    return lines


def bayesian_sentences(bayes: BayesianResults) -> list[str]:
    """One line per baseline: the Bayesian win/tie/loss per PML dataset and the signed-rank
    verdicts across PML datasets."""
    ref = markdown_escape(bayes.reference)
    lines = [
        f"Correlated Bayesian t-test per PML dataset and Bayesian signed-rank test across "
        f"them, ROPE ±{bayes.rope:g} on the metric's scale; a conclusion needs posterior "
        f"probability >= {bayes.threshold:g}."
    ]
    totals = bayes.wtl[bayes.wtl["metric"] == "total"]
    for row in totals.itertuples(index=False):
        n = row.win + row.tie + row.loss + row.undecided
        text = (
            f"- {ref} vs {markdown_escape(row.baseline)}: per PML dataset and metric, "
            "practically better in "
            f"{row.win}, practically equivalent in {row.tie}, practically worse in "
            f"{row.loss} and undecided in {row.undecided} of {n} comparisons"
        )
        across = bayes.across[bayes.across["baseline"] == row.baseline]
        if len(across):
            named = {
                o: [_metric(m) for m in across.loc[across["outcome"] == o, "metric"]]
                for o in ("win", "tie", "loss")
            }
            undecided = int((across["outcome"] == "undecided").sum())
            parts = [
                f"{what} in {len(named[o])}" + (f" ({', '.join(named[o])})" if named[o] else "")
                for o, what in (
                    ("win", "better"),
                    ("tie", "practically equivalent"),
                    ("loss", "worse"),
                )
            ]
            text += (
                f"; across datasets (signed-rank test) {', '.join(parts)} and undecided "
                f"in {undecided} of {len(across)} metrics"
            )
        lines.append(text + ".")
    return lines
