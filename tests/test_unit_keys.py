"""Unit keys follow what a unit depends on (issue 26).

A unit's key covers the pmlbench modules its numbers can depend on: the import closure of
its plugins' modules and of the protocol (pmlbench.runner.units.code_roots, read statically
by pmlbench.core.fingerprint). Edits are made in a temporary copy of the package, which
the fingerprint is pointed at, never in the working tree.
"""

from __future__ import annotations

import runpy
import shutil
import statistics
import textwrap
import time
from pathlib import Path

import pytest

from pmlbench.api import compose_config
from pmlbench.core import fingerprint
from pmlbench.runner.dryrun import plan_job
from pmlbench.runner.run import run_config, spec_from_config
from pmlbench.runner.store import ResultStore
from pmlbench.runner.units import _plugin_infos, code_fingerprint, code_modules, unit_keys

PACKAGE = Path(fingerprint.__file__).resolve().parents[1]
METRICS = ["hamming_loss", "average_precision"]


def config_of(method: str, *overrides: str) -> dict:
    config = compose_config(
        [f"method={method}", "dataset=genbase", "protocol.n_splits=2", *overrides]
    )
    return {**config, "metrics": METRICS, "quiet": True}


def closure_of(method: str, *overrides: str) -> list[str]:
    return code_modules(spec_from_config(config_of(method, *overrides)))


@pytest.fixture
def copy(tmp_path, monkeypatch) -> Path:
    """A copy of pmlbench's source (data files left out but one small stand-in) that the
    fingerprint reads instead of the installed package."""
    root = tmp_path / "pmlbench"
    shutil.copytree(PACKAGE, root, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.npz"))
    (root / "datasets" / "data" / "genbase.npz").write_bytes(b"stand-in")
    monkeypatch.setattr(fingerprint, "_package_dir", lambda: str(root))
    return root


def edit(path: Path, line: str = "# edited") -> None:
    """Append a line: a new size, so no stat-based memo can miss the edit."""
    path.write_text(path.read_text() + f"\n{line}\n")


def pmlbench_digest(method: str, *overrides: str) -> str:
    return code_fingerprint(spec_from_config(config_of(method, *overrides)))["pmlbench"]


# ------------------------------------------------------------------ what a closure holds


def test_mlknn_covers_its_imports_and_the_protocol_but_not_other_methods():
    modules = closure_of("mlknn")
    for needed in (
        "pmlbench.methods.mlknn",
        "pmlbench.methods",  # its package's __init__ runs on import
        "pmlbench.numerics.neighbors",
        "pmlbench.core.workcache",
        "pmlbench.datasets.bundled",
        "pmlbench.noise.uniform",
        "pmlbench.metrics.builtin",
        "pmlbench.protocol.experiment",
        "pmlbench.protocol.splits",
        "pmlbench.protocol.tuning",
        "pmlbench.runner.outputs",  # the rows a stored unit holds
        "pmlbench.runner.format",
        "pmlbench.runner.timeout",
    ):
        assert needed in modules, needed
    for foreign in (
        "pmlbench.methods.lift",
        "pmlbench.methods.pml3er",
        "pmlbench.methods.particle.map",
        "pmlbench.runner.store",
        "pmlbench.hydra_app.task",
    ):
        assert foreign not in modules, foreign
    assert not [m for m in modules if m.startswith(("pmlbench.report", "pmlbench.cli"))]
    # the statistics that compare methods across units never change a unit's numbers
    assert not [m for m in modules if m.startswith("pmlbench.stats")]


def test_a_package_import_runs_its_init_and_what_that_imports():
    """PARTICLE-MAP's module is in pmlbench.methods.particle, whose __init__ imports
    PARTICLE-VLS: importing one runs the other's module too, so both count."""
    modules = fingerprint.module_closure(["pmlbench.methods.particle.map"])
    assert "pmlbench.methods.particle" in modules
    assert "pmlbench.methods.particle.vls" in modules


def test_the_reader_sees_every_import_the_layer_test_sees():
    """Both read import statements with ast; the closure must not miss any the layer
    contract (tests/test_layers.py) checks, function-level ones included."""
    layers = runpy.run_path(str(Path(__file__).with_name("test_layers.py")))
    modules, _ = fingerprint.pmlbench_tree()
    for path in sorted(PACKAGE.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        name = layers["_module_name"](path)
        assert name in modules, name
        seen = fingerprint.imported_names(path, name)
        for line, target in layers["_imports"](path, name):
            assert target in seen, f"{path.name}:{line}: {target}"


def test_relative_function_level_and_from_package_imports(tmp_path):
    source = tmp_path / "mod.py"
    source.write_text(
        textwrap.dedent(
            """
            from . import sibling
            from ..numerics import neighbors as nb

            def later():
                from pmlbench import errors
                import pmlbench.core.checks
                from .sub.deep import thing
            """
        )
    )
    names = fingerprint.imported_names(source, "pmlbench.methods.mod")
    assert {
        "pmlbench.methods.sibling",
        "pmlbench.numerics",
        "pmlbench.numerics.neighbors",
        "pmlbench.errors",
        "pmlbench.core.checks",
        "pmlbench.methods.sub.deep",
        "pmlbench.methods.sub.deep.thing",
    } <= names
    source.write_text("def broken(:\n")  # unparsable: no imports here, it fails when run
    assert fingerprint.imported_names(source, "pmlbench.methods.mod") == frozenset()


def test_a_new_method_module_is_followed_without_registration(copy):
    (copy / "methods" / "brand_new.py").write_text(
        "def fit():\n    from pmlbench.numerics.enrichment import nnls_weights\n"
    )
    modules = fingerprint.module_closure(["pmlbench.methods.brand_new"])
    assert {"pmlbench.methods.brand_new", "pmlbench.numerics.enrichment"} <= set(modules)


# ------------------------------------------------------------------ which edits move which keys


def test_an_edit_of_lift_leaves_mlknn_keys_and_an_edit_of_mlknn_moves_them(copy):
    before = pmlbench_digest("mlknn")
    lift_before = pmlbench_digest("lift")
    edit(copy / "methods" / "lift.py")
    assert pmlbench_digest("mlknn") == before
    assert pmlbench_digest("lift") != lift_before
    (copy / "methods" / "another_new_method.py").write_text("x = 1\n")
    (copy / "report" / "new_table.py").write_text("x = 1\n")
    assert pmlbench_digest("mlknn") == before
    edit(copy / "methods" / "mlknn.py")
    assert pmlbench_digest("mlknn") != before


@pytest.mark.parametrize(
    "changed",
    [
        "numerics/neighbors.py",  # imported by ML-kNN's module
        "core/workcache.py",  # imported by what ML-kNN imports
        "methods/_constraints.py",
        "methods/__init__.py",  # runs when ML-kNN's module is imported
        "protocol/splits.py",  # the protocol
        "protocol/settings.py",
        "plugins/loading.py",  # imported by the protocol
        "runner/format.py",  # the rows a stored unit holds
        "datasets/npz.py",  # the dataset's code
        "datasets/data/genbase.npz",  # package data of the dataset's package
        "metrics/builtin.py",
        "noise/uniform.py",
    ],
)
def test_an_edit_of_what_mlknn_runs_moves_its_keys(copy, changed):
    before = pmlbench_digest("mlknn")
    edit(copy / changed)
    assert pmlbench_digest("mlknn") != before


def test_a_new_function_level_import_is_followed(copy):
    before = pmlbench_digest("mlknn")
    (copy / "numerics" / "helper_for_mlknn.py").write_text("SCALE = 1.0\n")
    assert pmlbench_digest("mlknn") == before  # nothing imports it yet
    edit(
        copy / "methods" / "mlknn.py",
        "def _late():\n    from pmlbench.numerics import helper_for_mlknn",
    )
    with_import = pmlbench_digest("mlknn")
    assert with_import != before
    edit(copy / "numerics" / "helper_for_mlknn.py", "SCALE = 2.0")
    assert pmlbench_digest("mlknn") != with_import


def test_the_tuning_score_counts_as_a_plugin():
    """A unit that tunes runs its scoring metric even when it does not report it."""
    spec = spec_from_config(config_of("mlknn", "tune.grid.k=[5,10]", "tune.scoring=coverage"))
    names = [i.name for i in _plugin_infos(spec)]
    assert "coverage" in names
    untuned = spec_from_config(config_of("mlknn", "tune.grid=null", "tune.scoring=coverage"))
    assert "coverage" not in [i.name for i in _plugin_infos(untuned)]


def test_a_third_party_distribution_roots_the_pmlbench_modules_it_imports(tmp_path, monkeypatch):
    site = tmp_path / "site"
    package = site / "pmlkeys_plugin"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("from pmlbench.plugin import Interval\n")
    (package / "model.py").write_text(
        "def fit():\n    from pmlbench.numerics.enrichment import nnls_weights\n"
    )
    monkeypatch.syspath_prepend(str(site))
    found = fingerprint.distribution_imports(None, ["pmlkeys_plugin"])
    assert {"pmlbench.plugin", "pmlbench.numerics.enrichment"} <= found


# ------------------------------------------------------------------ a sweep, end to end


def test_a_sweep_of_two_methods_stays_reusable_after_an_edit_of_a_third(tmp_path, copy):
    """The check of issue 26: ML-kNN and ridge into one store; editing LIFT's module leaves
    every unit done (dry run); editing ML-kNN's module leaves only ML-kNN's units missing;
    editing the protocol leaves all of them missing."""
    store = ResultStore(tmp_path / "store")
    configs = {m: {**config_of(m), "tune": {"grid": {}}} for m in ("mlknn", "ridge")}
    for method, config in configs.items():
        run_config(config, tmp_path / method, quiet=True, store=store)

    def missing() -> dict[str, int]:
        return {
            method: sum(
                u.state == "missing" for u in plan_job(config, tmp_path / "plan", store=store).units
            )
            for method, config in configs.items()
        }

    assert missing() == {"mlknn": 0, "ridge": 0}
    edit(copy / "methods" / "lift.py")
    assert missing() == {"mlknn": 0, "ridge": 0}
    edit(copy / "methods" / "mlknn.py")
    assert missing() == {"mlknn": 2, "ridge": 0}
    run_config(configs["mlknn"], tmp_path / "again", quiet=True, store=store)
    assert missing() == {"mlknn": 0, "ridge": 0}
    edit(copy / "protocol" / "experiment.py")
    assert missing() == {"mlknn": 2, "ridge": 2}


# ------------------------------------------------------------------ cost


def test_keys_cost_milliseconds_per_job():
    """Keying a 5-split job: the first call in a process reads and parses every file once;
    later ones cost one stat per file of the closure."""
    spec = spec_from_config(config_of("pml3er", "protocol.n_splits=5"))
    unit_keys(spec)
    runs = []
    for _ in range(20):
        start = time.process_time()
        unit_keys(spec)
        runs.append(time.process_time() - start)
    # CPU time, not wall time: a busy machine delays the process without making keying dearer
    assert statistics.median(runs) < 0.05
