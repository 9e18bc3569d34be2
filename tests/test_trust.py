"""Numbers you can trust: nothing stale, nothing damaged used silently (issue 12).

Stale results: a unit's key covers the whole distribution of each third-party plugin, the
import closure in pmlbench of its plugins and of the protocol, the files a config names and
the numerical libraries' versions; the shared-work cache's key covers pmlbench's source
(tests/test_unit_keys.py tests the import closures). Damaged files: a store record or cache
entry that does not check out is recomputed and replaced with a warning, and the report
lists it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import runpy
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pmlbench.api import compose_config
from pmlbench.core import workcache
from pmlbench.plugins import registry
from pmlbench.runner.run import run_config, spec_from_config
from pmlbench.runner.store import ResultStore, iter_records, load_damaged
from pmlbench.runner.units import input_files, unit_description, unit_keys

METRICS = ["hamming_loss", "average_precision", "one_error"]


def statuses(run_dir: Path) -> list[str]:
    return [u["status"] for u in json.loads((run_dir / "units.json").read_text())["units"]]


def results(run_dir: Path) -> pd.DataFrame:
    frame = pd.read_csv(run_dir / "results.csv")
    return frame.drop(columns=["fit_seconds", "predict_seconds"])


@pytest.fixture(scope="module")
def base_config() -> dict:
    config = compose_config(["method=mlknn", "dataset=genbase", "protocol.n_splits=2"])
    return {**config, "metrics": METRICS, "quiet": True}


# ------------------------------------------------------------------ a plugin distribution

PACKAGE = "pmltrust_twomod"
DIST = "pmltrust-twomod"
METHOD = "trust_prior"
MODULES = {
    "__init__.py": '"""A tiny PML method plugin in two modules."""\n',
    "method.py": textwrap.dedent(
        '''
        """The estimator; its model lives in the package's second module."""

        import numpy as np
        from sklearn.base import BaseEstimator

        from pmlbench.plugin import Interval, ValidatedParameters
        from pmltrust_twomod.model import label_scores


        class Prior(ValidatedParameters, BaseEstimator):
            """Scores every label by its candidate frequency."""

            parameter_constraints = {"shift": [Interval(float, 0, None)]}

            def __init__(self, shift: float = 0.0):
                self.shift = shift

            def fit(self, X, Y):
                self._validate_params()
                self.scores_ = label_scores(np.asarray(Y, dtype=float)) + self.shift
                return self

            def decision_function(self, X):
                return np.tile(self.scores_, (X.shape[0], 1))

            def predict(self, X):
                return (self.decision_function(X) >= 0.5).astype(np.uint8)
        '''
    ),
    "model.py": "def label_scores(Y):\n    return Y.mean(axis=0)\n",
}


def _record_line(root: Path, path: Path) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(path.read_bytes()).digest())
    return f"{path.relative_to(root).as_posix()},sha256={digest.rstrip(b'=').decode()},"


def install_plugin(site: Path, editable: bool) -> None:
    """A distribution in ``site`` as pip lays it out: its package and a dist-info directory
    whose RECORD lists the package's files (a regular install) or only the metadata (an
    editable one, whose sources the RECORD does not name)."""
    package = site / PACKAGE
    package.mkdir(parents=True)
    for name, text in MODULES.items():
        (package / name).write_text(text)
    info = site / f"{PACKAGE}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {DIST}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        f"[pmlbench.methods]\n{METHOD} = {PACKAGE}.method:Prior\n"
    )
    files = [info / "METADATA", info / "entry_points.txt"]
    if not editable:
        files += sorted(package.glob("*.py"))
    lines = [_record_line(site, p) for p in files] + [f"{PACKAGE}-0.1.dist-info/RECORD,,"]
    (info / "RECORD").write_text("\n".join(lines) + "\n")


def forget_plugin() -> None:
    """What a new process would see: the plugin registry read again, the package unimported."""
    registry.plugins.cache_clear()
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[name]


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    def make(editable: bool) -> Path:
        site = tmp_path / "site"
        install_plugin(site, editable)
        monkeypatch.syspath_prepend(str(site))
        forget_plugin()
        return site / PACKAGE

    yield make
    monkeypatch.undo()
    forget_plugin()


@pytest.mark.parametrize("editable", [False, True], ids=["installed", "editable"])
def test_editing_a_second_module_of_a_plugin_recomputes(tmp_path, base_config, plugin, editable):
    package = plugin(editable)
    assert registry.get("method", METHOD).distribution == DIST
    config = {**base_config, "method": {"name": METHOD, "shift": 0.0}, "tune": {"grid": {}}}
    store = ResultStore(tmp_path / "store")
    run_config(config, tmp_path / "a", quiet=True, store=store)
    run_config(config, tmp_path / "b", quiet=True, store=store)
    assert statuses(tmp_path / "a") == ["computed"] * 2
    assert statuses(tmp_path / "b") == ["cached"] * 2
    code = unit_description(spec_from_config(config), 0)["code"]["plugins"]
    assert set(code) == {DIST}  # built-in plugins count through code.pmlbench

    (package / "model.py").write_text("def label_scores(Y):\n    return 1 - Y.mean(axis=0)\n")
    forget_plugin()
    run_config(config, tmp_path / "c", quiet=True, store=store)
    assert statuses(tmp_path / "c") == ["computed"] * 2
    assert unit_description(spec_from_config(config), 0)["code"]["plugins"] != code
    before, after = results(tmp_path / "a"), results(tmp_path / "c")
    assert not before["value"].equals(after["value"])  # the new model's numbers, not the old


# ------------------------------------------------------------------ files a config names


def run_rows(run_dir: Path) -> int:
    """The dataset's number of instances that run.json reports."""
    return json.loads((run_dir / "run.json").read_text())["dataset"]["n"]


def write_arff(path: Path, n: int) -> None:
    rng = np.random.default_rng(0)
    lines = ["@relation trust"]
    lines += [f"@attribute f{j} numeric" for j in range(4)]
    lines += [f"@attribute l{j} {{0,1}}" for j in range(3)]
    lines.append("@data")
    for i in range(n):
        x = rng.normal(size=4)
        y = np.zeros(3, dtype=int)
        y[i % 3] = 1
        lines.append(",".join([f"{v:.4f}" for v in x] + [str(v) for v in y]))
    path.write_text("\n".join(lines) + "\n")


def test_a_data_file_edited_in_place_recomputes(tmp_path, base_config, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_arff(tmp_path / "my.arff", 80)
    config = {
        **base_config,
        "dataset": {"name": "file", "path": "my.arff", "label_count": 3},
        "method": {"name": "mlknn", "k": 5, "s": 1.0},
    }
    store = ResultStore(tmp_path / "store")
    run_config(config, tmp_path / "a", quiet=True, store=store)
    files = input_files(spec_from_config(config))
    assert list(files) == ["dataset.path"] and list(files["dataset.path"]) == ["my.arff"]

    write_arff(tmp_path / "my.arff", 200)  # edited in place: more rows, same path
    run_config(config, tmp_path / "b", quiet=True, store=store)
    assert statuses(tmp_path / "b") == ["computed"] * 2
    assert run_rows(tmp_path / "a") == 80 and run_rows(tmp_path / "b") == 200
    run_config(config, tmp_path / "c", quiet=True, store=store)
    assert statuses(tmp_path / "c") == ["cached"] * 2


SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np

    train, test, out = sys.argv[1:4]
    Y = np.load(train)["Y"].astype(float)
    X = np.load(test)["X"]
    np.savez(out, scores=np.tile({scores}, (X.shape[0], 1)))
    """
)


def test_an_external_script_edited_between_runs_recomputes(tmp_path, base_config):
    work = tmp_path / "work"
    work.mkdir()
    (work / "score.py").write_text(SCRIPT.format(scores="Y.mean(axis=0)"))
    config = {
        **base_config,
        "method": {
            "name": "external",
            "command": "{python} score.py {train} {test} {out}",  # relative to the workdir
            "workdir": str(work),
        },
        "tune": {"grid": {}},
    }
    store = ResultStore(tmp_path / "store")
    run_config(config, tmp_path / "a", quiet=True, store=store)
    run_config(config, tmp_path / "b", quiet=True, store=store)
    assert statuses(tmp_path / "b") == ["cached"] * 2
    (work / "score.py").write_text(SCRIPT.format(scores="1 - Y.mean(axis=0)"))
    run_config(config, tmp_path / "c", quiet=True, store=store)
    assert statuses(tmp_path / "c") == ["computed"] * 2
    assert not results(tmp_path / "a")["value"].equals(results(tmp_path / "c")["value"])


def test_which_config_strings_count_as_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "here.txt").write_text("a")
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "inner.m").write_text("b")
    absolute = tmp_path / "abs.py"
    absolute.write_text("c")
    spec = spec_from_config(
        {
            **compose_config(["method=external", "dataset=genbase"]),
            "method": {
                "name": "external",
                "command": f"octave-cli {absolute} inner.m --data=here.txt 'un quoted' {{train}}",
                "workdir": str(tmp_path / "work"),
                "params": {"table": "here.txt", "label": "genbase"},
            },
        }
    )
    files = input_files(spec)
    assert sorted(files) == ["method.command", "method.params.table"]
    assert sorted(files["method.command"]) == [str(absolute), "here.txt", "inner.m"]
    (tmp_path / "here.txt").write_text("changed")
    assert input_files(spec)["method.params.table"] != files["method.params.table"]


def test_cache_entries_follow_pmlbench_source(tmp_path, monkeypatch):
    X = np.arange(12.0).reshape(4, 3)
    calls = []

    def compute():
        calls.append(1)
        return X * 2

    with workcache.using_cache_dir(tmp_path):
        workcache.cached_array("t", {"X": X}, compute)
        workcache.cached_array("t", {"X": X}, compute)
        assert len(calls) == 1
        monkeypatch.setattr(workcache, "code_digest", lambda: "pmlbench edited")
        workcache.cached_array("t", {"X": X}, compute)
        assert len(calls) == 2
    assert len(list((tmp_path / "t").rglob("*.npz"))) == 2


def test_keys_stay_cheap(base_config):
    """Keying a 5-split job costs milliseconds once the files were read once."""
    import time

    spec = spec_from_config({**base_config, "protocol": {"n_splits": 5, "test_size": 0.5}})
    unit_keys(spec)
    start = time.perf_counter()
    for _ in range(10):
        unit_keys(spec)
    assert (time.perf_counter() - start) / 10 < 0.1


# ------------------------------------------------------------------ damaged store records


def _first_record(store_dir: Path, split: int) -> Path:
    for path in sorted(store_dir.glob("*.json")):
        record = json.loads(path.read_text())
        if record["unit"]["split"] == split:
            return path
    raise AssertionError(f"no record of split {split}")


def _empty_list(path: Path, store_dir: Path) -> None:
    path.write_text("[]")


def _one_metric(path: Path, store_dir: Path) -> None:
    record = json.loads(path.read_text())
    record["records"] = record["records"][:1]
    path.write_text(json.dumps(record))


def _swapped_split(path: Path, store_dir: Path) -> None:
    path.write_text(_first_record(store_dir, 1).read_text())


def _truncated(path: Path, store_dir: Path) -> None:
    text = path.read_text()
    path.write_text(text[: len(text) // 2])


def _altered_value(path: Path, store_dir: Path) -> None:
    record = json.loads(path.read_text())
    record["records"][0]["value"] = 0.123  # the rows no longer match the split's details
    path.write_text(json.dumps(record))


def _edit_rows(column: str, value) -> Callable[[Path, Path], None]:
    """Change one identifying field in every row, as a hand-edit of a record would."""

    def edit(path: Path, store_dir: Path) -> None:
        record = json.loads(path.read_text())
        for row in record["records"]:
            row[column] = value
        path.write_text(json.dumps(record))

    return edit


def _value_text(text: str) -> Callable[[Path, Path], None]:
    """Write one value (in rows and split details alike) as the JSON text ``text``."""

    def edit(path: Path, store_dir: Path) -> None:
        record = json.loads(path.read_text())
        metric = record["records"][0]["metric"]
        record["records"][0]["value"] = record["split"]["values"][metric] = "@@"
        path.write_text(json.dumps(record).replace('"@@"', text))

    return edit


DAMAGE = {
    "empty list": _empty_list,
    "one metric": _one_metric,
    "swapped split": _swapped_split,
    "truncated JSON": _truncated,
    "altered value": _altered_value,
    # identity fields the report reads: ML-kNN's numbers shown as another method's column,
    # another dataset's rows, another seed, a noise level that never ran
    "method renamed": _edit_rows("method", "ridge"),
    "dataset renamed": _edit_rows("dataset", "medical"),
    "seed changed": _edit_rows("seed", 3),
    "noise rate changed": _edit_rows("noise_rate", 2),
    "parameter changed": _edit_rows("param_k", 3),
    # values out of range: infinity and an integer beyond every float
    "infinite value": _value_text("1e999"),
    "huge integer": _value_text("1" + "0" * 400),
}


@pytest.fixture(scope="module")
def undamaged(tmp_path_factory, base_config):
    root = tmp_path_factory.mktemp("undamaged")
    run_config(base_config, root / "run", quiet=True, store=ResultStore(root / "store"))
    return root


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_record_is_recomputed_and_replaced(
    tmp_path, base_config, undamaged, damage, capsys
):
    import shutil

    store_dir = tmp_path / "store"
    shutil.copytree(undamaged / "store", store_dir)
    victim = _first_record(store_dir, 0)
    intact = victim.read_text()
    DAMAGE[damage](victim, store_dir)

    run_config(base_config, tmp_path / "rerun", quiet=True, store=ResultStore(store_dir))
    assert statuses(tmp_path / "rerun") == ["computed", "cached"]
    pd.testing.assert_frame_equal(results(tmp_path / "rerun"), results(undamaged / "run"))
    err = capsys.readouterr().err
    assert err.count("warning: damaged store file") == 1 and victim.name in err
    replaced = json.loads(victim.read_text())
    assert replaced["records"] == [
        {**r, **{k: replaced["records"][i][k] for k in ("fit_seconds", "predict_seconds")}}
        for i, r in enumerate(json.loads(intact)["records"])
    ]
    assert load_damaged(store_dir).empty


def test_damaged_predictions_are_recomputed(tmp_path, base_config, capsys):
    config = {**base_config, "save_predictions": True}
    store = ResultStore(tmp_path / "store")
    run_config(config, tmp_path / "a", quiet=True, store=store)
    (npz,) = [p for p in sorted((tmp_path / "store").glob("*.npz"))][:1]
    arrays = dict(np.load(npz))
    name = sorted(arrays)[0]
    arrays[name] = np.asarray(arrays[name]).copy()
    arrays[name].flat[0] = 1 - arrays[name].flat[0]
    np.savez_compressed(npz.with_suffix(".tmp.npz"), **arrays)
    npz.with_suffix(".tmp.npz").replace(npz)
    run_config(config, tmp_path / "b", quiet=True, store=ResultStore(tmp_path / "store"))
    assert sorted(statuses(tmp_path / "b")) == ["cached", "computed"]
    assert "do not match the digest" in capsys.readouterr().err


def test_the_report_lists_damaged_files_and_reports_the_rest(tmp_path, undamaged, capsys):
    import shutil

    from pmlbench.report import ReportOptions, build_report, write_report

    store_dir = tmp_path / "store"
    shutil.copytree(undamaged / "store", store_dir)
    victim = _first_record(store_dir, 0)
    victim.write_text("[]")
    loaded_damaged = load_damaged(store_dir)
    assert loaded_damaged["path"].tolist() == [str(victim)]
    assert len(list(iter_records(store_dir, damaged=[]))) == 1
    report = build_report([store_dir], ReportOptions(plots=False))
    failures = report.loaded.failures
    (row,) = failures[failures["status"] == "damaged"].to_dict(orient="records")
    assert row["path"] == str(victim) and "not a unit record" in row["error"]
    assert set(report.loaded.records["split"]) == {1}
    write_report(report, tmp_path / "report")
    assert victim.name in (tmp_path / "report" / "summary.md").read_text()
    assert "warning: damaged store file" in capsys.readouterr().err


# ------------------------------------------------------------------ damaged cache entries


def _flip_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _alter_values(path: Path) -> None:
    with np.load(path) as data:
        arrays = {name: data[name] for name in data.files}
    name = next(n for n in arrays if n != "__manifest__" and arrays[n].size)
    arrays[name] = arrays[name].copy()
    arrays[name].flat[0] = arrays[name].flat[-1]
    with open(path, "wb") as handle:
        np.savez(handle, **arrays)  # a valid npz with the old manifest


CACHE_DAMAGE = {"bit flip": _flip_byte, "truncated": _truncate, "altered values": _alter_values}


@pytest.fixture(scope="module")
def cached_run(tmp_path_factory, base_config):
    root = tmp_path_factory.mktemp("cached")
    with workcache.using_cache_dir(root / "cache"):
        run_config(base_config, root / "run", quiet=True)
    return root


@pytest.mark.parametrize("damage", list(CACHE_DAMAGE))
def test_a_damaged_cache_entry_is_recomputed_and_replaced(
    tmp_path, base_config, cached_run, damage, capsys
):
    import shutil

    cache_dir = tmp_path / "cache"
    shutil.copytree(cached_run / "cache", cache_dir)
    entries = sorted(cache_dir.rglob("*.npz"))
    assert entries
    for entry in entries:
        CACHE_DAMAGE[damage](entry)
    capsys.readouterr()
    before = workcache.stats.copy()
    with workcache.using_cache_dir(cache_dir):
        run_config(base_config, tmp_path / "rerun", quiet=True)
    pd.testing.assert_frame_equal(results(tmp_path / "rerun"), results(cached_run / "run"))
    err = capsys.readouterr().err
    assert err.count("warning: damaged cache entry") == len(entries)
    damaged = sum(v for k, v in (workcache.stats - before).items() if k.endswith(":damaged"))
    assert damaged == len(entries)
    for entry in entries:  # replaced: every entry reads back as the undamaged one
        original = workcache._read(cached_run / "cache" / entry.relative_to(cache_dir))
        assert _same(workcache._read(entry), original)


def _same(a, b) -> bool:
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if hasattr(a, "toarray"):
        a, b = a.toarray(), b.toarray()
    return bool(np.array_equal(a, b))


# ------------------------------------------------------------------ presentation packages


def test_report_and_cli_code_stay_out_of_unit_keys(tmp_path, monkeypatch):
    """A fix to the report or the CLI leaves finished units valid; code that computes does not.

    Both packages sit above the runner in the layer order, so nothing the runner imports can
    import them (tests/test_layers.py enforces the order).
    """
    from pmlbench.core import fingerprint

    layers = runpy.run_path(str(Path(__file__).with_name("test_layers.py")))["LAYERS"]
    index = {c: i for i, layer in enumerate(layers) for c in layer}
    for name in fingerprint.PRESENTATION_PACKAGES:
        package = name.rstrip("/").replace("/", ".")
        assert index[package] < index["pmlbench.runner"], package

    names = [name for name, _ in fingerprint.pmlbench_source_files()]
    assert "pmlbench/methods/lift.py" in names and "pmlbench/protocol/experiment.py" in names
    assert not [n for n in names if n.startswith(("pmlbench/report/", "pmlbench/cli/"))]

    # both digests: an extra report or CLI file does not change them, an extra method does
    real_walk = fingerprint._walk
    extra = tmp_path / "extra.py"
    extra.write_text("x = 1\n")

    def digests(added: str | None) -> tuple[str, str | None]:
        def walk(directory, prefix):
            found = real_walk(directory, prefix)
            return found + ([(added, str(extra))] if added else [])

        monkeypatch.setattr(fingerprint, "_walk", walk)
        fingerprint._set_digests.clear()
        return (
            fingerprint.pmlbench_source_digest(),
            fingerprint.distribution_digest(None, ["pmlbench.methods.lift"]),
        )

    before = digests(None)
    assert digests("pmlbench/report/new_table.py") == before
    assert digests("pmlbench/cli/commands/new.py") == before
    changed = digests("pmlbench/methods/new_method.py")
    assert changed[0] != before[0] and changed[1] != before[1]
