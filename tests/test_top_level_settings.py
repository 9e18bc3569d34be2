"""The top-level settings (pmlbench.runner.settings): one table owns every top-level key of
conf/config.yaml, its default, its allowed values and its docs; and the parameter-name
checks share one owner (pmlbench.plugins.names)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

from pmlbench.errors import PluginError, PmlbenchError
from pmlbench.hydra_app.overrides import changed_settings, check_overrides
from pmlbench.methods.mlknn import MLkNN
from pmlbench.plugins.names import unknown
from pmlbench.protocol.experiment import ExperimentSpec
from pmlbench.protocol.method_defaults import method_node
from pmlbench.runner import settings
from pmlbench.runner.run import spec_from_config
from pmlbench.runner.threads import threads_for_job
from pmlbench.runner.timeout import check_unit_timeout
from pmlbench.testing import run_checks

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "conf" / "config.yaml"
DOCS = ROOT / "docs" / "protocol.md"
REGENERATE = "run `python -m pmlbench.runner.settings conf/config.yaml docs/protocol.md`"
# conf/config.yaml's entries that are not top-level settings
NOT_SETTINGS = {"defaults", "hydra"}
# Written out by hand: the settings a run's title leaves out (they never change a number).
EXECUTION = {
    "quiet",
    "results_store",
    "cache_dir",
    "recompute",
    "threads_per_job",
    "dry_run",
    "save_predictions",
    "unit_timeout",
}


def _flatten(node: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat = {}
    for key, value in node.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _differences(text: str) -> list[str]:
    """Top-level keys of a config.yaml text whose value is not the table's default, and keys
    only one of them has."""
    loaded = {k: v for k, v in yaml.safe_load(text).items() if k not in NOT_SETTINGS}
    found, wanted = _flatten(loaded), settings.defaults()
    return sorted(
        name
        for name in set(found) | set(wanted)
        if name not in found
        or name not in wanted
        or found[name] != wanted[name]
        or type(found[name]) is not type(wanted[name])
    )


def test_config_yaml_states_every_top_level_default_of_the_table():
    assert _differences(CONFIG.read_text(encoding="utf-8")) == [], REGENERATE


@pytest.mark.parametrize(
    "line, changed",
    [
        ("seed: 0", "seed: 1"),
        ("  test_size: 0.5", "  test_size: 0.3"),
        ("quiet: false", "quiet: true"),
        ("threads_per_job: null", "threads_per_job: 2"),
        ("  - micro_f1\n", "  - micro_f1\n  - coverage\n"),
        ("dry_run: false", "dry_run: false\nverbose: false"),
    ],
)
def test_a_default_changed_in_config_yaml_alone_is_caught(line, changed):
    text = CONFIG.read_text(encoding="utf-8")
    assert line in text
    assert _differences(text.replace(line, changed, 1)) != []
    assert settings.generated_in(CONFIG, text.replace(line, changed, 1)) != settings.config_block()


@pytest.mark.parametrize("path", [CONFIG, DOCS], ids=["config.yaml", "protocol.md"])
def test_generated_text_is_the_tables(path):
    text = path.read_text(encoding="utf-8")
    assert settings.generated_in(path, text) == settings.expected(path), REGENERATE


def test_every_default_is_allowed_and_described():
    for name, setting in settings.TOP_LEVEL.items():
        settings.check_option(name, setting.default)
        assert setting.description and "\n" not in setting.description, name


def test_execution_settings_are_the_ones_a_title_leaves_out():
    assert settings.EXECUTION == EXECUTION
    config = {**settings.tree(), "method": {"name": "mlknn"}}
    config.update(quiet=True, seed=3)
    assert changed_settings(["quiet=true", "seed=3"], config) == ["seed=3"]


# -- ExperimentSpec's fields -----------------------------------------------------------------

SPEC_SETTINGS = [name for name in settings.TOP_LEVEL if settings.spec_field(name)]
PROBES = [-1, 0, 1, 2, 5, 0.5, 1.0, 1.5, float("nan"), True, False, None, "x", "zhang"]
PROBES += ["sklearn", "exclude", [], ["a"]]


def test_spec_settings_are_the_spec_fields_with_their_defaults():
    fields = {f.name: f for f in dataclasses.fields(ExperimentSpec)}
    assert {settings.spec_field(n) for n in SPEC_SETTINGS} == set(fields) - {
        "dataset",
        "noise",
        "method",
        "tune",
        "bipartition",
    }
    for name in SPEC_SETTINGS:
        field = fields[settings.spec_field(name)]
        if name != "metrics":  # ExperimentSpec has no default metrics: the table states them
            assert settings.default(name) == field.default, name


@pytest.mark.parametrize("name", [n for n in SPEC_SETTINGS if n != "metrics"])
def test_spec_constraints_are_the_ones_experiment_spec_applies(name):
    field = settings.spec_field(name)
    for probe in PROBES:
        try:
            ExperimentSpec(dataset={}, noise={}, method={}, metrics=["m"], **{field: probe})
        except PmlbenchError as exc:
            spec_error: str | None = str(exc)
        else:
            spec_error = None
        try:
            settings.check_option(name, probe)
        except PmlbenchError as exc:
            table_error: str | None = str(exc)
        else:
            table_error = None
        assert table_error == spec_error, (name, probe)


def test_unit_timeout_constraint_is_the_runners():
    for probe in PROBES + [0.001, 3600]:
        try:
            check_unit_timeout(probe)
        except PmlbenchError as exc:
            runner_error: str | None = str(exc)
        else:
            runner_error = None
        try:
            settings.check_option("unit_timeout", probe)
        except PmlbenchError as exc:
            table_error: str | None = str(exc)
        else:
            table_error = None
        assert table_error == runner_error, probe


def test_spec_from_config_fills_the_tables_defaults():
    plugins = {"dataset": {"name": "genbase"}, "noise": {"name": "uniform"}, "method": {}}
    spec = spec_from_config(plugins)
    for name in SPEC_SETTINGS:
        assert getattr(spec, settings.spec_field(name)) == settings.default(name), name
    assert spec.metrics == settings.DEFAULT_METRICS and len(spec.metrics) == 7
    spec.metrics.append("coverage")  # a fresh list: the table's default stays
    assert "coverage" not in settings.default("metrics")


def test_spec_from_config_takes_every_given_value():
    config = {
        "dataset": {"name": "genbase"},
        "noise": {"name": "uniform"},
        "method": {"name": "mlknn"},
        "tune": {"grid": {}},
        "bipartition": {"rule": "top_k"},
        "seed": 3,
        "protocol": {"n_splits": 2, "test_size": 0.25},
        "metrics": ("coverage",),
        "metric_convention": "sklearn",
        "macro_f1_zero_division": "exclude",
        "save_predictions": True,
    }
    spec = spec_from_config(config)
    assert (spec.seed, spec.n_splits, spec.test_size) == (3, 2, 0.25)
    assert spec.metrics == ["coverage"] and spec.metric_convention == "sklearn"
    assert spec.macro_f1_zero_division == "exclude" and spec.save_predictions is True
    assert spec.tune == {"grid": {}} and spec.bipartition == {"rule": "top_k"}


# -- execution settings: one line naming the key, the value and what is allowed -------------


@pytest.mark.parametrize(
    "setting, message",
    [
        (0, "threads_per_job must be null or one of 'auto' or an integer in [1, inf), got 0"),
        ("all", "threads_per_job must be null or one of 'auto' or an integer in [1, inf), got"),
        (2.0, "got 2.0 (write 2: integer parameters take no decimal point)"),
        (True, "threads_per_job must be null or one of 'auto' or an integer in [1, inf), got T"),
    ],
)
def test_a_bad_thread_setting_is_one_line(setting, message):
    with pytest.raises(PmlbenchError) as info:
        threads_for_job(setting, 4)
    assert message in str(info.value) and "\n" not in str(info.value)
    assert threads_for_job("auto", 4) == 4 and threads_for_job(2, 4) == 2


@pytest.mark.parametrize(
    "config, message",
    [
        ({"quiet": "no"}, "quiet must be true or false, got 'no'"),
        ({"dry_run": 1}, "dry_run must be true or false, got 1"),
        ({"results_store": 5}, "results_store must be a string or null, got 5"),
        ({"threads_per_job": -1}, "threads_per_job must be null or one of 'auto' or an"),
        ({"unit_timeout": 0}, "unit_timeout must be a number in (0, inf) or null, got 0"),
        # the first bad key in the table's order
        ({"recompute": "yes", "quiet": "no"}, "quiet must be true or false, got 'no'"),
    ],
)
def test_a_bad_execution_setting_is_one_line(config, message):
    with pytest.raises(PmlbenchError) as info:
        settings.check_execution_options({**settings.tree(), **config})
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_execution_checks_leave_the_experiments_settings_to_the_spec():
    settings.check_execution_options(settings.tree())
    settings.check_execution_options({"seed": -1, "metrics": "x"})  # ExperimentSpec's


# -- parameter names: one owner ---------------------------------------------------------------


def test_unknown_names_and_the_closest():
    assert unknown(["k"], ["k", "s"]) is None
    found = unknown(["kk", "zz"], ["k", "s"])
    assert found is not None and found.unknown == ("kk", "zz") and found.listing == "k, s"
    assert found.hint() == "; did you mean 'k'?"
    assert found.hint("method.{name}=3") == "; did you mean method.k=3?"
    assert unknown(["q"], []).listing == "(none)"  # type: ignore[union-attr]
    assert unknown(["zz"], ["k"]).hint() == ""  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "override, message",
    [
        (
            "method.kk=3",
            "method 'mlknn' has no parameter 'kk'; its parameters: k, s; did you mean "
            "method.k=3? (pmlbench list method)",
        ),
        (
            "tune.grid.kk=[1,2]",
            "method 'mlknn' has no parameter 'kk' to tune; its parameters: k, s; did you mean "
            "tune.grid.k=[1,2]? (pmlbench list method)",
        ),
    ],
)
def test_an_unknown_parameter_override_is_one_line_with_the_fix(override, message):
    with pytest.raises(PmlbenchError) as info:
        check_overrides(["method=mlknn", override])
    assert str(info.value) == message
    check_overrides(["method=mlknn", "tune.grid.k=[1,2]", "method.s=2"])


def test_a_default_grid_for_an_unknown_parameter_names_the_closest():
    class Misspelt(MLkNN):
        default_tuning_grid = {"kk": [1, 2]}

    with pytest.raises(PluginError) as info:
        method_node("misspelt", Misspelt)
    assert str(info.value) == (
        "method 'misspelt' declares a tuning grid for unknown parameters ['kk']; its "
        "parameters: k, s; did you mean 'k'? (fix its default_tuning_grid)"
    )


def test_plugin_checks_name_the_closest_parameter():
    with pytest.raises(PmlbenchError) as info:
        run_checks("method", "mlknn", {"kk": 3})
    assert (
        str(info.value)
        == "method has no parameter(s) ['kk']; its parameters: k, s; did you mean 'k'?"
    )
