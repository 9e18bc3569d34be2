"""The public plugin API: pmlbench.plugin, pmlbench.testing and the deprecated old paths."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import get_type_hints

import numpy as np
import pytest

import pmlbench.plugin
import pmlbench.testing
from pmlbench.core import checks
from pmlbench.numerics import neighbors
from pmlbench.plugin import DatasetLoader, Method, MethodHooks, MetricFunction, NoiseModel
from pmlbench.plugins import contracts

EXAMPLE = Path(__file__).resolve().parents[1] / "plugins" / "pmlbench-example"

# What the issue asks pmlbench.plugin to offer a third-party plugin.
PROMISED = {
    "Dataset",
    "Metric",
    "PmlbenchError",
    "PluginError",
    "kneighbors",
    "neighbor_counts",
    "check_features",
    "check_label_matrix",
    "as_dense",
    "Interval",
    "Options",
    "Type",
    "ValidatedParameters",
    "validate_parameters",
    "noise_counts",
    "ROUNDING",
    "uniform_noise",
    "ExternalCommand",
    "ExternalSpec",
    "Method",
    "MethodHooks",
    "DatasetLoader",
    "NoiseModel",
    "MetricFunction",
}


def _pmlbench_imports(path: Path) -> list[str]:
    """Every pmlbench module a file imports (module level or inside functions)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] == "pmlbench"]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if node.module.split(".")[0] == "pmlbench":
                if node.module == "pmlbench":
                    found += [f"pmlbench.{a.name}" for a in node.names]
                else:
                    found.append(node.module)
    return found


def test_the_example_imports_only_the_public_api():
    package = sorted((EXAMPLE / "pmlbench_example").rglob("*.py"))
    tests = sorted((EXAMPLE / "tests").rglob("*.py"))
    assert package and tests
    for path in package:
        assert set(_pmlbench_imports(path)) <= {"pmlbench.plugin"}, path
    for path in tests:
        assert set(_pmlbench_imports(path)) <= {"pmlbench.plugin", "pmlbench.testing"}, path
    assert any("pmlbench.testing" in _pmlbench_imports(p) for p in tests)


def test_the_import_check_sees_private_imports(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text("def f():\n    from pmlbench.core.checks import as_dense\n")
    assert _pmlbench_imports(planted) == ["pmlbench.core.checks"]
    planted.write_text("from pmlbench import plugin, errors\n")
    assert _pmlbench_imports(planted) == ["pmlbench.plugin", "pmlbench.errors"]


@pytest.mark.parametrize("module", [pmlbench.plugin, pmlbench.testing])
def test_everything_in_all_resolves(module):
    assert len(set(module.__all__)) == len(module.__all__)
    for name in module.__all__:
        assert getattr(module, name) is not None, name


def test_the_plugin_api_offers_what_was_promised():
    assert set(pmlbench.plugin.__all__) >= PROMISED
    assert pmlbench.plugin.kneighbors is neighbors.kneighbors
    assert pmlbench.plugin.check_features is checks.check_features


def test_testing_offers_a_check_per_kind_and_a_pytest_helper():
    for name in ("check_method", "check_dataset", "check_noise", "check_metric"):
        assert callable(getattr(pmlbench.testing, name))
    assert callable(pmlbench.testing.parametrize_plugin_checks)
    assert callable(pmlbench.testing.plugin_checks)


@pytest.mark.parametrize("old", ["pmlbench.neighbors", "pmlbench.validation"])
def test_the_pre_release_import_paths_are_gone(old):
    """0.x has had no release: the kNN search and the input checks have one public home,
    pmlbench.plugin (no deprecated second path)."""
    with pytest.raises(ModuleNotFoundError):
        __import__(old)


def test_import_pmlbench_stays_cheap():
    code = (
        "import sys, pmlbench\n"
        "print(sorted(m for m in sys.modules if m.startswith(('pmlbench', 'numpy'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['pmlbench', 'pmlbench.errors']"


def test_methods_and_plugins_satisfy_their_protocols():
    from pmlbench_example.cooccurrence import cooccurrence_noise
    from pmlbench_example.cwbr import ConfidenceWeightedBR
    from pmlbench_example.metrics import macro_auc_value
    from pmlbench_example.synthetic import example_synth

    from pmlbench.methods.mlknn import MLkNN

    assert isinstance(ConfidenceWeightedBR(), Method) and isinstance(MLkNN(), Method)
    assert not isinstance(object(), Method)
    assert isinstance(example_synth, DatasetLoader)
    assert isinstance(cooccurrence_noise, NoiseModel)
    assert isinstance(macro_auc_value, MetricFunction)
    assert isinstance(ConfidenceWeightedBR().fit(np.eye(4), np.eye(4, dtype=np.uint8)), Method)


def test_the_documented_hooks_are_the_checked_ones():
    hints = get_type_hints(MethodHooks, vars(pmlbench.plugin))
    assert set(hints) == set(contracts.METHOD_HOOKS)
    for hook in contracts.METHOD_HOOKS:
        assert f"{hook}:" in MethodHooks.__doc__ and hook in Method.__doc__
