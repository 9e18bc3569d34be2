"""Hostile plugins, programs, files and store records: each is contained (a failed unit, the
sweep goes on), refused in one line naming the file, key or plugin, or flagged; never a
wrong, stale or lost number with exit status 0, a traceback or a raw terminal escape."""

from __future__ import annotations

import ctypes
import math
import os
import re
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from pmlbench.api import compose_config
from pmlbench.errors import PluginError, PmlbenchError
from pmlbench.methods.external import ExternalCommand
from pmlbench.plugin import Options, Type
from pmlbench.runner.status import Status

# An external program that sleeps (so that parallel calls overlap) and then scores every
# label with the value of its parameter ``lam`` read from the train file.
PARAM_ECHO = """
import sys, time
import numpy as np
train, test, out = sys.argv[1:4]
time.sleep(0.5)
with np.load(train) as tr, np.load(test) as te:
    lam = float(tr["param_lam"]); n = te["X"].shape[0]; l = tr["Y"].shape[1]
np.savez(out, scores=np.full((n, l), lam))
"""


def _small_data():
    rng = np.random.default_rng(0)
    Y = (rng.random((20, 3)) < 0.5).astype(np.uint8)
    return rng.normal(size=(20, 4)), Y, rng.normal(size=(6, 4))


def test_parallel_calls_sharing_a_workdir_exchange_their_own_files(tmp_path):
    program = tmp_path / "echo.py"
    program.write_text(textwrap.dedent(PARAM_ECHO))
    workdir = tmp_path / "wd"
    X, Y, Xt = _small_data()
    command = f"{{python}} {program} {{train}} {{test}} {{out}}"
    found: dict[float, np.ndarray] = {}

    def run(lam: float) -> None:
        model = ExternalCommand(command, params={"lam": lam}, workdir=str(workdir)).fit(X, Y)
        found[lam] = model.decision_function(Xt)

    threads = [threading.Thread(target=run, args=(lam,)) for lam in (1.0, -3.0)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert set(found) == {1.0, -3.0}
    for lam, scores in found.items():
        np.testing.assert_array_equal(scores, np.full((6, 3), lam))
    assert len(list(workdir.glob("exchange-*"))) == 2  # kept for debugging, one per call


def test_scripts_named_inside_a_shell_command_are_in_the_key(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from pmlbench.runner.units import input_files

    monkeypatch.chdir(tmp_path)
    (tmp_path / "myprog.py").write_text("a")
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "run.m").write_text("b")
    command = (
        "sh -c 'cd {workdir} && octave-cli run.m {train} {test} {out};python myprog.py {out}|cat'"
    )
    spec = SimpleNamespace(
        dataset={"name": "genbase"},
        noise={"name": "uniform"},
        method={"name": "external", "command": command, "workdir": str(tmp_path / "work")},
    )
    files = input_files(spec)["method.command"]
    assert sorted(files) == ["myprog.py", "run.m"]
    (tmp_path / "myprog.py").write_text("edited")
    assert input_files(spec)["method.command"]["myprog.py"] != files["myprog.py"]


@pytest.mark.parametrize(
    ("script", "problem"),
    [
        ("cd sub && python prog.py {train} {test} {out}", "changes directory (cd sub)"),
        ("python $HOME/prog.py {train} {test} {out}", "builds words at run time"),
        ("python `cat which` {train} {test} {out}", "builds words at run time"),
    ],
)
def test_a_shell_script_the_key_cannot_follow_is_refused(script, problem):
    X, Y, _ = _small_data()
    with pytest.raises(PmlbenchError) as error:
        ExternalCommand(f"sh -c '{script}'").fit(X, Y)
    assert problem in str(error.value) and "\n" not in str(error.value)
    ExternalCommand("sh -c 'cd {workdir} && python prog.py {train} {test} {out}'").fit(X, Y)


# --------------------------------------------------------------- plugin code that exits

HOSTILE_PLUGINS = '''
import ctypes
import math
import os
import sys

from pmlbench.methods.mlknn import MLkNN
from pmlbench.plugin import Options


class Hostile(MLkNN):
    """ML-kNN whose fit ends the process the way ``how`` says (fits normally with "none")."""

    default_tuning_grid: dict = {}  # one fit per unit

    parameter_constraints = {
        **MLkNN.parameter_constraints,
        "how": [Options(("none", "exit0", "os_exit", "segfault"))],
    }

    def __init__(self, k=10, s=1.0, how="none"):
        super().__init__(k, s)
        self.how = how

    def fit(self, X, Y):
        if self.how == "exit0":
            sys.exit(0)
        if self.how == "os_exit":
            os._exit(0)
        if self.how == "segfault":
            ctypes.string_at(0)
        return super().fit(X, Y)
'''


def plugin_env(root: Path) -> dict[str, str]:
    """The environment with method ``hostile`` installed (a distribution on PYTHONPATH)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "hostile_plugins.py").write_text(HOSTILE_PLUGINS)
    info = root / "pmlbench_hostile-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pmlbench-hostile\nVersion: 0.1\n")
    (root / "hostile_import.py").write_text("import sys\nsys.exit(0)\n")
    (info / "entry_points.txt").write_text(
        "[pmlbench.methods]\nhostile = hostile_plugins:Hostile\n"
        "exits_on_import = hostile_import:Nothing\n"
    )
    path = os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path}


def pmlbench(cwd: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pmlbench", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=600,
    )


@pytest.fixture(scope="module")
def hostile_env(tmp_path_factory) -> dict[str, str]:
    return plugin_env(tmp_path_factory.mktemp("hostile_plugins"))


def _exiting_fit(how: str):
    def fit(self, X, Y):
        if how == "exit0":
            sys.exit(0)
        if how == "os_exit":
            os._exit(0)
        ctypes.string_at(0)

    return fit


@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("exit0", "called sys.exit(0) (SystemExit) inside the unit"),
        ("os_exit", "ended without a result (exit code 0)"),
        ("segfault", "ended without a result (killed by SIGSEGV)"),
    ],
)
def test_a_unit_whose_plugin_ends_the_process_is_a_failed_unit(tmp_path, monkeypatch, how, message):
    from pmlbench.methods.mlknn import MLkNN
    from pmlbench.runner.run import UnitsFailed, run_config
    from pmlbench.runner.store import ResultStore, iter_outcomes

    monkeypatch.setattr(MLkNN, "fit", _exiting_fit(how))
    config = compose_config(["method=mlknn", "dataset=genbase", "protocol.n_splits=2"])
    store = ResultStore(tmp_path / "store")
    with pytest.raises(UnitsFailed) as error:
        run_config(config, tmp_path / "run", quiet=True, store=store, isolate=True)
    assert message in str(error.value) and "\n" not in str(error.value)
    assert len(list(iter_outcomes(store.root, Status.FAILED))) == 2


def test_sys_exit_fails_the_unit_in_process_too(tmp_path, monkeypatch):
    from pmlbench.methods.mlknn import MLkNN
    from pmlbench.runner import run
    from pmlbench.runner.store import ResultStore

    monkeypatch.setattr(MLkNN, "fit", _exiting_fit("exit0"))
    config = compose_config(["method=mlknn", "dataset=genbase", "protocol.n_splits=1"])
    with pytest.raises(run.UnitsFailed, match=r"called sys\.exit\(0\)"):
        run.run_config(config, tmp_path / "run", quiet=True, store=ResultStore(tmp_path / "s"))


@pytest.mark.parametrize("launcher", [[], ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]])
def test_a_sweep_goes_on_past_plugins_that_end_the_process(tmp_path, hostile_env, launcher):
    done = pmlbench(
        tmp_path,
        "-m",
        *launcher,
        "method=hostile",
        "method.how=exit0,os_exit,segfault,none",
        "dataset=genbase",
        "protocol.n_splits=1",
        "cache_dir=null",
        "quiet=true",
        "hydra.sweep.dir=sweep",
        env=hostile_env,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout + done.stderr
    assert "called sys.exit(0)" in out
    assert out.count("ended without a result") == 2
    assert "Fatal Python error" not in out and "Traceback" not in out
    assert (tmp_path / "sweep" / "3_hostile_genbase_uniform_rate1" / "results.csv").is_file()


def test_a_plugin_that_exits_on_import_is_named(tmp_path, hostile_env):
    args = ["dataset=genbase", "protocol.n_splits=1", "cache_dir=null", "quiet=true"]
    done = pmlbench(tmp_path, "method=exits_on_import", *args, env=hostile_env)
    assert done.returncode != 0
    assert "method plugin 'exits_on_import'" in done.stdout + done.stderr
    assert "failed to import (SystemExit: 0)" in done.stdout + done.stderr
    other = pmlbench(tmp_path, "method=mlknn", *args, env=hostile_env)  # others still run
    assert other.returncode == 0, other.stdout + other.stderr


@pytest.mark.parametrize("how", ["exit0", "os_exit", "segfault"])
def test_check_plugin_reports_a_plugin_that_ends_the_process(tmp_path, hostile_env, how):
    done = subprocess.run(
        [sys.executable, "-m", "pmlbench", "check-plugin", "hostile", "--param", f"how={how}"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=hostile_env,
        timeout=600,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert ("sys.exit(0)" if how == "exit0" else "ended without a result") in done.stdout
    assert "Fatal Python error" not in done.stdout + done.stderr


# ------------------------------------------------------------------ crafted data files


def _write_npz(path: Path, n: int = 40, d: int = 4, **changes) -> dict:
    rng = np.random.default_rng(1)
    X = sp.csr_matrix(rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.7))
    Y = np.zeros((n, 3), dtype=np.uint8)
    Y[np.arange(n), np.arange(n) % 3] = 1
    arrays = {
        "X_data": X.data,
        "X_indices": X.indices.copy(),
        "X_indptr": X.indptr,
        "X_shape": np.array(X.shape),
        "Y": Y,
    }
    for key, change in changes.items():
        arrays[key] = change(arrays[key]) if callable(change) else change
    np.savez(path, **arrays)
    return arrays


def _negative(indices):
    indices[3] = -1
    return indices


def _beyond(indices):
    indices[3] = 50  # 4 columns
    return indices


@pytest.mark.parametrize("change", [_negative, _beyond], ids=["negative", "beyond"])
def test_a_crafted_csr_index_is_refused_on_load_naming_the_file(tmp_path, change):
    path = tmp_path / "crafted.npz"
    _write_npz(path, X_indices=change)
    # in a subprocess: before the check, this read memory out of bounds (a segfault, or numbers)
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from pmlbench.datasets.files import load_file\n"
            "from pmlbench.errors import PmlbenchError\n"
            "try:\n    load_file(sys.argv[1]).X.toarray().sum()\n"
            "except PmlbenchError as exc:\n    print(exc); sys.exit(7)\n",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 7, done.stdout + done.stderr
    assert f"dataset.path={path}: the features" in done.stdout
    assert "damaged sparse matrix" in done.stdout and done.stdout.count("\n") == 1


def test_sparse_features_handed_to_a_method_are_checked_too():
    from pmlbench.core.checks import check_features

    X = sp.csr_matrix((np.ones(3), np.array([0, 1, 2]), np.array([0, 2, 1, 3])), shape=(3, 3))
    with pytest.raises(PmlbenchError, match="indptr must be a non-decreasing"):
        check_features(X)


def test_complex_features_are_refused():
    from pmlbench.datasets.dataset import Dataset

    Y = np.eye(3, dtype=np.uint8)[np.arange(40) % 3]
    X = np.ones((40, 2)) + 1j
    with pytest.raises(PmlbenchError, match="are complex numbers"):
        Dataset(X=X, Y=Y, name="c")
    with pytest.raises(PmlbenchError, match="are complex numbers"):
        Dataset(X=sp.csr_matrix(X), Y=Y, name="c")


def test_a_square_mat_target_is_oriented_by_the_file_or_refused(tmp_path):
    from pmlbench.datasets.files import load_file

    rng = np.random.default_rng(0)
    n = 40
    X = rng.normal(size=(n, 5))
    Y = (rng.random((n, n)) < 0.2).astype(float)  # as many labels as instances
    Y[np.arange(n), np.arange(n)] = 1
    scipy.io.savemat(tmp_path / "square.mat", {"data": X, "target": Y})
    with pytest.raises(PmlbenchError, match="'target' is square .40 x 40"):
        load_file(str(tmp_path / "square.mat"))
    # the test part's target (labels x 10 instances) tells the orientation of the square one
    scipy.io.savemat(
        tmp_path / "split.mat",
        {
            "train_data": X,
            "train_target": Y,  # labels x instances, like test_target
            "test_data": X[:10],
            "test_target": Y[:, :10],
        },
    )
    loaded = load_file(str(tmp_path / "split.mat"))
    np.testing.assert_array_equal(loaded.Y[:n], Y.T)
    np.testing.assert_array_equal(loaded.Y[n:], Y[:, :10].T)


def test_an_npz_holding_arff_text_is_diagnosed(tmp_path):
    from pmlbench.datasets.files import load_file

    (tmp_path / "data.npz").write_text("@relation toy\n@attribute a numeric\n@data\n1\n")
    with pytest.raises(PmlbenchError) as error:
        load_file(str(tmp_path / "data.npz"))
    assert "ARFF text" in str(error.value) and "dataset.format=arff" in str(error.value)
    assert "pickle" not in str(error.value)


def test_declared_sizes_are_checked_before_decompressing(tmp_path, monkeypatch):
    from pmlbench.datasets import npz
    from pmlbench.datasets.files import load_file

    _write_npz(tmp_path / "big.npz", Y=np.zeros((40, 100_000), dtype=np.uint8))  # 4 MB
    monkeypatch.setattr(npz, "_available_memory", lambda: 1_000_000)
    read = []
    monkeypatch.setattr(npz.np, "load", lambda *a, **k: read.append(a))
    with pytest.raises(
        PmlbenchError, match=r"declare 4\.0 MB once decompressed, more than the 1\.0"
    ):
        load_file(str(tmp_path / "big.npz"))
    assert read == []  # refused from the headers alone
    # and arrays whose shapes contradict X_shape are refused from the headers too
    monkeypatch.undo()
    _write_npz(tmp_path / "rows.npz", Y=np.zeros((400, 3), dtype=np.uint8))
    with pytest.raises(PmlbenchError, match=r"Y has shape \(400, 3\), expected \(40, labels\)"):
        load_file(str(tmp_path / "rows.npz"))


def test_zero_labels_are_named_as_the_dataset_s_problem(tmp_path):
    from pmlbench.datasets.files import load_file

    _write_npz(tmp_path / "nolabels.npz", Y=np.zeros((40, 0), dtype=np.uint8))
    with pytest.raises(PmlbenchError, match="has no labels"):
        load_file(str(tmp_path / "nolabels.npz"))


def test_a_utf8_bom_in_an_arff_file_is_no_content(tmp_path):
    from pmlbench.datasets.files import load_file

    rng = np.random.default_rng(0)
    lines = ["@relation toy"]
    lines += [f"@attribute f{i} numeric" for i in range(4)]
    lines += [f"@attribute l{j} {{0,1}}" for j in range(3)] + ["@data"]
    for i in range(40):
        labels = ["1" if j == i % 3 else "0" for j in range(3)]
        lines.append(",".join([f"{v:.3f}" for v in rng.normal(size=4)] + labels))
    text = "\n".join(lines) + "\n"
    (tmp_path / "plain.arff").write_text(text)
    (tmp_path / "bom.arff").write_bytes(b"\xef\xbb\xbf" + text.encode())
    plain = load_file(str(tmp_path / "plain.arff"), label_count=3)
    bom = load_file(str(tmp_path / "bom.arff"), label_count=3)
    np.testing.assert_array_equal(plain.X, bom.X)
    np.testing.assert_array_equal(plain.Y, bom.Y)


# ------------------------------------------------------------ files pmlbench writes and reads


def _refuse_constant(name: str):
    raise ValueError(f"not strict JSON: {name}")


def test_json_files_are_strict_and_read_back_non_finite_numbers():
    import json

    from pmlbench.runner.format import from_json, to_json

    data = {
        "nan": float("nan"),
        "numpy": [np.float64("inf"), np.float32("-inf"), 0.25],
        "array": np.array([np.nan, 1.0]),
        "ints": np.array([1, 2]),
    }
    text = to_json(data)
    json.loads(text, parse_constant=_refuse_constant)  # what other tools' parsers accept
    back = from_json(text)
    assert math.isnan(back["nan"]) and math.isnan(back["array"][0])
    assert back["numpy"] == [math.inf, -math.inf, 0.25] and back["ints"] == [1, 2]
    assert math.isnan(from_json('{"value": NaN}')["value"])  # files written before


def test_json_nested_too_deeply_is_a_value_error():
    from pmlbench.runner.format import from_json

    with pytest.raises(ValueError, match="nested too deeply"):
        from_json("[" * 200_000 + "]" * 200_000)


@pytest.fixture(scope="module")
def small_store(tmp_path_factory) -> Path:
    """A store with the two splits of ML-kNN on genbase."""
    from pmlbench.runner.run import run_config
    from pmlbench.runner.store import ResultStore

    root = tmp_path_factory.mktemp("small_store")
    config = compose_config(["method=mlknn", "dataset=genbase", "protocol.n_splits=2"])
    run_config(config, root / "run", quiet=True, store=ResultStore(root / "store"))
    return root / "store"


def _copy_store(source: Path, target: Path) -> list[Path]:
    import shutil

    shutil.copytree(source, target)
    return sorted(p for p in target.glob("*.json") if p.name.count(".") == 1)


def test_report_readers_check_records_as_strictly_as_a_run(small_store, tmp_path):
    import json

    from pmlbench.runner.store import ResultStore, iter_damaged, iter_records

    first, second = _copy_store(small_store, tmp_path / "store")
    record = json.loads(first.read_text())
    record["records"][0]["value"] = 0.999  # edited by hand: the split details disagree
    first.write_text(json.dumps(record))
    record = json.loads(second.read_text())
    record["unit"] = "oops"
    second.write_text(json.dumps(record))
    (tmp_path / "store" / f"{'a' * 32}.json").write_text("[]")
    (tmp_path / "store" / f"{'b' * 32}.json").write_text("[" * 200_000 + "]" * 200_000)
    assert ResultStore(tmp_path / "store").load(first.stem) is None  # what a run says
    assert list(iter_records(tmp_path / "store", damaged=[])) == []  # and a report
    problems = {d.path.name: d.problem for d in iter_damaged(tmp_path / "store")}
    assert "disagree on" in problems[first.name]
    assert problems[second.name] == "holds no unit description"
    assert "JSON list" in problems[f"{'a' * 32}.json"]
    assert "nested too deeply" in problems[f"{'b' * 32}.json"]


def test_damaged_outcome_files_are_treated_as_absent(small_store, tmp_path):
    from pmlbench.runner.store import ResultStore, iter_outcomes

    _copy_store(small_store, tmp_path / "store")
    store = ResultStore(tmp_path / "store")
    key = "c" * 32
    (tmp_path / "store" / f"{key}.timeout.json").write_text("[]")
    (tmp_path / "store" / f"{key}.failed.json").write_text(f'{{"key": "{key}", "unit": "oops"}}')
    for status in (Status.TIMED_OUT, Status.FAILED):
        assert store.load_outcome(key, status) is None
        assert list(iter_outcomes(store.root, status)) == []


def test_a_method_that_edits_its_training_arrays_fails_naming_itself(tmp_path, monkeypatch):
    """It is handed read-only views (tests/test_read_only_inputs.py has every path): the
    unit fails in one line naming the method, and the run it belongs to saves nothing."""
    from pmlbench.methods.mlknn import MLkNN
    from pmlbench.runner.format import predictions_path
    from pmlbench.runner.run import run_config

    config = compose_config(
        ["method=mlknn", "dataset=genbase", "protocol.n_splits=1", "save_predictions=true"]
    )
    original = MLkNN.fit

    def fit_and_scribble(self, X, Y):
        fitted = original(self, X.copy(), Y.copy())
        Y[:] = 1  # a careless plugin writes into the arrays it was given
        return fitted

    monkeypatch.setattr(MLkNN, "fit", fit_and_scribble)
    with pytest.raises(
        PluginError,
        match=r"^method plugin 'mlknn' \(distribution 'pmlbench'\) tried to change an array it "
        r"was handed while fitting \(tuning included\) \(assignment destination is read-only\); "
        r"a method is handed read-only features and labels and must copy an array before "
        r"modifying it",
    ):
        run_config(config, tmp_path / "edited", quiet=True)
    assert not predictions_path(tmp_path / "edited", 0).exists()


def test_a_rerun_into_the_same_directory_leaves_no_stale_results(tmp_path, monkeypatch):
    from pmlbench.methods.mlknn import MLkNN
    from pmlbench.runner.format import RESULTS_FILE, RUN_RECORD_FILE, predictions_path
    from pmlbench.runner.run import UnitsFailed, run_config
    from pmlbench.runner.store import ResultStore

    config = compose_config(
        ["method=mlknn", "dataset=genbase", "protocol.n_splits=2", "save_predictions=true"]
    )
    store = ResultStore(tmp_path / "store")
    run_config(config, tmp_path / "run", quiet=True, store=store)
    assert (tmp_path / "run" / RESULTS_FILE).is_file()

    def fail(self, X, Y):
        raise RuntimeError("now it fails")

    monkeypatch.setattr(MLkNN, "fit", fail)
    with pytest.raises(UnitsFailed):
        run_config(config, tmp_path / "run", quiet=True, store=store, recompute=True)
    assert not (tmp_path / "run" / RESULTS_FILE).exists()
    assert not (tmp_path / "run" / RUN_RECORD_FILE).exists()
    assert not predictions_path(tmp_path / "run", 0).exists()


# ------------------------------------------------------ plugin outputs: metrics, scores, hooks


@pytest.mark.parametrize(
    ("returned", "message"),
    [
        (math.inf, "returned inf; a metric must return a finite number"),
        ("0.5", "returned str '0.5'; a metric must return one real number"),
        (None, "returned NoneType None"),
        (np.array([0.1, 0.2]), "returned ndarray array([0.1, 0.2])"),
        (True, "returned bool True"),
    ],
)
def test_a_metric_returning_no_real_number_is_named(returned, message):
    from pmlbench.errors import PluginError
    from pmlbench.metrics.base import Metric

    metric = Metric("odd", lambda *args, **kwargs: returned, higher_is_better=True, needs="scores")
    Y = np.eye(3, dtype=np.uint8)
    with pytest.raises(PluginError) as error:
        metric(Y, Y, Y.astype(float))
    assert str(error.value).startswith("metric 'odd' returned") and message in str(error.value)
    nan = Metric("nan", lambda *args, **kwargs: np.float64("nan"), True, "scores")
    assert math.isnan(nan(Y, Y, Y.astype(float)))  # undefined on the input: allowed
    assert Metric("z", lambda *a, **k: np.array(0.25), True, "scores")(Y, Y, Y) == 0.25


class _OddScores:
    """A method whose scores come in the form ``kind`` names (sparse, list or complex)."""

    parameter_constraints = {
        "kind": [Options(("dense", "sparse", "list", "complex"))],
        "diagnostics": [None, Type(dict)],
    }

    def __init__(self, kind: str = "dense", diagnostics=None):
        self.kind, self.diagnostics = kind, diagnostics

    def get_params(self, deep: bool = True) -> dict:
        return {"kind": self.kind, "diagnostics": self.diagnostics}

    def set_params(self, **params):
        for key, value in params.items():
            setattr(self, key, value)
        return self

    def fit(self, X, Y):
        self.prior_ = np.asarray(Y, dtype=float).mean(axis=0)
        if self.diagnostics is not None:
            self.diagnostics_ = self.diagnostics
        return self

    def decision_function(self, X):
        scores = np.tile(self.prior_, (np.shape(X)[0], 1))
        if self.kind == "sparse":
            return sp.csr_matrix(scores)
        if self.kind == "list":
            return scores.tolist()
        if self.kind == "complex":
            return scores + 0j
        return scores

    def predict(self, X):
        return (
            np.asarray(
                self.decision_function(X).real
                if self.kind == "complex"
                else sp.csr_matrix(self.decision_function(X)).toarray()
            )
            >= 0.5
        ).astype(int)


def _run_split_with(method, monkeypatch):
    """Split 0 of the protocol on genbase with ``method`` standing in for ML-kNN."""
    from pmlbench.plugins.loading import MethodFactory
    from pmlbench.protocol.experiment import plan_splits, prepare, run_split
    from pmlbench.runner.run import spec_from_config

    config = compose_config(["method=mlknn", "dataset=genbase", "protocol.n_splits=1"])
    config["tune"] = {"grid": {}}
    spec = spec_from_config(config)
    plugins = prepare(spec)
    monkeypatch.setattr(MethodFactory, "build", lambda self, seed: method)
    dataset = plugins.dataset.load()
    (plan,) = plan_splits(dataset.n_instances, 1, spec.test_size, spec.seed)
    return run_split(spec, dataset, plan, plugins)


def test_sparse_and_list_scores_give_the_dense_numbers_and_complex_ones_are_refused(monkeypatch):
    from pmlbench.errors import PluginError

    dense = _run_split_with(_OddScores("dense"), monkeypatch).values
    for kind in ("sparse", "list"):
        assert _run_split_with(_OddScores(kind), monkeypatch).values == dense
    with pytest.raises(PluginError, match="returned complex scores"):
        _run_split_with(_OddScores("complex"), monkeypatch)


def test_check_plugin_catches_what_the_protocol_rejects():
    from pmlbench.testing import check_method

    with pytest.raises(PluginError, match="returned complex scores"):
        check_method(_OddScores("complex"))
    with pytest.raises(PluginError, match=r"diagnostics_\['seen'\] to a set"):
        check_method(_OddScores(diagnostics={"seen": {1, 2}}))


def test_unstorable_diagnostics_fail_the_unit_naming_method_and_key(monkeypatch):
    with pytest.raises(PluginError, match=r"sets diagnostics_\['seen'\] to a set"):
        _run_split_with(_OddScores(diagnostics={"seen": {1, 2}, "ok": [1.5]}), monkeypatch)
    # a RecursionError and "Exceeds the limit (4300 digits)" named neither key nor plugin
    with pytest.raises(PluginError, match=r"diagnostics_\['x'\] to a numpy float128"):
        _run_split_with(_OddScores(diagnostics={"x": np.longdouble(1.5)}), monkeypatch)
    with pytest.raises(PluginError, match=r"diagnostics_\['n'\] to an integer of about 5001"):
        _run_split_with(_OddScores(diagnostics={"n": [10**5000]}), monkeypatch)
    fine = {"n": np.int64(3), "curve": np.array([0.5, 0.25]), "name": "x", "nested": {"a": None}}
    assert _run_split_with(_OddScores(diagnostics=fine), monkeypatch).diagnostics == fine


# ------------------------------------------------------------------- terminal escapes

ESCAPES = "\x1b[2J\x1b]0;title\x07\x1b[32mALL UNITS OK"


def test_visible_shows_every_control_character():
    from pmlbench.core.safe_text import visible

    assert visible(ESCAPES) == "\\x1b[2J\\x1b]0;title\\x07\\x1b[32mALL UNITS OK"
    assert visible("a\tb\nc\u202ed\x9b", keep_newlines=True) == "a\tb\nc\\u202ed\\x9b"
    assert visible("a\tb\nc") == "a\\x09b\\x0ac"
    assert visible("ünïcode ± fine") == "ünïcode ± fine"


def test_the_terminal_shows_messages_through_the_one_sanitiser(capsys):
    """pmlbench.core.console had an escaper of its own (escape_control) that missed format
    characters safe_text.visible escapes: a tag character, U+2064, a soft hyphen."""
    from pmlbench.core.console import print_error, print_message, print_warning

    hidden = "\U000e0041\u2064\u00ad"
    print_message(f"line one\nline two {hidden}{ESCAPES}")  # a message keeps its lines
    print_warning(f"w {hidden}")
    print_error(f"e {hidden}")
    out, err = capsys.readouterr()
    assert "line one\nline two \\U000e0041\\u2064\\xad\\x1b[2J" in out
    assert "warning: w \\U000e0041\\u2064\\xad" in err
    assert "error: e \\U000e0041\\u2064\\xad" in err
    assert not any(c in out + err for c in (*hidden, "\x1b", "\x07"))


def test_an_external_program_s_escapes_reach_no_terminal_record_or_report(tmp_path, small_store):
    import json
    import shutil

    from pmlbench.errors import PluginError

    program = tmp_path / "esc.py"
    program.write_text(f"import sys\nsys.stderr.write({ESCAPES!r} + '\\n')\nsys.exit(1)\n")
    X, Y, Xt = _small_data()
    with pytest.raises(PluginError) as error:
        ExternalCommand(f"{{python}} {program} {{train}}").fit(X, Y).decision_function(Xt)
    assert "\x1b" not in str(error.value) and "\\x1b[32mALL UNITS OK" in str(error.value)

    # a store record written by anyone: the report escapes what it shows and writes
    shutil.copytree(small_store, tmp_path / "store")
    record = json.loads(next((tmp_path / "store").glob("*.json")).read_text())
    key = "f" * 32
    failure = {
        "schema": 1,
        "key": key,
        "status": "failed",
        "unit": {**record["unit"], "split": 7},
        "error": f"RuntimeError: {ESCAPES}",
        "error_type": "RuntimeError",
        "traceback": f"Traceback\n  {ESCAPES}\n",
        "config": record["config"],
        "run": record["run"],
    }
    (tmp_path / "store" / f"{key}.failed.json").write_text(json.dumps(failure))
    done = subprocess.run(
        [sys.executable, "-m", "pmlbench", "report", "store", "--out", "out", "--no-html"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "\\x1b[32mALL UNITS OK" in done.stdout + done.stderr
    assert "\x1b" not in done.stdout + done.stderr
    written = {p.name: p.read_text(errors="replace") for p in (tmp_path / "out").glob("*.*")}
    assert "\\x1b[32mALL UNITS OK" in written["failures.csv"] + written["summary.md"]
    assert not [name for name, text in written.items() if "\x1b" in text or "\x07" in text]


# --------------------------------------------------------------------------- reports


@pytest.fixture(scope="module")
def two_method_store(tmp_path_factory) -> Path:
    """A store with the two splits of ML-kNN and of the ridge control on genbase."""
    from pmlbench.runner.run import run_config
    from pmlbench.runner.store import ResultStore

    root = tmp_path_factory.mktemp("two_method_store")
    for method in ("mlknn", "ridge"):
        config = compose_config([f"method={method}", "dataset=genbase", "protocol.n_splits=2"])
        run_config(config, root / method, quiet=True, store=ResultStore(root / "store"))
    return root / "store"


def _report(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pmlbench", "report", *args, "--no-html"],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
    )


def test_a_second_report_into_the_same_out_leaves_none_of_the_first_s_files(
    tmp_path, two_method_store
):
    first = _report(tmp_path, str(two_method_store), "--out", "r", "--reference", "mlknn")
    assert first.returncode == 0, first.stdout + first.stderr
    assert (tmp_path / "r" / "wtl.md").is_file() and (tmp_path / "r" / "comparisons.csv").is_file()
    (tmp_path / "r" / "notes.txt").write_text("mine")
    second = _report(tmp_path, str(two_method_store), "--out", "r")
    assert second.returncode == 0, second.stdout + second.stderr
    names = {p.name for p in (tmp_path / "r").iterdir()}
    assert not {"wtl.md", "wtl.tex", "wtl.csv", "comparisons.csv"} & names
    assert {"table2.md", "notes.txt"} <= names  # its own files, and a user's, stay


def test_a_manifest_cannot_point_outside_the_report(tmp_path):
    from pmlbench.report.outdir import MANIFEST, replace_previous

    (tmp_path / "out").mkdir()
    (tmp_path / "precious").write_text("keep")
    (tmp_path / "out" / MANIFEST).write_text(
        '{"files": ["../precious", "' + str(tmp_path / "precious") + '", 3]}'
    )
    replace_previous(tmp_path / "out", [])
    assert (tmp_path / "precious").read_text() == "keep"


def test_plot_labels_are_drawn_as_written(tmp_path):
    from pmlbench.report.plots import cd_diagram

    names = ["$\\frac$", "ok", "a$b"]
    paths = cd_diagram(names, [1.2, 2.0, 2.8], 0.9, [], "$x^$", tmp_path, "cd")
    text = next(p for p in paths if p.suffix == ".svg").read_text()
    assert "$\\frac$" in text and "a$b" in text and all(p.stat().st_size > 0 for p in paths)


def test_table2_markdown_keeps_its_rows_whatever_the_dataset_is_called(tmp_path):
    from pmlbench.report import ReportOptions, build_report, write_report
    from pmlbench.runner.run import run_config

    _write_npz(tmp_path / "data.npz")
    name = "a|b<script>x</script>"
    for method in ("mlknn", "ridge"):
        config = compose_config(
            [
                f"method={method}",
                "dataset=file",
                f"dataset.path={tmp_path / 'data.npz'}",
                f"dataset.display_name='{name}'",
                "protocol.n_splits=2",
                "tune.grid=null",  # 20 training instances: too few for ML-kNN's k grid
            ]
        )
        run_config(config, tmp_path / "runs" / method, quiet=True)
    report = build_report([tmp_path / "runs"], ReportOptions(plots=False, html=False))
    write_report(report, tmp_path / "out")
    rows = [
        line
        for line in (tmp_path / "out" / "table2.md").read_text().splitlines()
        if line.startswith("| a")
    ]
    cells = [re.split(r"(?<!\\)\|", line)[1:-1] for line in rows]
    assert cells and all(len(c) == 4 for c in cells)  # dataset, noise, two methods
    assert "<script>" not in (tmp_path / "out" / "table2.md").read_text()
    assert "a\\|b&lt;script&gt;" in rows[0]


def test_an_undefined_metric_is_named_and_no_rerun_is_advised():
    import pandas as pd

    from pmlbench.report.prepare import prepare
    from tests.helpers import run_rows

    rows = run_rows("d", 1.0, "ref", [(0.6, 0.1), (0.7, 0.2)])
    rows += run_rows("d", 1.0, "other", [(0.5, 0.1), (0.5, 0.2)])
    for row in rows:
        if row["metric"] == "average_precision" and row["method"] == "ref":
            row["value"] = float("nan")  # as a run stores it where the metric is undefined
    records = pd.DataFrame(rows)
    with pytest.raises(PmlbenchError) as error:
        prepare(records)
    message = str(error.value)
    assert "metric average_precision has no value (NaN) in 2 result rows" in message
    assert "rerun those runs" not in message and "--metrics hamming_loss" in message
    assert prepare(records, metrics=["hamming_loss"]).metrics == ["hamming_loss"]


def test_a_store_with_only_failed_units_says_so(tmp_path, monkeypatch):
    from pmlbench.methods.mlknn import MLkNN
    from pmlbench.report.sources import load_results
    from pmlbench.runner.run import UnitsFailed, run_config
    from pmlbench.runner.store import ResultStore

    def fail(self, X, Y):
        raise RuntimeError("always")

    monkeypatch.setattr(MLkNN, "fit", fail)
    config = compose_config(["method=mlknn", "dataset=genbase", "protocol.n_splits=2"])
    with pytest.raises(UnitsFailed):
        run_config(config, tmp_path / "run", quiet=True, store=ResultStore(tmp_path / "store"))
    for where in ("store", "run"):
        with pytest.raises(PmlbenchError) as error:
            load_results([tmp_path / where])
        assert "only 2 without results" in str(error.value)
        assert "RuntimeError: always" in str(error.value)


def test_a_relative_workdir_holds_the_program_and_the_exchange_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "wd").mkdir()
    (tmp_path / "wd" / "echo.py").write_text(textwrap.dedent(PARAM_ECHO).replace("0.5", "0"))
    X, Y, Xt = _small_data()
    model = ExternalCommand(
        "{python} echo.py {train} {test} {out}", params={"lam": 2.0}, workdir="wd"
    ).fit(X, Y)
    np.testing.assert_array_equal(model.decision_function(Xt), np.full((6, 3), 2.0))
