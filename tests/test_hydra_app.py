"""The Hydra layer: launchers by class, job counting, the CLI's process state, messages."""

from __future__ import annotations

import importlib
import io
import json
import logging
import sys

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.plugins.launcher import Launcher
from omegaconf import OmegaConf

from pmlbench.core import console
from pmlbench.errors import PmlbenchError
from pmlbench.hydra_app import launchers
from pmlbench.hydra_app.config_nodes import register_config_nodes
from pmlbench.hydra_app.config_tree import config_dir
from pmlbench.hydra_app.progress import count_jobs

cli = importlib.import_module("pmlbench.cli.main")  # the module (pmlbench.cli.main is the function)
BASIC = "hydra._internal.core_plugins.basic_launcher.BasicLauncher"  # a string, as in a config
SUBMITIT = "hydra_plugins.hydra_submitit_launcher.submitit_launcher"

joblib_launcher = pytest.importorskip("hydra_plugins.hydra_joblib_launcher.joblib_launcher")


class FakeJoblibLauncher(joblib_launcher.JoblibLauncher):
    """A launcher derived from the joblib launcher, under a name that says nothing."""


class UnknownLauncher(Launcher):
    """A launcher pmlbench has never heard of."""

    def setup(self, **kwargs):  # pragma: no cover - never launched
        pass

    def launch(self, job_overrides, initial_job_idx):  # pragma: no cover
        return []


class joblib_in_name_only(UnknownLauncher):  # noqa: N801 - a misleading name on purpose
    """Says joblib in its name, is not a joblib launcher."""


def _target(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


@pytest.fixture(autouse=True)
def fresh_warnings():
    launchers._warned.clear()
    yield
    launchers._warned.clear()


# -- launchers ------------------------------------------------------------------------------


def test_a_subclass_of_the_joblib_launcher_is_recognised():
    policy = launchers.launcher_policy(
        {"_target_": _target(FakeJoblibLauncher), "n_jobs": 2}, cores=8
    )
    assert policy.known and not policy.in_process and policy.threads == 4


@pytest.mark.parametrize(("n_jobs", "threads"), [(2, 4), (-1, 1), (-3, 1), (16, 1), (1, 8)])
def test_joblib_threads_are_cores_over_parallel_jobs(n_jobs, threads):
    launcher = {"_target_": _target(joblib_launcher.JoblibLauncher), "n_jobs": n_jobs}
    assert launchers.job_threads(None, launcher, multirun=True, cores=8) == threads


@pytest.mark.parametrize("name", ["LocalLauncher", "SlurmLauncher"])
def test_submitit_launchers_give_cpus_per_task(name):
    pytest.importorskip(SUBMITIT)
    launcher = {"_target_": f"{SUBMITIT}.{name}", "cpus_per_task": 4}
    assert launchers.job_threads(None, launcher, multirun=True) == 4
    assert launchers.job_threads(None, {"_target_": f"{SUBMITIT}.{name}"}, multirun=True) == 1


def test_basic_launcher_runs_in_process_without_limit(capsys):
    launcher = {"_target_": BASIC}
    assert launchers.job_threads(None, launcher, multirun=True) is None
    assert launchers.runs_in_process(launcher, multirun=True)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("cls", [UnknownLauncher, joblib_in_name_only])
def test_unknown_launcher_warns_once_and_caps_threads_at_one(capsys, cls):
    launcher = {"_target_": _target(cls), "n_jobs": 4}
    assert launchers.job_threads(None, launcher, multirun=True, cores=8) == 1
    assert launchers.job_threads(None, launcher, multirun=True, cores=8) == 1
    assert not launchers.runs_in_process(launcher, multirun=True)
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("warning: unknown launcher " + _target(cls))
    assert "threads_per_job" in line


def test_threads_per_job_wins_and_a_single_run_has_no_limit(capsys):
    unknown = {"_target_": _target(UnknownLauncher)}
    assert launchers.job_threads(3, unknown, multirun=True) == 3
    assert launchers.job_threads(None, unknown, multirun=False) is None
    assert launchers.runs_in_process(unknown, multirun=False)
    assert capsys.readouterr().err == ""  # neither needs the launcher, so no warning
    with pytest.raises(PmlbenchError, match="threads_per_job"):
        launchers.job_threads(0, unknown, multirun=True)


# -- counting a sweep's jobs ----------------------------------------------------------------


def _old_count(config) -> int:
    """The count as pmlbench made it before: Hydra's (internal) basic sweeper itself."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    params = config.hydra.sweeper.get("params") or {}
    arguments = [f"{k}={v}" for k, v in params.items()] + list(config.hydra.overrides.task)
    overrides = OverridesParser.create().parse_overrides(arguments)
    return sum(len(batch) for batch in BasicSweeper.split_arguments(overrides, None))


@pytest.fixture(scope="module")
def hydra_configs():
    """The composed config (with Hydra's node) of a few named experiments."""
    register_config_nodes()
    GlobalHydra.instance().clear()
    configs = {}
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        for experiment in (None, "paper", "paper_sensitivity"):
            overrides = [f"+experiment={experiment}"] if experiment else []
            configs[experiment] = compose("config", overrides, return_hydra_config=True)
    GlobalHydra.instance().clear()
    return configs


@pytest.mark.parametrize(
    ("experiment", "task", "expected"),
    [
        (None, [], 1),
        (None, ["method=mlknn,ridge", "noise.rate=0.5,1.0,2.0"], 6),
        (None, ["method=mlknn,ridge", "method=lift"], 1),
        (None, ["seed=range(0,5)", "dataset=genbase,medical"], 10),
        (None, ["method=choice(mlknn,ridge)", "+foo=1,2", "foo=3"], 2 * 2),
        ("paper", ["+experiment=paper"], 120),
        ("paper", ["+experiment=paper", "dataset=genbase"], 24),
        ("paper", ["+experiment=paper", "noise.rate=0.5,1.0"], 60),
        ("paper_sensitivity", ["+experiment=paper_sensitivity"], None),
    ],
)
def test_job_count_agrees_with_the_basic_sweeper(hydra_configs, experiment, task, expected):
    config = hydra_configs[experiment].copy()
    with open_struct_free(config):
        config.hydra.overrides.task = task
    count = count_jobs(config)
    assert count == _old_count(config)
    if expected is not None:
        assert count == expected


def test_job_count_is_unknown_for_interval_sweeps_and_other_sweepers(hydra_configs):
    config = hydra_configs[None].copy()
    with open_struct_free(config):
        config.hydra.overrides.task = ["seed=interval(0,1)"]
        assert count_jobs(config) is None
        config.hydra.overrides.task = ["seed=1,2"]
        config.hydra.sweeper._target_ = _target(UnknownLauncher)  # not a basic sweeper
        assert count_jobs(config) is None


class open_struct_free:  # noqa: N801 - used like a function
    """Let a test assign to a composed (struct, read-only) config."""

    def __init__(self, config) -> None:
        self.config = config

    def __enter__(self):
        OmegaConf.set_struct(self.config, False)
        OmegaConf.set_readonly(self.config, False)
        return self.config

    def __exit__(self, *exc) -> None:
        OmegaConf.set_struct(self.config, True)


# -- the command line leaves the process as it found it -------------------------------------


def test_cli_main_leaves_sys_argv_and_hydra_state_alone(tmp_path):
    argv = [
        "method=mlknn",
        "dataset=genbase",
        "protocol.n_splits=2",
        "quiet=true",
        "results_store=null",
        "cache_dir=null",
        f"hydra.run.dir={tmp_path / 'run'}",
    ]
    before = list(sys.argv)
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    assert cli.main(argv) == 0
    assert sys.argv == before
    assert not GlobalHydra.instance().is_initialized()
    assert root.handlers == handlers and root.level == level
    assert len(pd.read_csv(tmp_path / "run" / "results.csv")) == 2 * 7
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert record["command"][1:] == argv  # what the run was asked, not pytest's argv


def test_cli_main_restores_sys_argv_when_hydra_exits(capsys):
    before = list(sys.argv)
    with pytest.raises(SystemExit):
        cli.main(["seed=[1"])  # Hydra's override grammar refuses it and exits
    assert sys.argv == before
    assert not GlobalHydra.instance().is_initialized()
    capsys.readouterr()


def test_plugin_presets_reach_hydra_through_the_search_path_plugin(capsys):
    pytest.importorskip("pmlbench_example")
    before = list(sys.argv)
    assert cli.main(["method=cwbr_cooc", "--cfg", "job"]) == 0
    assert sys.argv == before
    out = capsys.readouterr().out
    assert "name: cwbr" in out
    assert "hydra.searchpath" not in " ".join(sys.argv)


def _search_path(directory) -> list[tuple[str, str]]:
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(directory), version_base="1.3"):
        path = GlobalHydra.instance().config_loader().get_search_path().get_path()
        return [(str(e.provider), str(e.path)) for e in path]


def test_the_search_path_plugin_acts_for_pmlbench_only(tmp_path):
    assert not any(provider == "pmlbench.presets" for provider, _ in _search_path(tmp_path))
    pytest.importorskip("pmlbench_example")
    ours = _search_path(config_dir())
    providers = [provider for provider, _ in ours]
    assert providers.index("main") < providers.index("pmlbench.presets")
    assert ("pmlbench.presets", "pkg://pmlbench_example.conf") in ours


def test_api_applies_the_same_override_checks():
    from pmlbench.api import compose_config

    with pytest.raises(PmlbenchError, match="method 'mlknn' has no parameter 'kk'"):
        compose_config(["method.kk=3"])
    with pytest.raises(PmlbenchError, match="unknown method 'mlknnn'"):
        compose_config(["method=mlknnn"])


# -- messages print literally ---------------------------------------------------------------


def test_messages_print_literally(capsys):
    console.print_error("plots need matplotlib: pip install 'pmlbench[plots]'")
    console.print_warning("set metrics=[average_precision,...]")
    console.print_message("[bold]not bold[/]", stderr=False)
    captured = capsys.readouterr()
    assert "error: plots need matplotlib: pip install 'pmlbench[plots]'" in captured.err
    assert "warning: set metrics=[average_precision,...]" in captured.err
    assert captured.out.strip() == "[bold]not bold[/]"


def test_cli_errors_print_literally(capsys, monkeypatch):
    def fail(argv):
        raise PmlbenchError("plots need matplotlib: pip install 'pmlbench[plots]'")

    monkeypatch.setattr(cli, "run_hydra", fail)
    assert cli.main(["anything=1"]) == 2
    assert "pip install 'pmlbench[plots]'" in capsys.readouterr().err


def _records(values: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"metric": "average_precision", "value": values, "higher_is_better": True})


def _render(table) -> str:
    from rich.console import Console

    out = Console(width=120, record=True, file=io.StringIO())
    out.print(table)
    return out.export_text()


def test_one_split_shows_no_spread():
    text = _render(console.results_table(_records([0.31114]), "one [split]"))
    assert "0.3111" in text and "nan" not in text and "±" not in text
    assert "one [split]" in text
    text = _render(console.results_table(_records([0.3, 0.4]), "two splits"))
    assert "0.3500 ± 0.0707" in text


# -- unique default directories -------------------------------------------------------------


def test_default_run_and_sweep_directories_are_unique(hydra_configs):
    from pmlbench.hydra_app.resolvers import register_resolvers

    register_resolvers()
    hydra = OmegaConf.to_container(hydra_configs[None].hydra, resolve=False)
    assert hydra["run"]["dir"].startswith("outputs/${now:%Y-%m-%d}/${now:%H-%M-%S}_")
    assert hydra["sweep"]["dir"].endswith("_${pmlbench.unique:}")

    def resolved() -> tuple[str, str]:
        config = OmegaConf.create(
            {
                "method": {"name": "m"},
                "dataset": {"name": "d"},
                "run": hydra["run"]["dir"],
                "sweep": hydra["sweep"]["dir"],
            }
        )
        return config.run, config.sweep

    run, sweep = resolved()
    token = sweep.rsplit("_", 1)[1]
    assert len(token) == 6 and run.endswith(f"_{token}_m_d")  # one token per config
    assert resolved()[1] != sweep


def test_noise_tag_names_the_noise_level_for_directory_names():
    """Issue 35 item 7: ``${pmlbench.noise:${noise}}`` tells a sweep's noise rates apart in
    a job's directory name; defaults other than the first parameter stay unsaid."""
    from pmlbench.hydra_app.resolvers import register_resolvers

    register_resolvers()
    tags = []
    for noise in (
        {"name": "uniform", "rate": 0.5, "rounding": "half_up"},
        {"name": "uniform", "rate": 1.0, "rounding": "half_up"},
        {"name": "uniform", "rate": 1.0, "rounding": "floor"},
        {"name": "none"},
    ):
        config = OmegaConf.create({"noise": noise, "subdir": "3_m_d_${pmlbench.noise:${noise}}"})
        tags.append(config.subdir)
    assert tags == [
        "3_m_d_uniform_rate0.5",
        "3_m_d_uniform_rate1",
        "3_m_d_uniform_rate1_roundingfloor",
        "3_m_d_none",
    ]
