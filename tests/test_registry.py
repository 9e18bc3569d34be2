"""Plugin discovery: built-ins through entry points, clear errors, automatic config nodes."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from pmlbench.errors import PluginError
from pmlbench.plugins import registry
from pmlbench.plugins.parameters import plugin_parameters
from pmlbench.protocol.method_defaults import method_node


@dataclass
class FakeEntryPoint:
    name: str
    value: str
    distribution: str

    @property
    def dist(self):
        return SimpleNamespace(metadata={"Name": self.distribution})

    def load(self):
        raise ImportError("no module named fake")


@pytest.fixture
def fake_methods(monkeypatch):
    def install(*eps):
        monkeypatch.setattr(registry, "entry_points", lambda group: list(eps))
        registry.plugins.cache_clear()

    yield install
    registry.plugins.cache_clear()


def test_builtins_are_registered_through_entry_points():
    assert {"genbase", "bibtex", "yeastbp", "file"} <= set(registry.plugins("dataset"))
    assert {"uniform", "none"} <= set(registry.plugins("noise"))
    assert "mlknn" in registry.plugins("method")
    assert {"average_precision", "coverage"} <= set(registry.plugins("metric"))
    assert registry.get("method", "mlknn").distribution == "pmlbench"


def test_unknown_name_lists_available_and_closest():
    with pytest.raises(PluginError) as err:
        registry.get("method", "mlkn")
    message = str(err.value)
    assert "available:" in message and "mlknn" in message and "did you mean 'mlknn'" in message
    assert "\n" not in message


def test_duplicate_names_name_both_distributions(fake_methods):
    fake_methods(FakeEntryPoint("dup", "a:A", "dist-one"), FakeEntryPoint("dup", "b:B", "dist-two"))
    with pytest.raises(PluginError, match="dist-one.*dist-two"):
        registry.plugins("method")


def test_import_error_names_plugin_and_distribution(fake_methods):
    fake_methods(FakeEntryPoint("broken", "nowhere:Thing", "broken-dist"))
    with pytest.raises(PluginError, match="'broken'.*broken-dist.*failed to import"):
        registry.load("method", "broken")


class Toy:
    """A toy method."""

    default_tuning_grid = {"alpha": [0.1, 1.0]}

    def __init__(self, alpha: float = 0.5, depth: int = 3, mode: str = "x", extra=(1, 2)):
        pass


def test_parameters_become_a_config_node():
    assert plugin_parameters("method", Toy) == {
        "alpha": 0.5,
        "depth": 3,
        "mode": "x",
        "extra": [1, 2],
    }
    node = method_node("toy", Toy)
    assert node["method"] == {"name": "toy", "alpha": 0.5, "depth": 3, "mode": "x", "extra": [1, 2]}
    assert node["tune"]["grid"] == {"alpha": [0.1, 1.0], "depth": None, "mode": None, "extra": None}
    assert node["bipartition"]["rule"] == "method"

    def noise(Y_true, rng, rate=1.0, flip=False):
        """A noise model."""

    assert plugin_parameters("noise", noise) == {"rate": 1.0, "flip": False}
    assert registry.describe(noise) == "A noise model."


def test_unconfigurable_default_is_a_clear_error():
    class Bad:
        def __init__(self, model=object()):  # noqa: B008 - the point of the test
            pass

    with pytest.raises(PluginError, match="parameter 'model'"):
        plugin_parameters("method", Bad)


def test_a_plugin_object_is_found_by_identity():
    from pmlbench.methods.mlknn import MLkNN
    from pmlbench.noise.uniform import uniform_noise

    for kind, obj, name in (
        ("method", MLkNN, "mlknn"),
        ("method", MLkNN(k=3), "mlknn"),
        ("noise", uniform_noise, "uniform"),
        ("metric", registry.load("metric", "coverage"), "coverage"),
    ):
        info = registry.info_for(kind, obj)
        assert (info.name, info.distribution) == (name, "pmlbench")
        assert info is registry.get(kind, name)


def test_an_unregistered_object_is_labelled_by_its_own_name():
    info = registry.info_for("method", Toy)
    assert info.label == f"method plugin 'Toy' (distribution {registry.UNREGISTERED!r})"
    assert info.entry_point.value == f"{__name__}:Toy"
    assert registry.info_for("method", Toy()).name == "Toy"
    with pytest.raises(PluginError, match="unknown plugin kind"):
        registry.info_for("model", Toy)


def test_kinds_of_a_name():
    assert registry.kinds_of("mlknn") == ["method"]
    with pytest.raises(PluginError, match="no plugin named 'mlkn'.*did you mean 'mlknn'"):
        registry.kinds_of("mlkn")


def test_a_plugin_named_with_control_characters_cannot_be_selected(fake_methods):
    """An entry-point name holding escape codes or bidi controls would reach every
    results.csv and report that names the method: it is refused when selected."""
    fake_methods(FakeEntryPoint("evil\x1b[2J\u202e", "a:A", "dist"))
    with pytest.raises(PluginError, match=r"evil\\x1b\[2J\\u202e.*uninstall that package"):
        registry.get("method", "evil\x1b[2J\u202e")
