"""``+experiment=suite``: every built-in method on 45 synthetic and 4 natural PML datasets.

The sweep is method x case; each case (conf/experiment/suite_case/<case>.yaml) selects one
dataset and, for the synthetic ones, one noise rate. The list of cases in
conf/experiment/suite.yaml is the one list; the case files follow from it. Regenerate them
after editing the list:

    python tests/test_suite.py --write

A reduced suite (2 methods x 2 cases x 2 splits, through the same config) runs end to end
here, then ``pmlbench report --leaderboard`` on its store; tests/test_leaderboard.py checks
the page it writes.
"""

from __future__ import annotations

import sys
from collections import Counter
from functools import cache
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import OmegaConf

from pmlbench.hydra_app.config_tree import config_dir
from pmlbench.methods.pml3er import PML3ER
from tests.helpers import (
    CASE_KEY,
    LEADERBOARD,
    REDUCED_CASES,
    REDUCED_METHODS,
    reduced_suite,
    suite_cases,
    suite_params,
)

EXPERIMENTS = config_dir() / "experiment"
CASES_DIR = EXPERIMENTS / "suite_case"
SYNTHETIC = (
    "arts",
    "bibtex",
    "corel5k",
    "genbase",
    "medical",
    "emotions",
    "yeast",
    "enron",
    "cal500",
    "slashdot",
    "languagelog",
    "recreation",
    "science",
    "corel16k001",
    "delicious",
)
RATES = ("0.5", "1.0", "2.0")
NATURAL = ("yeastbp", "yeastcc", "yeastmf", "mirflickr5k")
NOT_BENCHMARKED = {"external"}  # a wrapper around other programs, not a method of its own

# the reduced suite: 2 methods x 2 cases (one synthetic, one real) x 2 splits


# ---------------------------------------------------------------------------- the case files


def case_yaml(case: str) -> str:
    """The text of a case file, from its name: ``<dataset>_rate<r>`` or ``<dataset>``."""
    dataset, sep, rate = case.partition("_rate")
    if sep:
        return (
            "# @package _global_\n"
            f"# A case of +experiment=suite: {dataset} with uniform candidate noise at rate "
            f"{rate}.\n"
            "# Written by `python tests/test_suite.py --write` from suite.yaml's list.\n"
            "defaults:\n"
            f"  - override /dataset: {dataset}\n"
            "noise:\n"
            f"  rate: {rate}\n"
        )
    return (
        "# @package _global_\n"
        f"# A case of +experiment=suite: {dataset} with its natural candidate labels (no noise\n"
        "# model is applied to them, so the noise config keeps its default and no rate is\n"
        "# swept). Written by `python tests/test_suite.py --write` from suite.yaml's list.\n"
        "defaults:\n"
        f"  - override /dataset: {dataset}\n"
    )


def write_cases() -> list[Path]:
    """Write every case file of suite.yaml's list and remove files of cases not in it."""
    CASES_DIR.mkdir(exist_ok=True)
    cases = suite_cases()
    written = []
    for case in cases:
        path = CASES_DIR / f"{case}.yaml"
        path.write_text(case_yaml(case))
        written.append(path)
    for path in CASES_DIR.glob("*.yaml"):
        if path.stem not in cases:
            path.unlink()
    return written


def test_the_cases_are_fifteen_datasets_at_three_rates_and_four_natural_ones():
    expected = [f"{d}_rate{r}" for d in SYNTHETIC for r in RATES] + list(NATURAL)
    assert suite_cases() == expected
    assert len(set(expected)) == 49


def test_every_case_file_follows_from_the_list():
    on_disk = {p.stem: p.read_text() for p in CASES_DIR.glob("*.yaml")}
    assert sorted(on_disk) == sorted(suite_cases()), "run `python tests/test_suite.py --write`"
    for case, text in on_disk.items():
        assert text == case_yaml(case), f"{case}.yaml: run `python tests/test_suite.py --write`"


def test_the_suite_runs_every_built_in_method():
    from pmlbench.plugins import registry

    built_in = {
        name
        for name, info in registry.plugins("method").items()
        if info.distribution == "pmlbench" and name not in NOT_BENCHMARKED
    }
    methods = suite_params()["method"].split(",")
    assert len(methods) == len(set(methods))
    assert set(methods) == built_in
    assert {"ridge", "pml3er", "nlr", "pml_ld"} <= set(methods)


def test_the_docs_commands_that_add_a_method_to_the_suite_keep_every_built_in_one():
    """An override replaces the suite's whole method list, so a documented command that adds
    a method must still name every suite method, or its page silently loses some."""
    import re

    suite = suite_params()["method"].split(",")
    root = Path(__file__).resolve().parents[1]
    found = 0
    # the leaderboard page records the commands its units ran, passes of a few methods each
    docs = sorted((root / "docs").glob("*.md"))
    pages = [p for p in docs if not p.name.startswith("leaderboard")]
    for page in [root / "README.md", *pages]:
        for listed in re.findall(
            r"\+experiment=suite[^\n]*?\n?\s*method=([a-z0-9_,]+)", page.read_text()
        ):
            methods = listed.split(",")
            if len(methods) > len(suite) // 2:  # a whole list, not a narrowed suite
                found += 1
                missing = [m for m in suite if m not in methods]
                assert not missing, f"{page.name}: method={listed} leaves out {missing}"
    assert found, "no documented command adds a method to the whole suite"


# ---------------------------------------------------------------------------- composition


@pytest.fixture(scope="module")
def composed():
    """The suite's composed config, and a function composing one job of it."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from pmlbench.hydra_app.config_nodes import register_config_nodes

    register_config_nodes()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        suite = compose("config", ["+experiment=suite"], return_hydra_config=True)

        def job(overrides: list[str]):
            return compose("config", ["+experiment=suite", *overrides])

        yield suite, job
    GlobalHydra.instance().clear()


def _jobs(config) -> list[list[str]]:
    """Every job of the sweep as its list of overrides, as Hydra's basic sweeper makes them."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    params = config.hydra.sweeper.params
    arguments = [f"{k}={v}" for k, v in params.items()] + list(config.hydra.overrides.task)
    overrides = OverridesParser.create().parse_overrides(arguments)
    return [job for batch in BasicSweeper.split_arguments(overrides, None) for job in batch]


@cache
def _has_natural_candidates(dataset: str) -> bool:
    from pmlbench.plugins import registry

    return registry.load("dataset", dataset)().Y_candidates is not None


def test_the_suite_is_methods_x_cases_jobs_without_duplicates(composed):
    from pmlbench.hydra_app.progress import count_jobs

    suite, job = composed
    methods = suite_params()["method"].split(",")
    assert count_jobs(suite) == len(methods) * (15 * 3 + 4) == 931
    jobs = _jobs(suite)
    assert len(jobs) == 931

    # what each case composes to: its dataset, and the noise rate where one is applied
    cases: dict[str, tuple[str, str]] = {}
    for case in suite_cases():
        config = job([f"{CASE_KEY}={case}"])
        dataset = str(config.dataset.name)
        natural = _has_natural_candidates(dataset)
        assert natural == (dataset in NATURAL), dataset
        assert config.noise.name == "uniform"
        assert config.protocol.n_splits == 5 and config.protocol.test_size == 0.5
        cases[case] = (dataset, "natural" if natural else f"{float(config.noise.rate):g}")

    units = []
    for overrides in jobs:
        chosen = dict(o.split("=", 1) for o in overrides)
        units.append((chosen["method"], *cases[chosen[CASE_KEY]]))
    assert len(set(units)) == len(units) == 931, [u for u, n in Counter(units).items() if n > 1]
    per_dataset = Counter((method, dataset) for method, dataset, _ in units)
    for method in methods:
        for dataset in NATURAL:
            assert per_dataset[method, dataset] == 1  # no noise-rate duplicates
        for dataset in SYNTHETIC:
            rates = sorted(r for m, d, r in units if (m, d) == (method, dataset))
            assert rates == ["0.5", "1", "2"]


def test_each_method_keeps_its_default_tuning_grid(composed):
    _, job = composed
    pml3er = job(["method=pml3er", f"{CASE_KEY}=genbase_rate0.5"])
    assert list(pml3er.tune.grid.lambda2) == list(PML3ER.default_tuning_grid["lambda2"])
    assert pml3er.dataset.name == "genbase" and pml3er.noise.rate == 0.5
    mlknn = job(["method=mlknn", f"{CASE_KEY}=yeastbp"])
    assert mlknn.dataset.name == "yeastbp" and mlknn.noise.rate == 1.0


def test_overrides_narrow_the_suite(composed):
    from omegaconf import open_dict

    from pmlbench.hydra_app.progress import count_jobs

    suite, _ = composed
    narrowed = suite.copy()
    OmegaConf.set_readonly(narrowed, False)
    with open_dict(narrowed):
        narrowed.hydra.overrides.task = [
            f"method={','.join(REDUCED_METHODS)}",
            f"{CASE_KEY}={','.join(REDUCED_CASES)}",
            "protocol.n_splits=2",
        ]
    assert count_jobs(narrowed) == 4
    plus_one = suite.copy()
    OmegaConf.set_readonly(plus_one, False)
    with open_dict(plus_one):
        plus_one.hydra.overrides.task = [f"method={suite_params()['method']},cwbr"]
    n_methods = len(suite_params()["method"].split(","))
    assert count_jobs(plus_one) == (n_methods + 1) * 49 == 20 * 49


# ---------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def suite_root(tmp_path_factory) -> Path:
    return reduced_suite(tmp_path_factory.getbasetemp() / "reduced_suite")


@pytest.mark.slow
def test_the_reduced_suite_runs_end_to_end_then_its_leaderboard(suite_root):
    from pmlbench.runner.store import iter_records, load_unfinished

    jobs = sorted(p.name for p in (suite_root / "sweep").iterdir() if p.is_dir())
    assert jobs == [
        "0_mlknn_emotions_rate1.0",
        "1_mlknn_mirflickr5k",
        "2_ridge_emotions_rate1.0",
        "3_ridge_mirflickr5k",
    ]
    results = pd.concat(pd.read_csv(suite_root / "sweep" / j / "results.csv") for j in jobs)
    assert set(results["dataset"]) == {"emotions", "mirflickr5k"}
    assert set(results.loc[results["dataset"] == "mirflickr5k", "noise"]) == {"natural"}
    assert set(results.loc[results["dataset"] == "emotions", "noise_rate"]) == {1.0}
    records = list(iter_records(suite_root / "store"))
    assert len(records) == 2 * 2 * 2
    # each unit names the command that computed it, without its run directory's run.json
    for record in records:
        command = record["run"]["command"]
        assert command[1:3] == ["-m", "+experiment=suite"] and "quiet=true" in command
    unfinished = load_unfinished(suite_root / "store")
    assert list(unfinished["status"]) == ["not_applicable"] * 2
    table2 = pd.read_csv(suite_root / "report" / "table2.csv")
    assert set(table2["method"]) == set(REDUCED_METHODS)
    page = (suite_root / LEADERBOARD).read_text()
    assert page.startswith("# PML benchmark leaderboard")
    assert (suite_root / "docs" / "leaderboard" / "cd_average_precision.svg").exists()


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_suite.py --write  (writes conf/experiment/suite_case/)")
    for path in write_cases():
        print(path)
