"""PyTorch as an optional extra (``pmlbench[deep]``): what holds with and without it.

- Without PyTorch (simulated in a subprocess whose ``import torch`` fails, so this runs
  everywhere): importing pmlbench and ``pmlbench list`` work, and a run asking for a deep
  method stops before any data is read, with one line naming the extra.
- Unit keys: a unit whose code imports PyTorch carries torch's version in
  ``code.libraries``; every other unit's description and key are what they were before the
  optional libraries existed; the device is part of a deep unit's key.

The deep methods themselves are tested in tests/test_plain.py and tests/test_pml_dda.py.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pmlbench.core.torch_runtime import INSTALL_HINT
from pmlbench.plugins import registry

# the built-in deep methods (plugin name: the name their refusal gives)
DEEP = {"plain": "PLAIN", "pml_dda": "PML-DDA"}

# ------------------------------------------------------------------ keys


def _spec(*overrides: str):
    from pmlbench.api import compose_config
    from pmlbench.runner.run import spec_from_config

    config = compose_config(["dataset=genbase", "protocol.n_splits=2", *overrides])
    return spec_from_config({**config, "quiet": True})


def test_torch_version_enters_only_deep_units_keys():
    """A unit of PLAIN carries torch's version; ML-kNN's description and key are what the
    key had before the optional libraries existed (numpy, scipy, scikit-learn only)."""
    from pmlbench.core.fingerprint import library_versions, modules_digest
    from pmlbench.runner import units

    plain = units.code_fingerprint(_spec("method=plain"))["libraries"]
    # the installed version, or None where PyTorch is not installed
    assert plain == {**library_versions(), "torch": units._installed_version("torch")}
    spec = _spec("method=mlknn")
    infos = units._plugin_infos(spec)
    before = {  # the code fingerprint as computed before OPTIONAL_LIBRARIES
        "plugins": units._distribution_digests(infos),
        "pmlbench": modules_digest(units.code_roots(infos)),
        "libraries": library_versions(),
    }
    assert units.code_fingerprint(spec) == before
    expected = [
        units.content_key(units.unit_description(spec, split, code=before)) for split in range(2)
    ]
    assert units.unit_keys(spec) == expected


@pytest.mark.parametrize("method", sorted(DEEP))
def test_every_deep_methods_units_carry_the_torch_version(method):
    from pmlbench.core.fingerprint import library_versions
    from pmlbench.runner import units

    libraries = units.code_fingerprint(_spec(f"method={method}"))["libraries"]
    assert libraries == {**library_versions(), "torch": units._installed_version("torch")}


def test_no_other_built_in_method_imports_an_optional_library():
    from pmlbench.runner import units

    for name in registry.plugins("method"):
        distribution = registry.get("method", name).distribution
        if name in DEEP or name == "external" or distribution != "pmlbench":
            continue
        infos = units._plugin_infos(_spec(f"method={name}"))
        assert units.optional_library_versions(infos) == {}, name


def test_the_device_is_part_of_the_key():
    from pmlbench.runner.units import unit_description

    cpu = unit_description(_spec("method=plain"), 0, fingerprints=False)
    assert cpu["method"]["device"] == "cpu"
    cuda = dict(cpu, method={**cpu["method"], "device": "cuda"})
    from pmlbench.runner.units import content_key

    assert content_key(cpu) != content_key(cuda)


# ------------------------------------------------------------------ without PyTorch

NO_TORCH = textwrap.dedent(
    """
    import sys


    class NoTorch:
        # "import torch" fails as it does where PyTorch is not installed
        def find_spec(self, name, path=None, target=None):
            if name == "torch" or name.startswith("torch."):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None


    sys.meta_path.insert(0, NoTorch())
    import runpy

    sys.argv = ["pmlbench", *sys.argv[1:]]
    runpy.run_module("pmlbench", run_name="__main__", alter_sys=True)
    """
)


def pmlbench_without_torch(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", NO_TORCH, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
    )


@pytest.mark.parametrize(("method", "shown"), sorted(DEEP.items()))
def test_without_pytorch_list_works_and_a_run_is_refused_up_front(tmp_path, method, shown):
    listing = pmlbench_without_torch("list", "method", cwd=tmp_path)
    assert listing.returncode == 0, listing.stderr
    assert method in listing.stdout and "broken" not in listing.stdout
    run = pmlbench_without_torch(
        f"method={method}",
        # a dataset file that does not exist: the refusal comes before any data is read
        "dataset=file",
        f"dataset.path={tmp_path / 'absent.npz'}",
        "quiet=true",
        "results_store=null",
        "cache_dir=null",
        f"hydra.run.dir={tmp_path / 'run'}",
        cwd=tmp_path,
    )
    assert run.returncode != 0
    message = (run.stdout + run.stderr).strip()
    assert message.count("\n") == 0, message
    assert f"{shown} needs PyTorch" in message and INSTALL_HINT in message
    assert 'pip install "pmlbench[deep]"' in message and "torch==2.13.0" in message
    assert "absent.npz" not in message
