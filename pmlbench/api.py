"""The Python API: compose a config from overrides and run it, and load results as data,
without the command line.

>>> from pmlbench.api import load_results, run
>>> result = run(["method=mlknn", "dataset=genbase", "protocol.n_splits=2"], "outputs/demo")
>>> records = load_results("outputs/demo")
>>> records.groupby("metric")["value"].mean()
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pmlbench.protocol.experiment import ExperimentResult

if TYPE_CHECKING:
    import pandas as pd


def compose_config(overrides: list[str] | None = None) -> dict[str, Any]:
    """The resolved config dict that ``python -m pmlbench <overrides>`` would run."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from pmlbench.hydra_app.config_nodes import register_config_nodes
    from pmlbench.hydra_app.config_tree import config_dir, config_to_dict
    from pmlbench.hydra_app.overrides import check_overrides, pin_explicit_parameters

    overrides = list(overrides or [])
    check_overrides(overrides)
    overrides = pin_explicit_parameters(overrides)
    register_config_nodes()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides)
    return config_to_dict(cfg)


def run(overrides: list[str] | None, out_dir: str | Path, quiet: bool = True) -> ExperimentResult:
    """Run one experiment and write its results into ``out_dir``."""
    from pmlbench.runner.run import run_config

    return run_config(compose_config(overrides), Path(out_dir), quiet=quiet)


def load_results(paths: str | Path | Iterable[str | Path], *, source: bool = False) -> pd.DataFrame:
    """The result rows under ``paths`` as one tidy DataFrame, read as ``pmlbench report``
    reads them.

    ``paths`` is one path or several: run directories, multirun (sweep) directories,
    searched recursively for results.csv, single results.csv files, or result stores. The
    rows are those of results.csv, one per unit (split) and metric with the same columns, in
    file order (files sorted by path); a store's rows carry its ``unit_key`` column too. A
    unit read more than once (a sweep rerun into the same or another directory, a store
    read beside its run directories, a path given twice) gives its rows once, the first
    read (pmlbench.report.sources.one_row_per_unit), as ``pmlbench report`` counts it once.
    With ``source=True`` a ``source`` column names the file each row came from. Units that
    failed and runs that never finished contribute no rows (``pmlbench report`` lists them).

    Raises:
        PmlbenchError: a path does not exist, holds no results, or holds a damaged
            results.csv.
    """
    from pmlbench.report.sources import load_results as load
    from pmlbench.report.sources import one_row_per_unit

    if isinstance(paths, (str, Path)):
        paths = [paths]
    records = one_row_per_unit(load(paths).records)
    if not source:
        records = records.drop(columns=["source"], errors="ignore")
    return records.reset_index(drop=True)
