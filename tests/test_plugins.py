"""The example third-party distribution (plugins/pmlbench-example), seen from pmlbench.

The distribution's own tests are collected here too, so pmlbench's test command covers them.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import pandas as pd
import pytest

from pmlbench.errors import PluginError
from pmlbench.hydra_app.overrides import check_group_choices, yaml_presets
from pmlbench.plugins import presets, registry

ROOT = Path(__file__).resolve().parents[1]
PLUGIN_TESTS = ROOT / "plugins" / "pmlbench-example" / "tests" / "test_example_plugin.py"


def _plugin_test_module():
    spec = importlib.util.spec_from_file_location("pmlbench_example_tests", PLUGIN_TESTS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Re-export the distribution's tests (and its autouse fixture) for collection in this module.
globals().update(
    {
        k: v
        for k, v in vars(_plugin_test_module()).items()
        if k.startswith("test_") or k == "_one_blas_thread"
    }
)

EXAMPLE = {
    "method": ["cwbr", "ext_ridge"],
    "dataset": ["example_synth"],
    "noise": ["cooccurrence"],
    "metric": ["macro_auc"],
}


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }


def test_example_plugins_come_from_their_own_distribution():
    for kind, names in EXAMPLE.items():
        for name in names:
            info = registry.get(kind, name)
            assert info.distribution == "pmlbench-example"
            assert info.entry_point.value.startswith("pmlbench_example.")


def test_plugin_presets_are_valid_group_choices():
    found = yaml_presets()
    assert {"cwbr_cooc", "ext_ridge_octave"} <= found["method"]
    assert "cooccurrence_heavy" in found["noise"]
    assert "example_synth_large" in found["dataset"]
    check_group_choices(["method=cwbr_cooc,cwbr", "noise=cooccurrence_heavy"], found)
    with pytest.raises(PluginError, match="unknown method 'cwbr_coc'"):
        check_group_choices(["method=cwbr_coc"], found)


def test_preset_packages_are_found_through_their_entry_point():
    source = presets.PresetSource("pmlbench_example.conf", "pmlbench-example")
    assert source in presets.preset_sources()
    assert source.searchpath == "pkg://pmlbench_example.conf"


def test_a_broken_preset_entry_point_names_its_distribution(monkeypatch, tmp_path):
    bad = [
        EntryPoint("bad", "no_such_package_xyz.conf", presets.GROUP),
        EntryPoint("attr", "pmlbench_example.conf:thing", presets.GROUP),
    ]
    monkeypatch.setattr(presets, "entry_points", lambda group: bad[:1])
    with pytest.raises(PluginError, match="no_such_package_xyz.conf.*cannot be imported"):
        presets.plugin_presets(["method"])
    monkeypatch.setattr(presets, "entry_points", lambda group: bad[1:])
    with pytest.raises(PluginError, match="must name a package"):
        presets.preset_sources()


def _run(args: list[str], out: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pmlbench", *args, "quiet=true", f"hydra.run.dir={out}"],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=ROOT,
        timeout=300,
    )


def test_cli_runs_the_example_method_dataset_and_noise(tmp_path):
    done = _run(
        [
            "method=cwbr",
            "dataset=example_synth",
            "noise=cooccurrence",
            "protocol.n_splits=2",
            "metrics=[average_precision,macro_auc,hamming_loss]",
        ],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    records = pd.read_csv(tmp_path / "results.csv")
    assert len(records) == 2 * 3
    assert set(records["method"]) == {"cwbr"} and set(records["noise"]) == {"cooccurrence"}
    assert set(records["dataset"]) == {"example_synth"}
    means = records.groupby("metric")["value"].mean()
    # a learnt ranking: well above what random scores give on this data
    assert means["average_precision"] > 0.6 and means["macro_auc"] > 0.65
    assert records.loc[records.metric == "macro_auc", "higher_is_better"].all()


def test_cli_runs_presets_shipped_by_the_plugin(tmp_path):
    done = _run(
        [
            "method=cwbr_cooc",
            "noise=cooccurrence_heavy",
            "dataset=example_synth_large",
            "dataset.n_instances=120",
            "protocol.n_splits=1",
            "metrics=[macro_auc]",
        ],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    row = pd.read_csv(tmp_path / "results.csv").iloc[0]
    assert row["method"] == "cwbr" and row["param_alpha"] == 0.8 and row["param_k"] == 15
    assert row["noise_rate"] == 2.0 and row["noise_smoothing"] == 0.0
    assert row["n_train"] + row["n_test"] == 120
