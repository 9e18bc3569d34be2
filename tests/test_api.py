"""pmlbench.api.load_results: the rows of results.csv (or of a store) as one DataFrame."""

from __future__ import annotations

import io
import subprocess
import sys
from functools import partial
from pathlib import Path

import pandas as pd
import pytest

from pmlbench.api import load_results
from pmlbench.errors import PmlbenchError
from pmlbench.runner.store import load_records


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> dict[str, Path]:
    """A real multirun (mlknn and ridge on genbase at two noise rates, two splits) that also
    fills a result store."""
    root = tmp_path_factory.mktemp("api")
    store, runs = root / "store", root / "multirun"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pmlbench",
            "-m",
            "method=mlknn,ridge",
            "dataset=genbase",
            "noise.rate=0.5,1.0",
            "protocol.n_splits=2",
            f"results_store={store}",
            "cache_dir=null",
            "quiet=true",
            f"hydra.sweep.dir={runs}",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return {"store": store, "runs": runs}


def _csv_rows(root: Path) -> pd.DataFrame:
    files = sorted(root.rglob("results.csv"))
    assert len(files) == 4
    return pd.concat([pd.read_csv(f) for f in files], ignore_index=True)


def test_multirun_rows_are_those_of_its_results_csv_files(sweep):
    # the same rows and values; text columns may come back as pandas' string type, since the
    # report escapes control characters in every text it loads
    same = partial(pd.testing.assert_frame_equal, check_dtype=False)
    records = load_results(sweep["runs"])
    same(records, _csv_rows(sweep["runs"]))
    assert len(records) == 4 * 2 * 7  # jobs x splits x metrics
    # one run directory, given as text, and a list of run directories
    one = sorted(sweep["runs"].glob("*/results.csv"))[0]
    same(load_results(str(one.parent)), pd.read_csv(one))
    # a run read twice is counted once, as pmlbench report counts it
    same(load_results([one.parent, one.parent]), pd.read_csv(one))


def test_store_rows_are_the_stores(sweep):
    records = load_results(sweep["store"])
    pd.testing.assert_frame_equal(records, load_records(sweep["store"]))
    # the same results as the run directories, in another order and with unit_key (through
    # CSV, which reads an empty text as NaN)
    key = ["method", "noise_rate", "seed", "split", "metric"]
    from_csv = _csv_rows(sweep["runs"]).sort_values(key).reset_index(drop=True)
    from_store = records.drop(columns="unit_key").sort_values(key).reset_index(drop=True)
    as_csv = pd.read_csv(io.StringIO(from_store[from_csv.columns].to_csv(index=False)))
    pd.testing.assert_frame_equal(as_csv, from_csv, check_dtype=False)


def test_source_column_and_errors(sweep, tmp_path):
    records = load_results(sweep["runs"], source=True)
    assert records["source"].map(lambda s: Path(s).name).eq("results.csv").all()
    assert records["source"].nunique() == 4
    with pytest.raises(PmlbenchError, match="does not exist"):
        load_results(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(PmlbenchError, match="no results.csv found"):
        load_results(tmp_path / "empty")
