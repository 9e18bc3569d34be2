"""Plugin discovery: built-ins through entry points, clear errors, automatic config nodes."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from pmlbench.errors import PluginError
from pmlbench.plugins import registry
from pmlbench.plugins.config_nodes import method_node, plugin_parameters


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
