"""A sweep's jobs planned in this process (pmlbench.hydra_app.sweep_plan): the same configs
Hydra's launcher would compose, from one composition per distinct choice of config groups;
the paper experiment's dry run without recomposing each job; the sweep's ETA from the cost
model, calibrated as jobs finish (pmlbench.hydra_app.progress)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.types import RunMode
from omegaconf import OmegaConf

from pmlbench.hydra_app.config_nodes import register_config_nodes
from pmlbench.hydra_app.config_tree import config_dir, config_to_dict
from pmlbench.hydra_app.progress import DRY_RUN_SWEEPER, count_jobs, sweep_status
from pmlbench.hydra_app.resolvers import register_resolvers
from pmlbench.hydra_app.sweep_plan import JobConfigs, sweep_jobs
from pmlbench.runner.costmodel import CostModel, record_work
from pmlbench.runner.dryrun import read_job_plans
from pmlbench.runner.format import SWEEP_PROGRESS_FILE, UNITS_FILE
from pmlbench.runner.store import iter_records


@pytest.fixture
def loader():
    """Hydra's config loader for pmlbench's config tree (as ``python -m pmlbench`` has it)."""
    register_resolvers()
    register_config_nodes()
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        yield GlobalHydra.instance().config_loader()


def master(loader, *overrides: str):
    """A multirun's primary config, as Hydra composes it for ``-m <overrides>``."""
    return loader.load_configuration(
        config_name="config",
        overrides=[*overrides, "hydra.mode=MULTIRUN"],
        run_mode=RunMode.MULTIRUN,
    )


@pytest.mark.parametrize(
    "overrides, compositions",
    [
        # groups and values on the command line: one composition per method x dataset
        (["method=mlknn,lift", "dataset=genbase,emotions", "noise.rate=0.5,1.0",
          "tune.cv=3,5", "protocol.n_splits=2", "hydra.job.config.override_dirname.kv_sep=-",
          "hydra.sweep.subdir=${hydra.job.num}_${hydra.job.override_dirname}"], 4),
        # a named experiment's sweep params (and its overrides of the noise group)
        (["+experiment=paper", "method=mlknn,lift", "dataset=genbase"], 2),
        # a group inside the experiment's params, the subdir from Hydra's resolver: every
        # job its own choice of groups
        (["+experiment=suite", "method=ridge",
          "+experiment/suite_case=genbase_rate0.5,yeastbp"], 2),
        # a mapping value is composed, not derived
        (["method=mlknn", "tune.grid={k:[5,10]},{k:[3]}"], 2),
        # a glob over a group's options, as the suite's sittings sweep a dataset's cases
        (["+experiment=suite", "method=ridge,mlknn", "+experiment/suite_case=glob(genbase_*)"], 6),
    ],
)  # fmt: skip
def test_job_configs_are_hydras_own_from_fewer_compositions(loader, overrides, compositions):
    primary = master(loader, *overrides)
    jobs = sweep_jobs(primary)
    assert len(jobs) == count_jobs(primary)
    configs = JobConfigs(loader, primary)
    for num, job in enumerate(jobs):
        ours = configs.config(job, num)
        hydras = loader.load_sweep_config(primary, list(job))
        with _open(hydras):
            hydras.hydra.job.id = num
            hydras.hydra.job.num = num
        assert OmegaConf.to_container(ours) == OmegaConf.to_container(hydras), job
        assert resolved(ours) == resolved(hydras), job
    assert configs.compositions == compositions <= len(jobs)


def test_a_glob_over_a_groups_options_gives_the_basic_sweepers_jobs(loader):
    """``glob(...)`` of a config group is listed by Hydra's config loader: the jobs are the
    basic sweeper's own, in its order, so a suite sitting's progress has a total and an ETA."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    overrides = ["+experiment=suite", "method=ridge", "+experiment/suite_case=glob(genbase_*)"]
    primary = master(loader, *overrides)
    params = [f"{k}={v}" for k, v in (primary.hydra.sweeper.get("params") or {}).items()]
    parsed = OverridesParser.create(config_loader=loader).parse_overrides(
        params + list(primary.hydra.overrides.task)
    )
    (hydras,) = BasicSweeper.split_arguments(parsed, None)
    assert sweep_jobs(primary) == hydras
    cases = [o for job in hydras for o in job if o.startswith("+experiment/suite_case=")]
    assert cases == [f"+experiment/suite_case=genbase_rate{r}" for r in ("0.5", "1.0", "2.0")]
    assert count_jobs(primary) == 3


def resolved(cfg) -> tuple:
    """A job's task config as the task gets it (no hydra node) and its directory, resolved
    with the job's config as the current Hydra config."""
    from hydra.core.hydra_config import HydraConfig

    HydraConfig.instance().set_config(cfg)
    task = OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"])
    return config_to_dict(task), str(OmegaConf.select(cfg, "hydra.sweep.subdir"))


class _open:  # noqa: N801 - used like a function
    """Let a test set a composed config's job number (Hydra's launcher does the same)."""

    def __init__(self, config) -> None:
        self.config = config

    def __enter__(self):
        from omegaconf import open_dict, read_write

        self.contexts = [read_write(self.config.hydra), open_dict(self.config.hydra)]
        for c in self.contexts:
            c.__enter__()

    def __exit__(self, *exc) -> None:
        for c in reversed(self.contexts):
            c.__exit__(*exc)


def test_the_paper_dry_run_composes_each_method_and_dataset_once(tmp_path, monkeypatch, capsys):
    """Hydra's own sweep composes every job twice (validation, then the launcher): 240
    compositions for the paper's 120 jobs. The dry run composes the 30 distinct choices of
    method and dataset once each, and still plans all 600 units."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    from pmlbench.cli.main import main

    calls = {"load_configuration": 0, "load_sweep_config": 0}
    for name in calls:
        original = getattr(ConfigLoaderImpl, name)

        def counted(self, *args, _original=original, _name=name, **kwargs):
            calls[_name] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(ConfigLoaderImpl, name, counted)
    monkeypatch.chdir(tmp_path)
    sweep = tmp_path / "sweep"
    store = f"results_store={tmp_path / 'store'}"
    argv = ["-m", "+experiment=paper", "dry_run=true", "quiet=true", store, "cache_dir=null",
            f"hydra.sweep.dir={sweep}"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert calls["load_sweep_config"] == 6 * 5  # methods x datasets; not 2 x 120
    # and the primary config (Hydra composes it twice: its mode, then the config)
    assert calls["load_configuration"] == 2 + 30
    plans = read_job_plans(sweep)
    assert len(plans) == 120 and sum(len(p.units) for p in plans) == 600
    assert sorted(p.name for p in sweep.iterdir() if p.is_dir()) == sorted(
        f"{i}_{m}_{d}_rate{r}" for i, (m, d, r) in enumerate(
            (m, d, r) for m in "pml3er particle_map mlknn lift pml_ni pml_lrs".split()
            for d in "arts bibtex corel5k genbase medical".split()
            for r in ("0.5", "1.0", "1.5", "2.0"))
    )  # fmt: skip
    assert (sweep / "multirun.yaml").is_file()
    jobs = [line for line in out if line.startswith("dry run: method=")]
    assert len(jobs) == 120 and all(": 5 units: 5 missing" in line for line in jobs)
    summary = out[-1]
    assert summary.startswith(
        "dry run: 600 units: 0 done, 0 failed, 0 n/a, 0 timed out, 600 missing"
    )
    assert "estimated" in summary and "unknown" not in summary and summary.endswith("; 120 jobs")


def test_a_dry_run_swaps_in_its_sweeper_only_for_the_basic_one(loader, tmp_path):
    from hydra_plugins.pmlbench_dry_run import pmlbench_dry_run
    from pmlbench.hydra_app.progress import SweepProgress

    assert f"{pmlbench_dry_run.__name__}.DryRunSweeper" == DRY_RUN_SWEEPER
    sweep = f"hydra.sweep.dir={tmp_path / 'sweep'}"
    primary = master(loader, "method=mlknn,lift", "dry_run=true", sweep)
    SweepProgress().on_multirun_start(primary)
    assert primary.hydra.sweeper._target_ == DRY_RUN_SWEEPER
    assert json.loads((tmp_path / "sweep" / SWEEP_PROGRESS_FILE).read_text())["total_jobs"] == 2
    # an interval sweep is no basic sweep's: Hydra's sweeper stays and refuses it
    interval = master(loader, "seed=interval(0,1)", "dry_run=true", sweep)
    SweepProgress().on_multirun_start(interval)
    assert interval.hydra.sweeper._target_ != DRY_RUN_SWEEPER
    # a real run keeps Hydra's sweeper
    real = master(loader, "method=mlknn,lift", "quiet=true", sweep)
    SweepProgress().on_multirun_start(real)
    assert real.hydra.sweeper._target_ != DRY_RUN_SWEEPER


# -- the ETA -------------------------------------------------------------------------------


def fake_sweep(root: Path, estimates: dict[str, float | None], parallel: int = 1) -> Path:
    """A sweep directory as SweepProgress leaves it, started at t = 1000."""
    root.mkdir()
    info = {"total_jobs": len(estimates), "start": 1000.0, "parallel": parallel,
            "estimates": estimates}  # fmt: skip
    (root / SWEEP_PROGRESS_FILE).write_text(json.dumps(info))
    return root


def start_job(sweep: Path, name: str, at: float) -> None:
    """Job ``name`` started at time ``at`` (Hydra writes its .hydra/ record first)."""
    (sweep / name / ".hydra").mkdir(parents=True)
    os.utime(sweep / name / ".hydra", (at, at))


def finish_job(sweep: Path, name: str) -> None:
    (sweep / name).mkdir(exist_ok=True)
    (sweep / name / UNITS_FILE).write_text("[]")


def test_the_eta_comes_from_the_estimates_until_a_job_finishes_then_from_the_sweep(tmp_path):
    sweep = fake_sweep(tmp_path / "s", {"0_a": 100.0, "1_b": 300.0, "2_c": 600.0}, parallel=2)
    # before anything ran: all 1,000 estimated CPU seconds on two jobs at a time
    assert sweep_status(sweep, now=1000.0)["eta"] == pytest.approx(500.0)
    # two jobs running for 50 s: their estimates less the 50 s each has run, still /2
    start_job(sweep, "0_a", 1000.0)
    start_job(sweep, "1_b", 1000.0)
    status = sweep_status(sweep, now=1050.0)
    assert status["done"] == 0 and status["elapsed"] == pytest.approx(50.0)
    assert status["eta"] == pytest.approx((1000 - 100) / 2)
    # job a ends after 150 s (the machine is half as fast as estimated): from then on the
    # estimates still to come at the sweep's rate of wall seconds per estimated CPU second
    finish_job(sweep, "0_a")
    status = sweep_status(sweep, now=1150.0)
    assert status["done"] == 1 and status["total"] == 3
    progress = 100 + 150  # a, and b's 150 s of running (up to its 300)
    assert status["eta"] == pytest.approx(150 / progress * (900 - 150))
    # the running job's credit stops at its estimate
    start_job(sweep, "2_c", 1150.0)
    status = sweep_status(sweep, now=1500.0)
    progress = 100 + 300 + 350
    assert status["eta"] == pytest.approx(500 / progress * (900 - 300 - 350))
    finish_job(sweep, "1_b")
    finish_job(sweep, "2_c")
    assert sweep_status(sweep, now=1600.0)["eta"] == pytest.approx(0.0)


def test_a_job_without_an_estimate_counts_as_the_mean_and_without_any_the_job_count_rules(
    tmp_path,
):
    sweep = fake_sweep(tmp_path / "s", {"0_a": 100.0, "1_b": None, "2_c": 300.0})
    assert sweep_status(sweep, now=1000.0)["eta"] == pytest.approx(100 + 200 + 300)
    none = fake_sweep(tmp_path / "n", {"0_a": None, "1_b": None})
    assert sweep_status(none, now=1010.0)["eta"] is None  # nothing known, nothing finished
    finish_job(none, "0_a")
    assert sweep_status(none, now=1010.0)["eta"] == pytest.approx(10.0)  # 10 s per job
    # all reused so far (estimated 0 s): the estimates as they are
    reused = fake_sweep(tmp_path / "r", {"0_a": 0.0, "1_b": 40.0})
    finish_job(reused, "0_a")
    assert sweep_status(reused, now=1030.0)["eta"] == pytest.approx(40.0)


def test_a_sweep_records_each_jobs_estimate_under_its_directory(tmp_path):
    """A real sweep: the callback plans every job before the first starts and the ETA of
    each job's line comes from those estimates."""
    sweep = tmp_path / "sweep"
    result = subprocess.run(
        [sys.executable, "-m", "pmlbench", "-m", "method=mlknn,pml3er", "dataset=genbase",
         "noise.rate=0.5,1.0", "protocol.n_splits=1", f"results_store={tmp_path / 'store'}",
         "cache_dir=null", f"hydra.sweep.dir={sweep}"],
        capture_output=True, text=True, cwd=tmp_path, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    info = json.loads((sweep / SWEEP_PROGRESS_FILE).read_text())
    jobs = sorted(p.name for p in sweep.iterdir() if (p / UNITS_FILE).exists())
    assert len(jobs) == 4 and sorted(info["estimates"]) == jobs
    assert info["parallel"] == 1 and info["total_jobs"] == 4
    # from an empty store, each job's estimate is the shipped cost model's for its unit, on
    # the training instances and with the tuning the unit then had
    model = CostModel.load()
    size = model.dataset_size("genbase")
    for record in iter_records(tmp_path / "store"):
        job = Path(record["run"]["run_dir"]).name
        expected = model.estimate(
            record["unit"]["method"]["name"], record["split"]["n_train"], size[1], size[2],
            record_work(record), "genbase",
        )  # fmt: skip
        assert expected.how == "model"
        assert info["estimates"][job] == pytest.approx(expected.seconds, rel=1e-9), job
    lines = [line for line in result.stdout.splitlines() if "jobs" in line and "eta" in line]
    assert len(lines) == 4 and "eta -:--:--" not in "".join(lines)
