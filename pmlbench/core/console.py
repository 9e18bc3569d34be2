"""Terminal output: messages, progress over splits and the summary table (rich).

Every message is printed literally (rich markup off): messages quote config values and shell
commands such as ``pip install 'pmlbench[plots]'`` or ``metrics=[average_precision,...]``,
which markup would eat. Only the ``error:`` / ``warning:`` prefix is styled. Hidden
characters (controls, bidirectional and other format characters) are shown as escapes by
pmlbench.core.safe_text.visible, the one rule for every output: messages quote what
programs, files and store records say, and a terminal must only display it. Messages keep
their newlines and tabs.
"""

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
from rich.text import Text

from pmlbench.core.safe_text import visible

console = Console(stderr=False)
err_console = Console(stderr=True)


def _shown(message: str) -> str:
    """A message as the terminal shows it (:func:`visible`, newlines and tabs kept)."""
    return visible(message, keep_newlines=True)


def _prefixed(prefix: str, style: str, message: str) -> Text:
    line = Text(prefix, style=style)
    line.append(" ")
    line.append(_shown(message))  # a plain str appended to Text is never markup
    return line


def print_message(message: str, *, stderr: bool = False) -> None:
    """Print one message literally (no markup, no highlighting, no wrapping, control
    characters escaped)."""
    (err_console if stderr else console).print(
        Text(_shown(message)), soft_wrap=True, highlight=False
    )


# While a unit runs in a forked child (pmlbench.runner.timeout), its warnings are collected
# here and printed by the parent, which says each distinct one once per run.
_collected: list[tuple[str, bool]] | None = None


def collect_warnings() -> list[tuple[str, bool]]:
    """Collect the warnings printed from now on in this process instead of printing them;
    returns the list that fills up with ``(message, stderr)``."""
    global _collected
    _collected = []
    return _collected


def print_warning(message: str, *, stderr: bool = True) -> None:
    """Print ``warning: <message>`` literally (or collect it, see :func:`collect_warnings`)."""
    if _collected is not None:
        _collected.append((message, stderr))
        return
    (err_console if stderr else console).print(
        _prefixed("warning:", "yellow", message), soft_wrap=True, highlight=False
    )


def print_error(message: str, *, stderr: bool = True) -> None:
    """Print ``error: <message>`` literally (stdout with ``stderr=False``: a multirun job's
    error line then sits between the sweep's progress lines)."""
    (err_console if stderr else console).print(
        _prefixed("error:", "bold red", message), soft_wrap=True, highlight=False
    )


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


def _mean_std(mean: float, std: float) -> str:
    """``mean ± std``, or the mean alone where no spread exists (one split)."""
    if pd.isna(std):
        return f"{mean:.4f}"
    return f"{mean:.4f} ± {std:.4f}"


def results_table(records: pd.DataFrame, title: str) -> Table:
    """Mean ± std of each metric over splits (no spread for a single split)."""
    summary = summarise(records)
    table = Table(title=Text(_shown(title)))
    table.add_column("metric")
    table.add_column("", justify="center")
    table.add_column("mean" if summary["std"].isna().all() else "mean ± std", justify="right")
    table.add_column("splits", justify="right")
    for name, row in summary.iterrows():
        table.add_row(
            Text(visible(str(name))),
            "↑" if row["higher_is_better"] else "↓",
            _mean_std(row["mean"], row["std"]),
            str(int(row["n"])),
        )
    return table
