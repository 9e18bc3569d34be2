"""The hierarchical Bayesian comparison of the reference with every other method
(``--bayesian --hierarchical``; :mod:`pmlbench.stats.hierarchical`).

Per metric and baseline, the model takes the split-level differences of the blocks both
methods have: with ``--blocks dataset`` one row per dataset whose split j holds the mean over
the noise levels both methods have of split j's difference (the noise levels of a dataset
share its train/test partitions, so the correlation between splits is unchanged), with
``--blocks level`` one row per PML dataset. The model needs the same number of splits in
every row; rows with another number are left out and named in a note. The correlation
between splits is rho = n_test / (n_test + n_train) of the records (0.5 for 50/50 splits).

Written as bayes_hierarchical.{csv,md}.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pmlbench.errors import PmlbenchError
from pmlbench.report.prepare import Prepared
from pmlbench.report.render import markdown_escape, markdown_table, metric_name
from pmlbench.stats.bayesian import bayesian_outcome
from pmlbench.stats.hierarchical import MISSING, have_stan, hierarchical_bayesian

COLUMNS = [
    "baseline",
    "metric",
    "n_datasets",
    "n_splits",
    "rho",
    "rope",
    "mean_difference",
    "p_reference_better",
    "p_equivalent",
    "p_baseline_better",
    "outcome",
]
NAME = "hierarchical Bayesian model over split-level results (Benavoli et al. 2017)"


def split_differences(
    prepared: Prepared, metric: str, reference: str, baseline: str, blocks: str
) -> tuple[pd.DataFrame, pd.DataFrame, float]:
    """(reference, baseline) rows x splits tables of one metric and the mean rho."""
    rows = prepared.records[
        (prepared.records["metric"] == metric)
        & prepared.records["method"].isin([reference, baseline])
    ]
    key = ["dataset", "level", "seed", "split"]
    wide = rows.set_index([*key, "method"])["value"].unstack("method")
    if reference not in wide or baseline not in wide:
        empty = pd.DataFrame()
        return empty, empty, float("nan")
    wide = wide[[reference, baseline]].dropna()
    if {"n_train", "n_test"} <= set(rows.columns):
        sizes = rows.groupby(key)[["n_train", "n_test"]].first().reindex(wide.index)
        rho = float((sizes["n_test"] / (sizes["n_test"] + sizes["n_train"])).mean())
    else:
        raise PmlbenchError(
            "the hierarchical test needs the n_train and n_test columns of results.csv"
        )
    row = ["dataset"] if blocks == "dataset" else ["dataset", "level"]
    per_split = wide.groupby([*row, "seed", "split"]).mean()
    ref = per_split[reference].unstack(["seed", "split"])
    base = per_split[baseline].unstack(["seed", "split"])
    return ref, base, rho


def hierarchical_tests(
    prepared: Prepared,
    reference: str,
    rope: float,
    threshold: float,
    blocks: str,
    notes: list[str],
    seed: int = 0,
) -> pd.DataFrame:
    """One row per baseline and metric (columns :data:`COLUMNS`)."""
    if not have_stan():
        raise PmlbenchError(MISSING)
    out = []
    for metric in prepared.metrics:
        for baseline in (m for m in prepared.methods if m != reference):
            ref, base, rho = split_differences(prepared, metric, reference, baseline, blocks)
            if ref.empty:
                continue
            counts = ref.notna().sum(axis=1)
            n = int(counts.mode().max())
            keep = counts == n
            if (~keep).any():
                notes.append(
                    f"{metric}, {reference} vs {baseline}: the hierarchical test leaves out "
                    f"{int((~keep).sum())} blocks with other than {n} matched splits"
                )
            a = np.vstack([r[~np.isnan(r)] for r in ref[keep].to_numpy()])
            b = np.vstack([r[~np.isnan(r)] for r in base[keep].to_numpy()])
            if n < 2:
                continue
            result = hierarchical_bayesian(
                a,
                b,
                rope=rope,
                rho=rho,
                higher_is_better=prepared.directions[metric],
                seed=seed,
            )
            out.append(
                {
                    "baseline": baseline,
                    "metric": metric,
                    "n_datasets": result.n_datasets,
                    "n_splits": result.n_splits,
                    "rho": result.rho,
                    "rope": result.rope,
                    "mean_difference": result.mean_difference,
                    "p_reference_better": result.p_a_better,
                    "p_equivalent": result.p_equivalent,
                    "p_baseline_better": result.p_b_better,
                    "outcome": bayesian_outcome(
                        result.p_a_better, result.p_equivalent, result.p_b_better, threshold
                    ),
                }
            )
    return pd.DataFrame(out, columns=COLUMNS)


def describe(frame: pd.DataFrame, reference: str, threshold: float) -> str:
    rope = float(frame["rope"].iloc[0]) if len(frame) else float("nan")
    return (
        f"{reference} against each method: {NAME}, ROPE ±{rope:g} on the metric's scale; "
        f"P(better), P(practically equivalent), P(worse) for a new dataset (shares of "
        f"posterior samples, as baycomp reports them); a win, tie or loss needs >= "
        f"{threshold:g}, else undecided."
    )


def to_markdown(frame: pd.DataFrame, reference: str, threshold: float) -> str:
    rows = [
        [
            markdown_escape(r.baseline),
            metric_name(r.metric),
            str(r.n_datasets),
            str(r.n_splits),
            f"{r.mean_difference:+.4f}",
            f"{r.p_reference_better:.3f}",
            f"{r.p_equivalent:.3f}",
            f"{r.p_baseline_better:.3f}",
            r.outcome,
        ]
        for r in frame.itertuples(index=False)
    ]
    return (
        f"# Hierarchical Bayesian comparison of {reference}\n\n"
        + describe(frame, reference, threshold)
        + "\n\n"
        + markdown_table(
            [
                "vs",
                "metric",
                "datasets",
                "splits",
                "mean difference",
                f"P({reference} better)",
                "P(equivalent)",
                "P(baseline better)",
                "outcome",
            ],
            rows,
            ["l", "l", "r", "r", "r", "r", "r", "r", "l"],
        )
    )
