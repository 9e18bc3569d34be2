"""The dry run's cost model (pmlbench.runner.costmodel): the fit on a synthetic store with a
known power law, the fits a unit's tuning makes, the fallback rule, the fitting script, the
shipped model file and its accuracy table in docs/sweeps.md."""

from __future__ import annotations

import importlib.util
import json
import math
import tarfile
from importlib.metadata import entry_points
from pathlib import Path

import numpy as np
import pytest

from pmlbench.datasets.bundled import CITATIONS
from pmlbench.runner.costmodel import (
    FALLBACK_NAME,
    CostModel,
    Work,
    accuracy_table,
    file_sha256,
    fit_method,
    fit_model,
    load_source,
    method_entry,
    method_observations,
    observation,
    unit_signature,
)
from pmlbench.runner.store import ResultStore
from pmlbench.runner.units import content_key
from tests.helpers import NOT_YET_RECORDED

ROOT = Path(__file__).resolve().parents[1]
ARCHIVE = ROOT / "docs" / "leaderboard-results.tar.xz"
SWEEPS_DOC = ROOT / "docs" / "sweeps.md"
BUILTIN_METHODS = sorted(
    ep.name
    for ep in entry_points(group="pmlbench.methods")
    if ep.value.startswith("pmlbench.methods.") and ep.name != "external"
)
BUNDLED_DATASETS = sorted(CITATIONS)

TRUTH = (-9.0, 1.3, 0.6, 0.25)  # a, b, c, e: exp(a) n^b d^c q^e CPU seconds per fit
KAPPA = 0.5  # a grid point's fit costs half a fresh fit on its rows
HOLDOUT = {"cv": 5, "procedure": "holdout", "grid": {"k": [1, 2, 3, 4]}}


def _script():
    spec = importlib.util.spec_from_file_location(
        "fit_cost_model", ROOT / "scripts" / "fit_cost_model.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def one_fit(n_train: float, d: float, q: float, truth=TRUTH) -> float:
    a, b, c, e = truth
    return math.exp(a + b * math.log(n_train) + c * math.log(d) + e * math.log(q))


def unit_record(
    method: str, dataset: str, size: tuple[int, int, int], split: int, cpu: float, *,
    tune: dict | None = None, final: float | None = None, rate: float = 1.0,
) -> dict:  # fmt: skip
    """A finished-unit record as a run writes it (valid for the store's strict reader):
    ``cpu`` CPU seconds; a tuned unit's split timings say its tuning took ``cpu - final``."""
    n, d, q = size
    unit = {
        "method": {"name": method},
        "dataset": {"name": dataset},
        "noise": {"name": "uniform", "rate": rate},
        "tune": tune or {},
        "bipartition": {"rule": "method"},
        "metrics": ["hamming_loss"],
        "seed": 0,
        "split": split,
    }
    details = {"index": split, "values": {"hamming_loss": 0.1}, "n_train": n // 2}
    if tune:
        points = [{"k": k} for k in tune["grid"]["k"]]
        details["tuning"] = {"cv": tune["cv"], "procedure": tune["procedure"], "grid": points,
                             "seconds": cpu - final}  # fmt: skip
        details["fit_seconds"] = cpu
    return {
        "key": content_key(unit),
        "status": "done",
        "unit": unit,
        "records": [{"metric": "hamming_loss", "value": 0.1, "split": split}],
        "split": details,
        "dataset": {"name": dataset, "n": n, "d": d, "l": q},
        "noise": "uniform",
        "run": {"cpu_seconds": cpu, "git_commit": "abc1234"},
    }


def synthetic_store(root: Path, method: str = "m", *, noise: float = 0.0, seed: int = 0,
                    n_datasets: int = 8, truth=TRUTH) -> ResultStore:  # fmt: skip
    """A store of ``method`` tuned on 4 grid points by holdout on ``n_datasets`` datasets of
    random sizes, 3 splits each, whose CPU seconds follow ``truth`` and :data:`KAPPA`."""
    rng = np.random.default_rng(seed)
    store = ResultStore(root)
    work = Work.of(HOLDOUT)
    for i in range(n_datasets):
        size = tuple(int(v) for v in rng.integers([200, 20, 3], [20000, 5000, 1000]))
        for split in range(3):
            final = one_fit(size[0] // 2, size[1], size[2], truth)
            cpu = final * work.fits(KAPPA) * math.exp(rng.normal(0, noise))
            final *= cpu / (final * work.fits(KAPPA))  # the split's timings share the noise
            store.save(unit_record(method, f"{method}{i}", size, split, cpu, tune=HOLDOUT,
                                   final=final))  # fmt: skip
    return store


def test_holdout_tunes_on_one_fold_kfold_on_all_and_a_learned_threshold_adds_its_folds():
    work = Work.of(HOLDOUT)
    assert (work.grid_points, work.scored_folds, work.fold_share) == (4, 1, 0.8)
    assert work.fits(1.0) == pytest.approx(1 + 4 * 1 * 0.8)  # not 4 x 5 + 1
    assert Work.of({**HOLDOUT, "procedure": "kfold"}).fits(1.0) == pytest.approx(1 + 4 * 5 * 0.8)
    assert Work.of({**HOLDOUT, "cv": 3}).fits(0.5) == pytest.approx(1 + 0.5 * 4 * 2 / 3)
    # a tune node from before tune.procedure existed scored every fold
    assert Work.of({"cv": 5, "grid": {"k": [1, 2]}}).fits(1.0) == pytest.approx(1 + 2 * 5 * 0.8)
    # nothing tuned: one fit; a one-point grid is taken without cross-validation
    assert Work.of({}).fits(1.0) == Work.of(None).fits(0.3) == 1.0
    assert Work.of({**HOLDOUT, "grid": {"k": [7]}}).fits(1.0) == 1.0
    assert Work.of({**HOLDOUT, "grid": {"k": [1, 2], "s": [1, 2, 3]}}).grid_points == 6
    learned = {"rule": "global", "training_scores": "cv", "cv": 4}
    assert Work.of(None, learned).fits(1.0) == 1 + 3
    assert Work.of(None, {**learned, "training_scores": "train"}).fits(1.0) == 1.0
    assert Work.of(None, {"rule": "threshold"}).fits(1.0) == 1.0


def test_fitting_a_synthetic_store_recovers_its_power_law_and_kappa(tmp_path):
    store = synthetic_store(tmp_path / "store")
    source = load_source(store.root, "store")
    assert len(source.records) == 24
    model = fit_model([source], "python scripts/fit_cost_model.py store")
    entry = model["methods"]["m"]
    assert entry["coefficients"] == pytest.approx(TRUTH, abs=1e-4)
    assert entry["kappa"] == pytest.approx(KAPPA, rel=1e-3)
    assert entry["records"] == 24 and entry["datasets"] == 8 and entry["source"] == "store"
    assert entry["tuning"] == {"grid_points": 4, "scored_folds": 1, "fold_share": 0.8,
                               "extra_fits": 0.0}  # fmt: skip
    # exact data: every estimate, held out or not, is exact
    for accuracy in (entry["known_dataset"], entry["new_dataset"]):
        assert accuracy["median"] == pytest.approx(1.0) and accuracy["p90"] == pytest.approx(1.0)
        assert accuracy["sum"] == pytest.approx(1.0)
    assert model["sources"] == [{"name": "store", "sha256": source.sha256, "records": 24,
                                 "git_commits": ["abc1234"]}]  # fmt: skip

    # the same unit untuned costs one fit; by kfold, its grid on every fold
    fitted = CostModel(model)
    plain = one_fit(1000, 50, 10)
    assert fitted.estimate("m", 1000, 50, 10).seconds == pytest.approx(plain, rel=1e-3)
    tuned = fitted.estimate("m", 1000, 50, 10, Work.of(HOLDOUT))
    assert tuned.how == "model"
    assert tuned.seconds == pytest.approx(plain * (1 + KAPPA * 3.2), rel=1e-3)
    kfold = fitted.estimate("m", 1000, 50, 10, Work.of({**HOLDOUT, "procedure": "kfold"}))
    assert kfold.seconds == pytest.approx(plain * (1 + KAPPA * 16), rel=1e-3)

    # noisy times: close, the held-out ratios spread, and a dataset's own factor helps
    noisy = fit_model([load_source(synthetic_store(tmp_path / "noisy", noise=0.1, seed=3).root)])
    entry = noisy["methods"]["m"]
    assert entry["coefficients"][1:] == pytest.approx(TRUTH[1:], abs=0.15)
    assert entry["kappa"] == pytest.approx(KAPPA, rel=1e-6)  # the split timings share the noise
    assert entry["new_dataset"]["p90"] > 1.02 and entry["new_dataset"]["p10"] < 0.98


def test_a_dataset_the_method_was_fitted_on_keeps_its_own_factor(tmp_path):
    store = synthetic_store(tmp_path / "store", n_datasets=6)
    # one more dataset whose units take three times what its size says
    size = (3000, 400, 40)
    for split in range(3):
        final = 3 * one_fit(1500, 400, 40)
        store.save(unit_record("m", "slow", size, split, final * Work.of(HOLDOUT).fits(KAPPA),
                               tune=HOLDOUT, final=final))  # fmt: skip
    model = CostModel(fit_model([load_source(store.root)]))
    assert model.dataset_size("slow") == size
    work = Work.of(HOLDOUT)
    recorded = 3 * one_fit(1500, 400, 40) * work.fits(KAPPA)
    known = model.estimate("m", 1500, 400, 40, work, dataset="slow").seconds
    assert known == pytest.approx(recorded, rel=1e-3)  # the file keeps 4 decimals of logs
    unknown = model.estimate("m", 1500, 400, 40, work).seconds
    assert 1 < recorded / unknown < 3  # the power law alone is pulled towards the factor
    assert model.data["methods"]["m"]["known_dataset"]["p90"] == pytest.approx(1.0)


def test_a_method_without_a_model_is_estimated_by_the_median_known_method(tmp_path):
    fits = {"fast": (-12.0, 1.0, 0.5, 0.5), "mid": (-10.0, 1.0, 0.5, 0.5),
            "slow": (-8.0, 1.0, 0.5, 0.5)}  # fmt: skip
    sources = [load_source(synthetic_store(tmp_path / m, m, truth=t).root, m)
               for m, t in fits.items()]  # fmt: skip
    model = CostModel(fit_model(sources))
    assert sorted(model.methods) == ["fast", "mid", "slow"]
    found = model.estimate("plugin", 1000, 50, 10, Work.of(HOLDOUT))
    assert found.how == "fallback"
    # the median method's one fit, times the unit's fits at the methods' median kappa
    assert model.kappa("plugin") == model.default_kappa == pytest.approx(KAPPA)
    assert found.seconds == pytest.approx(one_fit(1000, 50, 10, fits["mid"]) * 2.6, rel=1e-3)
    assert model.estimate("plugin", 0, 50, 10) is None
    assert CostModel({"methods": {}}).estimate("plugin", 1000, 50, 10) is None
    # how far off the rule is: each method estimated by the others' median
    fallback = model.data["fallback_accuracy"]
    assert fallback["methods"] == 3 and fallback["units"] == 3 * 24
    table = accuracy_table(model.data)
    assert table.splitlines()[-1].startswith(f"| {FALLBACK_NAME} | the other methods | 72 | 3")


def test_each_method_is_fitted_to_the_first_source_that_holds_it(tmp_path):
    first = synthetic_store(tmp_path / "tuned", "m")  # also the only one with method n
    for record in synthetic_store(tmp_path / "n", "n", n_datasets=3).root.glob("*.json"):
        (first.root / record.name).write_bytes(record.read_bytes())  # 3 datasets: too few
    archive = tmp_path / "old.tar.xz"
    older = synthetic_store(tmp_path / "old", "m", truth=(-5.0, 1.0, 0.0, 0.0))
    more_n = synthetic_store(tmp_path / "old_n", "n", n_datasets=5)
    with tarfile.open(archive, "w:xz") as tar:
        for path in sorted([*older.root.glob("*.json"), *more_n.root.glob("*.json")]):
            tar.add(path, arcname=f"outputs/store/{path.name}")
    script = _script()
    out = tmp_path / "model.json"
    assert script.main([str(first.root), str(archive), "--output", str(out)]) == 0
    text = out.read_bytes()
    model = json.loads(text)
    assert model["methods"]["m"]["source"] == str(first.root)
    assert model["methods"]["m"]["coefficients"] == pytest.approx(TRUTH, abs=1e-4)
    assert (
        model["methods"]["n"]["source"] == str(archive) and model["methods"]["n"]["datasets"] == 5
    )
    assert model["command"] == f"python scripts/fit_cost_model.py {first.root} {archive}"
    assert [s["sha256"] for s in model["sources"]][1] == file_sha256(archive)
    # the same sources give the same file, byte for byte
    assert script.main([str(first.root), str(archive), "--output", str(out)]) == 0
    assert out.read_bytes() == text
    with pytest.raises(SystemExit):
        script.main([str(tmp_path / "nowhere")])


def test_kappa_comes_from_tuned_records_of_any_source_else_the_measured_methods_median(
    tmp_path,
):
    untuned = ResultStore(tmp_path / "untuned")  # u and v: untuned units on 5 datasets
    sizes = [(1000, 10, 3), (3000, 50, 20), (2000, 200, 7), (5000, 30, 100), (800, 500, 12)]
    for method in ("u", "v"):
        for i, size in enumerate(sizes):
            untuned.save(unit_record(method, f"d{i}", size, 0, one_fit(size[0] // 2, *size[1:])))
    few = ResultStore(tmp_path / "few")  # u tuned on one dataset only: too few to fit, but timed
    size = (2000, 20, 4)
    final = one_fit(1000, 20, 4)
    few.save(unit_record("u", "d1", size, 0, final * (1 + 0.3 * 3.2), tune=HOLDOUT, final=final))
    tuned = synthetic_store(tmp_path / "tuned", "w")  # w: kappa 0.5
    model = fit_model([load_source(p) for p in (tuned.root, few.root, untuned.root)])
    entries = model["methods"]
    assert entries["u"]["source"].endswith("untuned") and entries["u"]["kappa_measured"]
    assert entries["u"]["kappa"] == pytest.approx(0.3, rel=1e-3)  # from "few"
    assert entries["w"]["kappa"] == pytest.approx(KAPPA, rel=1e-3)
    assert not entries["v"]["kappa_measured"]
    assert entries["v"]["kappa"] == model["default_kappa"] == pytest.approx((0.3 + KAPPA) / 2)
    assert entries["v"]["coefficients"] == pytest.approx(TRUTH, abs=1e-4)  # untuned: 1 fit


def test_declined_and_unfinished_records_are_not_observations():
    record = unit_record("m", "a", (100, 10, 5), 0, 1.0)
    assert observation(record) is not None
    assert observation({**record, "status": "not_applicable"}) is None
    assert observation({**record, "run": {"cpu_seconds": 0.0}}) is None
    assert observation({**record, "split": {}}) is None


def declined_outcome(record: dict, code: str = "old") -> dict:
    """The outcome a run writes when the method declines ``record``'s unit, computed by the
    code ``code`` (so under another key than the record's)."""
    unit = {**record["unit"], "code": {"pmlbench": code}}
    return {"schema": 1, "key": content_key(unit), "status": "not_applicable", "unit": unit,
            "reason": "m refuses 5 labels (method.max_labels = 4): ...", "config": {}}  # fmt: skip


def test_units_declined_and_never_finished_are_listed_once_by_their_signature(tmp_path):
    """Declined units are listed by what they are, not by the code that declined them: a
    unit declined at two commits is one entry, one finished anywhere (a cap lifted since)
    none, and the splits are counted in the first source that declined it."""
    capped = [unit_record("m", "big", (100, 10, 5), split, 1.0) for split in range(3)]
    lifted = unit_record("m", "big", (100, 10, 5), 0, 1.0, rate=2.0)
    first, second = ResultStore(tmp_path / "first"), ResultStore(tmp_path / "second")
    for record in capped:
        first.save_outcome(declined_outcome(record))
        second.save_outcome(declined_outcome(record, code="new"))
    first.save_outcome(declined_outcome(lifted))
    finished = [unit_record("m", f"d{i}", (100, 10, 5), 0, 1.0) for i in range(4)]
    for record in [*finished, lifted]:
        second.save(record)
    assert unit_signature(capped[0]["unit"]) == unit_signature(capped[2]["unit"])
    assert unit_signature(capped[0]["unit"]) != unit_signature(lifted["unit"])
    assert unit_signature(capped[0]["unit"]) != unit_signature(finished[0]["unit"])
    with tarfile.open(tmp_path / "second.tar.xz", "w:xz") as archive:
        archive.add(second.root, arcname="outputs/store")
    sources = [load_source(second.root, "second"), load_source(tmp_path / "second.tar.xz")]
    assert [len(s.declined) for s in sources] == [3, 3]
    assert [len(s.records) for s in sources] == [5, 5]
    model = fit_model([load_source(first.root, "first"), *sources])
    assert model["declined"] == [
        {
            "signature": unit_signature(capped[0]["unit"]),
            "method": "m",
            "dataset": "big",
            "source": "first",
            "splits": 3,
        }
    ]
    assert set(CostModel(model).declined) == {unit_signature(capped[0]["unit"])}
    # a directory's digest covers its declined units too
    before = load_source(first.root).sha256
    first.save_outcome(declined_outcome(unit_record("m", "big", (100, 10, 5), 3, 1.0)))
    assert load_source(first.root).sha256 != before


def test_the_shipped_models_declined_units_are_this_checkouts_suite_units():
    """The shipped model lists the suite's declined units under the signatures this checkout
    gives them, so a dry run of the suite at a later commit finds them: PML-PLR's cap on the
    yeast GO sets, for one, and no unit the archive holds finished."""
    from pmlbench.api import compose_config
    from pmlbench.protocol.experiment import prepare
    from pmlbench.runner.run import spec_from_config
    from pmlbench.runner.units import describe_units
    from tests.helpers import CASE_KEY

    shipped = CostModel.load()
    config = compose_config(["+experiment=suite", "method=pml_plr", f"{CASE_KEY}=yeastbp"])
    spec = spec_from_config(config)
    units = describe_units(spec, prepare(spec).registrations)
    entries = [shipped.declined.get(unit_signature(d)) for d in units.descriptions]
    assert all(e is not None and e["source"] == "docs/leaderboard-results.tar.xz" for e in entries)
    assert {e["method"] for e in entries} == {"pml_plr"} and entries[0]["splits"] == 5
    finished = {unit_signature(r["unit"]) for r in load_source(ARCHIVE).records}
    assert not finished & set(shipped.declined)


def test_the_shipped_model_covers_every_builtin_method_and_bundled_dataset():
    shipped = CostModel.load()
    assert set(shipped.methods) == set(BUILTIN_METHODS) - NOT_YET_RECORDED
    assert NOT_YET_RECORDED <= set(BUILTIN_METHODS)
    assert set(shipped.datasets) >= set(BUNDLED_DATASETS)
    for method, entry in shipped.methods.items():
        assert 0 < entry["kappa"] < 10, method
        assert 0.5 < entry["known_dataset"]["median"] < 2, method
        assert entry["datasets"] >= 4 and entry["records"] == entry["new_dataset"]["units"]


def present_sources(model: dict) -> dict:
    """The model's sources found where it names them (relative to the repository) with the
    SHA-256 it records, loaded."""
    found = {}
    for source in model["sources"]:
        path = ROOT / source["name"]
        if path.exists():
            loaded = load_source(path, source["name"])
            if loaded.sha256 == source["sha256"]:
                found[source["name"]] = loaded
    return found


def test_the_shipped_models_fits_and_accuracy_reproduce_from_its_sources():
    """Each method fitted to a source in this repository (the archive) refits, at the kappa
    the file holds, to the file's coefficients, dataset factors and accuracy numbers; with
    every source there (a checkout holding the tuned store as the file names it), the
    whole file, the fallback rule's accuracy included."""
    shipped = CostModel.load().data
    archive = ARCHIVE.relative_to(ROOT).as_posix()
    present = present_sources(shipped)
    assert archive in present, (
        f"cost_model.json was fitted to another {archive}: run {shipped['command']}"
    )
    checked = []
    for method, entry in shipped["methods"].items():
        if entry["source"] not in present:
            continue
        obs = method_observations(present[entry["source"]].records)[method]
        fit = fit_method(obs, entry["kappa"])
        refit = method_entry(fit, obs, entry["source"], kappa_measured=entry["kappa_measured"])
        assert refit == entry, method
        checked.append(method)
    assert checked
    if len(present) == len(shipped["sources"]):
        assert fit_model(list(present.values()), shipped["command"]) == shipped


def test_the_accuracy_table_in_the_docs_is_the_shipped_models():
    text = SWEEPS_DOC.read_text(encoding="utf-8")
    script = _script()
    start = text.index(script.TABLE_START) + len(script.TABLE_START)
    block = text[start : text.index(script.TABLE_END)].strip()
    model = CostModel.load().data
    assert block == script.docs_block(model)
    assert f"`{model['command']}`" in block
    assert script.replace_table(text, block) == text


def test_refitting_the_model_changes_no_units_key():
    """The model's file is read by the dry run only: it is in no unit's code (a data file of a
    package a unit imports would be, and a refit would then give every unit a new key)."""
    from pmlbench.api import compose_config
    from pmlbench.core.fingerprint import closure_files
    from pmlbench.runner.costmodel import MODEL_FILE
    from pmlbench.runner.run import spec_from_config
    from pmlbench.runner.units import _plugin_infos, code_roots

    for method in BUILTIN_METHODS:
        config = compose_config(["dataset=genbase", f"method={method}"])
        roots = code_roots(_plugin_infos(spec_from_config({**config, "quiet": True})))
        paths = {Path(path).resolve() for _, path in closure_files(roots)}
        assert MODEL_FILE.resolve() not in paths, method
        assert not any(p.name == "costmodel" or "costmodel" in p.parts for p in paths), method
