"""A multirun's jobs and their configs, in this process, without launching any of them.

Hydra's basic sweeper composes every job's config twice (once to validate the batch, once
in the launcher), each composition reading the YAML files and copying the config store
again: about 0.1 s of CPU each, 24 s for the 120 jobs of ``+experiment=paper``. A dry run
(pmlbench.runner.dryrun) and the sweep's ETA (pmlbench.hydra_app.progress) need every job's
config but launch nothing, so :class:`JobConfigs` composes once per distinct choice of
config groups and derives the other jobs from it:

- the jobs are those of Hydra's basic sweeper (:func:`sweep_jobs`): the cartesian product of
  the values of each key, ``hydra.sweeper.params`` first, the last override of a key winning;
- jobs that differ from an already composed one only in plain value overrides
  (``noise.rate=1.0``, not ``method=``, ``+key=``, ``~key``, ``hydra.*`` nor a mapping) are
  that config with those values set as Hydra sets them (``OmegaConf.update`` with merge)
  and the Hydra fields that name the overrides (``hydra.overrides.task``,
  ``hydra.job.override_dirname``) rewritten; every other job is composed by Hydra's config
  loader (``load_sweep_config``, the launchers' own call).

tests/test_sweep_plan.py checks that both give Hydra's configs, job for job.
"""

from __future__ import annotations

import copy
import itertools
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict, read_write


def uses_basic_sweeper(config: DictConfig) -> bool:
    """Whether a multirun's primary config uses Hydra's basic sweeper (or a subclass)."""
    from pmlbench.hydra_app.launchers import is_subclass, registered_target, target_class

    return is_subclass(
        target_class(config.hydra.sweeper), registered_target("hydra/sweeper", "basic")
    )


def sweep_jobs(config: DictConfig) -> list[list[str]] | None:
    """The override lists of the jobs Hydra's basic sweeper makes of ``config`` (a multirun's
    primary config), in its order; None for an interval sweep, which it refuses.

    A ``glob(...)`` over a config group's options (``+experiment/suite_case=glob(arts_*)``)
    is expanded by the running Hydra's config loader, as the sweeper expands it; outside a
    running Hydra it cannot be listed and Hydra's parser says so."""
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser

    running = GlobalHydra.instance()
    config_loader = running.config_loader() if running.is_initialized() else None
    hydra_cfg = config.hydra
    params = hydra_cfg.sweeper.get("params") or {}
    arguments = [f"{key}={value}" for key, value in params.items()]
    arguments += list(hydra_cfg.overrides.task)
    values: dict[str, list[str]] = {}
    parser = OverridesParser.create(config_loader=config_loader)
    for override in parser.parse_overrides(arguments):
        key = override.get_key_element()
        if override.is_sweep_override():
            if not override.is_discrete_sweep():
                return None
            values[key] = [f"{key}={value}" for value in override.sweep_string_iterator()]
        else:
            values[key] = [f"{key}={override.get_value_element_as_str()}"]
    return [list(job) for job in itertools.product(*values.values())]


class JobConfigs:
    """The configs of a sweep's jobs as Hydra's launcher would compose them (see the module
    docstring); ``compositions`` counts the calls into Hydra's config loader."""

    def __init__(self, config_loader: Any, master_config: DictConfig) -> None:
        from hydra.core.override_parser.overrides_parser import OverridesParser

        self.loader = config_loader
        self.master = master_config
        self.parser = OverridesParser.create(config_loader=config_loader)
        self.composed: dict[tuple[tuple[str, ...], ...], tuple[DictConfig, dict[str, Any]]] = {}
        self.groups: dict[str, bool] = {}
        self.compositions = 0

    def _is_group(self, key: str) -> bool:
        """Whether ``key`` names a config group: one the primary config chose an option of
        (``hydra.runtime.choices``) or a nested one (``experiment/suite_case``); a dotted
        key or a key of the primary config is a value; Hydra's loader tells the rest."""
        if key not in self.groups:
            choices = self.master.hydra.runtime.choices
            if key in choices or "/" in key:
                self.groups[key] = True
            elif "." in key or key in self.master:
                self.groups[key] = False
            else:
                try:
                    self.groups[key] = bool(self.loader.get_group_options(key))
                except Exception:  # not a group Hydra can list: composing decides
                    self.groups[key] = True
        return self.groups[key]

    def _is_value(self, override: Any) -> bool:
        """Whether Hydra applies ``override`` as a plain value onto the composed config."""
        from hydra.core.override_parser.types import OverrideType

        return (
            override.type == OverrideType.CHANGE
            and override.package is None
            and not override.is_hydra_override()
            and not self._is_group(override.key_or_group)
            and not isinstance(override.value(), dict)
        )

    def config(self, overrides: Sequence[str], num: int) -> DictConfig:
        """Job ``num``'s config, with ``hydra.job.num`` and ``hydra.job.id`` set as the
        launchers set them."""
        parsed = self.parser.parse_overrides(list(overrides))
        values = {o.key_or_group: o for o in parsed if self._is_value(o)}
        shape = (
            tuple(str(o.input_line) for o in parsed if o.key_or_group not in values),
            tuple(values),
        )
        cfg = None
        if shape in self.composed:
            base, base_values = self.composed[shape]
            cfg = _with_values(base, base_values, values, parsed)
        if cfg is None:
            cfg = self.loader.load_sweep_config(self.master, list(overrides))
            self.compositions += 1
            # the first job of its shape gets the composed config itself: the later ones copy
            # it (_with_values) and set again what a job changes (job num, output directory)
            self.composed.setdefault(shape, (cfg, values))
        with read_write(cfg.hydra), open_dict(cfg.hydra):
            cfg.hydra.job.id = num
            cfg.hydra.job.num = num
        return cfg


def _with_values(
    base: DictConfig, base_values: dict[str, Any], values: dict[str, Any], parsed: list[Any]
) -> DictConfig | None:
    """``base`` with the value overrides that differ from those it was composed with; None
    when one cannot be set as Hydra would (then the job is composed)."""
    changed = [o for key, o in values.items() if o.input_line != base_values[key].input_line]
    keys = [o.key_or_group for o in changed]
    if any(a != b and b.startswith(a + ".") for a in keys for b in keys):
        return None  # nested keys: their order of application matters
    cfg = copy.deepcopy(base)
    try:
        for override in changed:
            if OmegaConf.select(cfg, override.key_or_group, default=_MISSING) is _MISSING:
                return None
            OmegaConf.update(cfg, override.key_or_group, override.value(), merge=True)
    except Exception:  # Hydra's composition reports it
        return None
    app = [o for o in parsed if not o.is_hydra_override()]
    with read_write(cfg.hydra):
        cfg.hydra.overrides.task = [o.input_line for o in app]
        dirname = cfg.hydra.job.config.override_dirname
        cfg.hydra.job.override_dirname = overrides_dirname(
            app, list(dirname.exclude_keys), dirname.item_sep, dirname.kv_sep
        )
    return cfg


_MISSING = object()


def overrides_dirname(
    overrides: list[Any], exclude_keys: list[str], item_sep: str, kv_sep: str
) -> str:
    """``hydra.job.override_dirname`` as Hydra computes it from a job's app overrides: their
    sorted input lines, joined by ``item_sep``, ``=`` replaced by ``kv_sep``."""
    lines = sorted(o.input_line for o in overrides if o.key_or_group not in exclude_keys)
    return re.sub("[=]", kv_sep, item_sep.join(lines))


def task_config(cfg: DictConfig) -> DictConfig:
    """The config a job's task function gets: the job's without its hydra node (copied
    without it: the hydra node is most of the config)."""
    return OmegaConf.masked_copy(cfg, [str(key) for key in cfg if key != "hydra"])


def job_directory(cfg: DictConfig) -> Path:
    """A job's output directory (``hydra.sweep.dir`` / ``hydra.sweep.subdir``), resolved as
    Hydra's ``run_job`` resolves it: with the job's config as the current Hydra config,
    which stays set."""
    from hydra.core.hydra_config import HydraConfig

    HydraConfig.instance().set_config(cfg)
    return Path(str(OmegaConf.select(cfg, "hydra.sweep.dir"))) / str(
        OmegaConf.select(cfg, "hydra.sweep.subdir")
    )


def sweep_configs(
    config_loader: Any, master_config: DictConfig, jobs: list[list[str]]
) -> Iterator[tuple[int, list[str], DictConfig, Path]]:
    """``(num, overrides, config, output directory)`` of each job, in the sweeper's order;
    the current Hydra config is the job's while its tuple is used."""
    configs = JobConfigs(config_loader, master_config)
    for num, overrides in enumerate(jobs):
        cfg = configs.config(overrides, num)
        yield num, overrides, cfg, job_directory(cfg)
