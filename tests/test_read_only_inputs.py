"""Read-only inputs: every array a method plugin is handed (features, candidate labels, the
test features, every fold sliced from them) is a read-only view, on every path the protocol
fits and predicts along. A method that writes into one fails its unit naming itself; an
honest method's numbers do not change; the protocol's own arrays stay as they were."""

from __future__ import annotations

import dataclasses
import re
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

from pmlbench.core.read_only import read_only, writes_read_only
from pmlbench.datasets.bundled import genbase
from pmlbench.datasets.dataset import Dataset
from pmlbench.errors import PluginError
from pmlbench.methods.mlknn import MLkNN
from pmlbench.plugin import Interval, Options
from pmlbench.plugins.loading import MethodFactory
from pmlbench.protocol.experiment import ExperimentSpec, prepare, run_split
from pmlbench.protocol.splits import plan_splits

# ------------------------------------------------------------------ the helper


def _csr() -> sp.csr_matrix:
    return sp.random(8, 6, density=0.4, format="csr", random_state=0, dtype=np.float64)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_a_sparse_view_shares_every_array_and_none_is_writable(fmt):
    X = _csr().asformat(fmt)
    view = read_only(X)
    assert type(view) is type(X) and view.shape == X.shape and view is not X
    arrays = ["data", "indices", "indptr"] if fmt != "coo" else ["data"]
    for name in arrays:
        assert np.shares_memory(getattr(view, name), getattr(X, name)), name
        assert not getattr(view, name).flags.writeable, name
        assert getattr(X, name).flags.writeable, name  # the owner's stay writable
    if fmt == "coo":
        assert all(
            not c.flags.writeable and np.shares_memory(c, o)
            for c, o in zip(view.coords, X.coords, strict=True)
        )
    np.testing.assert_array_equal(view.toarray(), X.toarray())
    with pytest.raises(ValueError, match="read-only") as caught:
        view.data[:] = 0
    assert writes_read_only(caught.value)
    with pytest.raises(ValueError, match="read-only"):
        view *= 2  # scipy's in-place product writes into data


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_a_sparse_view_keeps_the_format_flags(fmt):
    """Canonical stays canonical (scipy then never sorts or sums in place); a matrix with
    duplicates stays marked as such (its duplicates are summed by reading, not in place)."""
    canonical = _csr().asformat(fmt)
    assert canonical.has_canonical_format and canonical.has_sorted_indices
    view = read_only(canonical)
    assert view.has_canonical_format and view.has_sorted_indices
    view.sum_duplicates()  # nothing to do: no write attempted
    view.sort_indices()

    split = sp.csr_matrix(
        (np.array([1.0, 2.0, 3.0]), np.array([2, 2, 0]), np.array([0, 3])), shape=(1, 3)
    ).asformat(fmt)
    split.has_canonical_format = False
    assert not read_only(split).has_canonical_format
    np.testing.assert_array_equal(read_only(split).toarray(), [[3.0, 0.0, 3.0]])


def test_a_dense_view_shares_memory_and_is_not_writable():
    X = np.arange(12.0).reshape(3, 4)
    view = read_only(X)
    assert np.shares_memory(view, X) and not view.flags.writeable and X.flags.writeable
    for write in (lambda: view.__setitem__(0, 1.0), lambda: np.add(view, 1, out=view), view.sort):
        with pytest.raises(ValueError) as caught:
            write()
        assert writes_read_only(caught.value)
    assert read_only(None) is None and read_only([1, 2]) == [1, 2]
    with pytest.raises(TypeError, match="LIL sparse matrix has no read-only view"):
        read_only(_csr().tolil())
    assert not writes_read_only(ValueError("shapes do not match"))


# ------------------------------------------------------------------ methods that write


def _erase(X) -> None:
    if sp.issparse(X):
        X.data[:] = 0
    else:
        X[:] = 0


class Scribbler(MLkNN):
    """ML-kNN that writes into an array it is handed (``write``: "Y" or "X" in fit and
    fit_grid, "X_test" in decision_function), once ``after`` fits went by cleanly."""

    fits = 0  # fits so far, in this process (reset by each test)
    parameter_constraints = {
        **MLkNN.parameter_constraints,
        "write": [Options(("none", "Y", "X", "X_test"))],
        "after": [Interval(int, 0, None)],
    }

    def __init__(self, k=10, s=1.0, write="Y", after=0):
        super().__init__(k, s)
        self.write = write
        self.after = after

    def _scribble(self, X, Y) -> None:
        Scribbler.fits += 1
        if Scribbler.fits <= self.after:
            return
        if self.write == "Y":
            Y[:] = 1
        elif self.write == "X":
            _erase(X)

    def fit(self, X, Y):
        self._scribble(X, Y)
        return super().fit(X, Y)

    def fit_grid(self, X, Y, points):
        self._scribble(X, Y)
        yield from super().fit_grid(X, Y, points)

    def decision_function(self, X):
        if self.write == "X_test":
            _erase(X)
        return super().decision_function(X)


class GridlessScribbler(Scribbler):
    """The same without the fit_grid hook: tuning fits point after point."""

    fit_grid = None  # type: ignore[assignment]


LABEL = "method plugin 'scribbler' (distribution 'tests')"

PLAIN = {"tune": {}, "bipartition": {"rule": "method"}}
TUNED = {"tune": {"grid": {"k": [3, 5]}, "cv": 3}, "bipartition": {"rule": "method"}}
# out-of-fold training scores: the bipartition rule refits the method on its folds
OUT_OF_FOLD = {"tune": {}, "bipartition": {"rule": "global", "training_scores": "cv", "cv": 3}}
# a bipartition metric as the tuning score: each fold fits its own rule (out of fold again)
TUNED_RULE = {
    "tune": {"grid": {"k": [3, 5]}, "cv": 3, "scoring": "hamming_loss"},
    "bipartition": {"rule": "global", "training_scores": "cv", "cv": 3},
}

SETUP_NAMES = {
    id(PLAIN): "plain",
    id(TUNED): "tuned",
    id(OUT_OF_FOLD): "out_of_fold",
    id(TUNED_RULE): "tuned_rule",
}


@pytest.fixture(scope="module")
def data() -> Dataset:
    return genbase()


def _split(data: Dataset, cls: type, params: dict[str, Any], setup: dict[str, Any], dense=False):
    """One split of ``cls`` on genbase (uniform noise) under ``setup``; the protocol's own
    arrays are checked to be unchanged afterwards, whatever happened."""
    spec = ExperimentSpec(
        dataset={"name": "genbase"},
        noise={"name": "uniform"},
        method={"name": "mlknn"},
        metrics=["average_precision", "hamming_loss"],
        **setup,
    )
    info: Any = SimpleNamespace(label=LABEL, name="scribbler")
    plugins = dataclasses.replace(prepare(spec), method=MethodFactory(info, cls, params))
    if dense:
        data = Dataset(X=sp.csr_matrix(data.X).toarray(), Y=data.Y, name=data.name)
    X_before, Y_before = sp.csr_matrix(data.X).toarray(), data.Y.copy()
    plan = plan_splits(data.n_instances, 1, spec.test_size, spec.seed)[0]
    Scribbler.fits = 0
    try:
        return run_split(spec, data, plan, plugins)
    finally:
        assert np.array_equal(sp.csr_matrix(data.X).toarray(), X_before)
        assert np.array_equal(data.Y, Y_before)


@pytest.mark.parametrize(
    ("cls", "setup", "write", "after", "phase"),
    [
        (Scribbler, PLAIN, "Y", 0, "fitting"),
        (Scribbler, PLAIN, "X", 0, "fitting"),
        (Scribbler, PLAIN, "X_test", 0, "predicting"),
        (Scribbler, TUNED, "Y", 0, "fitting"),
        (Scribbler, TUNED, "X", 0, "fitting"),
        (Scribbler, TUNED, "X_test", 0, "fitting"),  # the held-out fold of inner CV
        (Scribbler, TUNED, "Y", 1, "fitting"),  # the refit after tuning
        (GridlessScribbler, TUNED, "Y", 0, "fitting"),
        (GridlessScribbler, TUNED, "X", 1, "fitting"),  # the second grid point's fit
        (Scribbler, OUT_OF_FOLD, "Y", 1, "fitting the bipartition rule"),
        (Scribbler, OUT_OF_FOLD, "X", 1, "fitting the bipartition rule"),
        (Scribbler, TUNED_RULE, "Y", 1, "fitting"),  # the rule's refit inside a fold
    ],
    ids=lambda v: v.__name__ if isinstance(v, type) else SETUP_NAMES.get(id(v)),
)
def test_a_method_writing_into_its_inputs_fails_naming_itself(
    data, cls, setup, write, after, phase
):
    with pytest.raises(PluginError) as caught:
        _split(data, cls, {"k": 3, "write": write, "after": after}, setup)
    message = str(caught.value)
    assert message.startswith(f"{LABEL} tried to change an array it was handed while {phase}")
    assert "read-only" in message and "must copy an array before modifying it" in message
    assert "\n" not in message


@pytest.mark.parametrize("write", ["X", "X_test"])
def test_dense_features_are_handed_read_only_too(data, write):
    with pytest.raises(PluginError, match=re.escape(f"{LABEL} tried to change an array it")):
        _split(data, Scribbler, {"k": 3, "write": write}, PLAIN, dense=True)


def test_a_write_in_a_tuning_worker_process_is_named_too(data):
    tune = {**TUNED["tune"], "procedure": "kfold", "n_jobs": 2}  # three folds, two processes
    setup = {"tune": tune, "bipartition": {"rule": "method"}}
    with pytest.raises(PluginError, match=re.escape(f"{LABEL} tried to change an array it")):
        _split(data, Scribbler, {"k": 3, "write": "Y"}, setup)


# ------------------------------------------------------------------ honest methods


class Spy(MLkNN):
    """ML-kNN noting whether each array it is handed could be written."""

    handed: list[tuple[str, bool]] = []

    def _note(self, call: str, *arrays) -> None:
        for values in arrays:
            flags = values.data.flags if sp.issparse(values) else values.flags
            Spy.handed.append((call, bool(flags.writeable)))

    def fit(self, X, Y):
        self._note("fit", X, Y)
        return super().fit(X, Y)

    def fit_grid(self, X, Y, points):
        self._note("fit_grid", X, Y)
        yield from super().fit_grid(X, Y, points)

    def decision_function(self, X):
        self._note("decision_function", X)
        return super().decision_function(X)

    def predict(self, X):
        self._note("predict", X)
        return super().predict(X)


@pytest.mark.parametrize(
    "setup", [PLAIN, TUNED, OUT_OF_FOLD, TUNED_RULE], ids=lambda v: SETUP_NAMES.get(id(v))
)
@pytest.mark.parametrize("dense", [False, True], ids=["sparse", "dense"])
def test_every_array_a_method_is_handed_is_read_only(data, setup, dense):
    Spy.handed = []
    _split(data, Spy, {"k": 3}, setup, dense=dense)
    calls = {call for call, _ in Spy.handed}
    assert {"fit", "decision_function"} <= calls
    assert ("fit_grid" in calls) == ("grid" in setup["tune"])
    assert not [entry for entry in Spy.handed if entry[1]], "writable arrays were handed"


@pytest.mark.parametrize("setup", [PLAIN, TUNED, OUT_OF_FOLD], ids=lambda v: SETUP_NAMES.get(id(v)))
def test_an_honest_method_gives_the_numbers_it_gives_on_writable_copies(data, setup, monkeypatch):
    """Read-only views change no number: the same split with every view replaced by a
    writable copy (what the protocol handed before) gives identical values."""
    from pmlbench.protocol import bipartition, experiment, fitting, tuning

    viewed = _split(data, MLkNN, {"k": 3}, setup)
    for module in (experiment, fitting, tuning, bipartition):
        monkeypatch.setattr(module, "read_only", lambda v: v.copy() if v is not None else v)
    copied = _split(data, MLkNN, {"k": 3}, setup)
    assert viewed.values == copied.values
    assert viewed.tuned == copied.tuned and viewed.bipartition_fitted == copied.bipartition_fitted


def test_a_unit_whose_method_writes_into_its_inputs_is_recorded_as_failed(tmp_path, monkeypatch):
    """In a run with a store: the unit fails with the one line, the other units go on."""
    from pmlbench.api import compose_config
    from pmlbench.runner.run import UnitsFailed, run_config
    from pmlbench.runner.status import Status
    from pmlbench.runner.store import ResultStore, iter_outcomes

    original = MLkNN.decision_function
    seen: list[int] = []

    def erase_on_the_second_call(self, X):  # the first unit's predict
        seen.append(1)
        if len(seen) == 2:
            _erase(X)
        return original(self, X)

    monkeypatch.setattr(MLkNN, "decision_function", erase_on_the_second_call)
    overrides = ["method=mlknn", "dataset=genbase", "protocol.n_splits=2", "tune.grid=null"]
    store = ResultStore(tmp_path / "store")
    with pytest.raises(UnitsFailed):
        run_config(compose_config(overrides), tmp_path / "run", quiet=True, store=store)
    failed = list(iter_outcomes(store.root, Status.FAILED))
    assert len(failed) == 1 and failed[0]["error_type"] == "PluginError"
    assert len(seen) == 4  # the second unit ran (decision_function, then predict's call)
    assert failed[0]["error"].startswith(
        "method plugin 'mlknn' (distribution 'pmlbench') tried to change an array it was handed "
        "while predicting (assignment destination is read-only)"
    )
