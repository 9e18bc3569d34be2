"""Terminal output: progress over splits and the summary table (rich)."""

from __future__ import annotations

import pandas as pd
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

console = Console(stderr=False)


def split_progress(quiet: bool = False) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        disable=quiet,
        transient=False,
    )


def summarise(records: pd.DataFrame) -> pd.DataFrame:
    """Mean and sample standard deviation (ddof = 1) of each metric over splits."""
    grouped = records.groupby("metric", sort=False)
    summary = grouped["value"].agg(mean="mean", std=lambda v: v.std(ddof=1), n="count")
    summary["higher_is_better"] = grouped["higher_is_better"].first()
    return summary


def results_table(records: pd.DataFrame, title: str) -> Table:
    table = Table(title=title)
    table.add_column("metric")
    table.add_column("", justify="center")
    table.add_column("mean ± std", justify="right")
    table.add_column("splits", justify="right")
    for name, row in summarise(records).iterrows():
        table.add_row(
            name,
            "↑" if row["higher_is_better"] else "↓",
            f"{row['mean']:.4f} ± {row['std']:.4f}",
            str(int(row["n"])),
        )
    return table
