"""Hyper-parameter tuning by inner cross-validation, checked against explicit loops."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator
from sklearn.model_selection import KFold

from pmlbench.datasets.bundled import genbase
from pmlbench.errors import PmlbenchError
from pmlbench.methods.mlknn import MLkNN
from pmlbench.metrics.builtin import average_precision, hamming_loss
from pmlbench.noise.uniform import uniform_noise
from pmlbench.protocol.experiment import ExperimentSpec, run_experiment
from pmlbench.protocol.fitting import fit_with_tuning
from pmlbench.runner.outputs import write_results


def make_spec(**tune) -> ExperimentSpec:
    """A spec tuning ML-kNN; every fold scored (kfold) unless ``procedure`` says otherwise."""
    return ExperimentSpec(
        dataset={"name": "genbase"},
        noise={"name": "uniform"},
        method={"name": "mlknn"},
        tune={"procedure": "kfold", **tune},
        bipartition={"rule": "method"},
        metrics=["average_precision"],
    )


@pytest.fixture(scope="module")
def small_genbase():
    data = genbase()
    rows = np.random.default_rng(0).permutation(data.n_instances)[:240]
    X, Y = data.X[rows], data.Y[rows]
    return X, Y, uniform_noise(Y, np.random.default_rng(1), rate=1.0)


def manual_cv(X, Y_fit, Y_score, ks, cv, seed, metric):
    """An explicit loop: one ML-kNN per (k, fold), scored on the held-out fold."""
    folds = list(KFold(cv, shuffle=True, random_state=seed).split(X))
    table = np.zeros((len(ks), cv))
    for p, k in enumerate(ks):
        for f, (a, b) in enumerate(folds):
            model = MLkNN(k=k).fit(X[a], Y_fit[a])
            S = model.decision_function(X[b])
            table[p, f] = metric(Y_score[b], model.predict(X[b]), S)
    return table


@pytest.mark.parametrize("metric", [average_precision, hamming_loss], ids=lambda m: m.name)
def test_tuning_picks_what_a_manual_cv_loop_picks(small_genbase, metric):
    X, Y, Y_cand = small_genbase
    ks = [1, 3, 6, 12]
    spec = make_spec(grid={"k": ks, "s": None}, cv=4, scoring=metric.name, oracle=False)
    fitted, chosen, record = fit_with_tuning(
        MLkNN(), X, Y_cand, spec=spec, Y_true_train=Y, random_state=7
    )
    table = manual_cv(X, Y_cand, Y_cand, ks, 4, 7, metric)
    means = table.mean(axis=1)
    best = int(np.argmax(means) if metric.higher_is_better else np.argmin(means))
    np.testing.assert_allclose(record["fold_scores"], table, rtol=1e-12)
    assert chosen == {"k": ks[best]} and record["best_index"] == best
    # the returned estimator is refitted on the whole training split with the chosen value
    assert fitted.k == ks[best] and fitted.X_train_.shape[0] == X.shape[0]
    assert record["against"] == "candidates" and record["oracle"] is False


def test_parallel_folds_give_the_sequential_scores(small_genbase):
    X, Y, Y_cand = small_genbase
    records = [
        fit_with_tuning(
            MLkNN(),
            X,
            Y_cand,
            Y_true_train=Y,
            random_state=3,
            spec=make_spec(grid={"k": [2, 8]}, cv=4, n_jobs=n_jobs),
        )[2]
        for n_jobs in (1, 2)
    ]
    assert records[0]["fold_scores"] == records[1]["fold_scores"]


class BlockScores(BaseEstimator):
    """Scores = one block of the features: block 0 holds the truth, block 1 the candidates."""

    log: list = []

    def __init__(self, block: int = 0, unused: int = 0):
        self.block = block
        self.unused = unused

    def fit(self, X, Y):
        self.q_ = Y.shape[1]
        BlockScores.log.append((id(X), id(Y), self.block, self.unused))
        return self

    def decision_function(self, X):
        rank_noise = np.linspace(0, 1e-3, self.q_)[None, :]  # strict order, no ties
        return X[:, self.block * self.q_ : (self.block + 1) * self.q_] + rank_noise

    def predict(self, X):
        return (self.decision_function(X) >= 0.5).astype(np.uint8)


@pytest.fixture
def blocks(rng):
    Y = (rng.random((60, 6)) < 0.3).astype(np.uint8)
    Y[np.arange(60), rng.integers(0, 6, 60)] = 1
    Y_cand = np.maximum(Y, (rng.random(Y.shape) < 0.3).astype(np.uint8))
    return np.hstack([Y, Y_cand]).astype(float), Y, Y_cand


def test_candidate_and_oracle_scoring_choose_differently(blocks):
    X, Y, Y_cand = blocks
    kwargs = {"Y_true_train": Y, "random_state": 0}
    _, honest, rec = fit_with_tuning(
        BlockScores(), X, Y_cand, spec=make_spec(grid={"block": [0, 1]}, cv=3), **kwargs
    )
    _, oracle, orec = fit_with_tuning(
        BlockScores(),
        X,
        Y_cand,
        spec=make_spec(grid={"block": [0, 1]}, cv=3, oracle=True),
        **kwargs,
    )
    assert honest == {"block": 1} and oracle == {"block": 0}
    # the candidate block reproduces the candidates, the truth block the truth
    assert np.allclose(rec["fold_scores"][1], 1.0) and np.allclose(orec["fold_scores"][0], 1.0)
    assert rec["against"] == "candidates" and orec["against"] == "ground truth"
    assert orec["oracle"] is True


def test_ties_go_to_the_first_grid_point(blocks):
    X, Y, Y_cand = blocks
    _, chosen, record = fit_with_tuning(
        BlockScores(block=1),
        X,
        Y_cand,
        spec=make_spec(grid={"unused": [3, 1, 2]}, cv=3),
        Y_true_train=Y,
        random_state=0,
    )
    assert len(set(record["mean_scores"])) == 1 and chosen == {"unused": 3}


def test_grid_points_of_one_fold_are_fitted_consecutively_on_the_same_data(blocks):
    X, Y, Y_cand = blocks
    BlockScores.log.clear()
    fit_with_tuning(
        BlockScores(),
        X,
        Y_cand,
        spec=make_spec(grid={"unused": [1, 2, 3]}, cv=3, n_jobs=1),
        Y_true_train=Y,
        random_state=0,
    )
    log = BlockScores.log
    assert len(log) == 3 * 3 + 1  # folds x grid points, then the refit
    for fold in range(3):
        calls = log[3 * fold : 3 * fold + 3]
        assert [c[3] for c in calls] == [1, 2, 3]
        assert len({(c[0], c[1]) for c in calls}) == 1  # same X and Y objects


@pytest.mark.parametrize(
    "tune, message",
    [
        ({"grid": {"nope": [1, 2]}}, "unknown parameters ['nope']"),
        ({"grid": {"k": []}}, "non-empty list"),
        ({"grid": {"k": 5}}, "non-empty list"),
        ({"grid": {"k": [1, 2]}, "cv": 1}, "tune.cv must be an integer in [2, inf), got 1"),
        ({"grid": {"k": [1, 2]}, "oracle": "yes"}, "tune.oracle must be true or false, got 'yes'"),
        ({"grid": {"k": [1, 2]}, "scoring": 3}, "tune.scoring must be a string, got 3"),
        ({"grid": {"k": [1, 2]}, "folds": 3}, "unknown tune options ['folds']"),
        ({"grid": {"k": [1, 2]}, "cv": 500}, "more folds than the 60 training"),
        ({"grid": {"k": [1, 2]}, "scoring": "accuracy"}, "accuracy"),
        ({"grid": {"k": [1, 2]}, "n_jobs": 0}, "tune.n_jobs must be an integer in [1, inf) or"),
    ],
)
def test_bad_tuning_config_is_a_one_line_error(blocks, tune, message):
    X, Y, Y_cand = blocks
    with pytest.raises(PmlbenchError) as info:
        fit_with_tuning(MLkNN(), X, Y_cand, spec=make_spec(**tune), Y_true_train=Y, random_state=0)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_no_grid_is_a_plain_fit_and_never_oracle(blocks):
    X, Y, Y_cand = blocks
    fitted, chosen, record = fit_with_tuning(
        MLkNN(k=3),
        X,
        Y_cand,
        spec=make_spec(grid={"k": None}, oracle=True),
        Y_true_train=Y,
        random_state=0,
    )
    assert chosen == {} and record == {} and fitted.k == 3


@pytest.mark.parametrize("oracle", [False, True])
def test_chosen_values_are_recorded_per_split(tmp_path, oracle):
    spec = ExperimentSpec(
        dataset={"name": "genbase"},
        noise={"name": "uniform", "rate": 1.0},
        method={"name": "mlknn", "k": 10, "s": 1.0},
        tune={
            "grid": {"k": [2, 8], "s": None},
            "cv": 3,
            "procedure": "kfold",
            "scoring": "average_precision",
            "oracle": oracle,
        },
        bipartition={"rule": "method"},
        metrics=["average_precision", "hamming_loss"],
        n_splits=2,
    )
    result = run_experiment(spec)  # the protocol tunes by itself
    write_results(result, {"method": spec.method}, tmp_path)
    table = pd.read_csv(tmp_path / "results.csv")
    record = json.loads((tmp_path / "run.json").read_text())
    for split in record["splits"]:
        chosen = split["tuned"]["k"]
        assert chosen in (2, 8) and split["tuning"]["params"] == {"k": chosen}
        assert np.array(split["tuning"]["fold_scores"]).shape == (2, 3)
        rows = table[table["split"] == split["split"]]
        assert (rows["tuned"] == f"k={chosen}").all()
        assert (rows["oracle"] == oracle).all()


class GridAwareMLkNN(MLkNN):
    """ML-kNN with a fit_grid hook that fits the grid in reverse order and counts its calls."""

    calls: list[int] = []

    def fit_grid(self, X, Y, points):
        GridAwareMLkNN.calls.append(len(points))
        for index in reversed(range(len(points))):
            model = MLkNN(**{**self.get_params(), **points[index]})
            yield index, model.fit(X, Y)


def test_a_fit_grid_hook_is_used_for_every_fold_and_gives_the_loop_s_scores(small_genbase):
    X, Y, Y_cand = small_genbase
    spec = make_spec(grid={"k": [2, 5, 9], "s": None}, cv=3, oracle=False, n_jobs=1)
    GridAwareMLkNN.calls = []
    hooked = fit_with_tuning(GridAwareMLkNN(), X, Y_cand, spec=spec, Y_true_train=Y, random_state=3)
    plain = fit_with_tuning(MLkNN(), X, Y_cand, spec=spec, Y_true_train=Y, random_state=3)
    assert GridAwareMLkNN.calls == [3, 3, 3]  # once per fold, with the whole grid
    assert hooked.tuning["fold_scores"] == plain.tuning["fold_scores"]
    assert hooked.chosen == plain.chosen


class BrokenGrid(MLkNN):
    def __init__(self, k: int = 10, s: float = 1.0, mode: str = "skip"):
        super().__init__(k, s)
        self.mode = mode

    def fit_grid(self, X, Y, points):
        indices = {"skip": [0], "twice": [0, 0], "outside": [len(points)]}[self.mode]
        for index in indices:
            yield index, MLkNN(k=points[min(index, len(points) - 1)]["k"]).fit(X, Y)


@pytest.mark.parametrize(
    "mode, message",
    [("skip", "never yielded grid point"), ("twice", "twice"), ("outside", "grid index 2")],
)
def test_a_fit_grid_hook_that_skips_or_repeats_points_is_an_error(small_genbase, mode, message):
    X, Y, Y_cand = small_genbase
    spec = make_spec(grid={"k": [2, 5], "s": None}, cv=2, oracle=False)
    with pytest.raises(PmlbenchError, match=message):
        fit_with_tuning(BrokenGrid(mode=mode), X, Y_cand, spec=spec, Y_true_train=Y, random_state=0)


def test_holdout_scores_the_first_fold_of_the_kfold_split_only(small_genbase):
    X, Y, Y_cand = small_genbase
    ks = [1, 4, 8]
    full = make_spec(grid={"k": ks, "s": None}, cv=4, oracle=False)
    holdout = make_spec(grid={"k": ks, "s": None}, cv=4, oracle=False, procedure="holdout")
    kfold = fit_with_tuning(MLkNN(), X, Y_cand, spec=full, Y_true_train=Y, random_state=5)
    held = fit_with_tuning(MLkNN(), X, Y_cand, spec=holdout, Y_true_train=Y, random_state=5)
    expected = manual_cv(X, Y_cand, Y_cand, ks, 4, 5, average_precision)[:, :1]
    assert np.allclose(held.tuning["fold_scores"], expected, rtol=0, atol=1e-12)
    assert np.allclose(np.array(kfold.tuning["fold_scores"])[:, :1], expected, rtol=0, atol=1e-12)
    assert held.tuning["procedure"] == "holdout"
    best = int(np.argmax(expected[:, 0]))
    assert held.chosen == {"k": ks[best]}


def test_check_fit_grid_finds_a_hook_that_fits_other_values(small_genbase):
    from pmlbench.testing import PluginCheckError, check_fit_grid

    X, _, Y_cand = small_genbase

    class Shifted(MLkNN):
        def fit_grid(self, X, Y, points):
            for index, point in enumerate(points):
                yield index, MLkNN(k=point["k"] + 1).fit(X, Y)

    points = [{"k": 3}, {"k": 6}]
    assert check_fit_grid(GridAwareMLkNN(), X, Y_cand, points) == 0.0
    with pytest.raises(PluginCheckError, match="differs from a fit from scratch"):
        check_fit_grid(Shifted(), X, Y_cand, points)


def test_a_grid_point_the_data_cannot_take_names_the_tune_keys(small_genbase):
    """ML-kNN's message names method.k, which a grid overrides: tuning says which keys fix it."""
    X, Y, Y_cand = small_genbase
    spec = make_spec(grid={"k": [5, 500], "s": None}, cv=2, oracle=False, n_jobs=1)
    with pytest.raises(PmlbenchError) as error:
        fit_with_tuning(MLkNN(), X, Y_cand, spec=spec, Y_true_train=Y, random_state=0)
    message = str(error.value)
    assert "inner folds of 120 training instances" in message
    assert "the tuning grid sets k: narrow it (tune.grid.<param>=[...])" in message
    assert "\n" not in message


def test_a_parameter_given_on_the_command_line_is_used_not_tuned():
    """``method=mlknn method.k=15`` ran k from ML-kNN's default grid: a value the user gives
    takes its parameter out of the grid, unless tune.grid is overridden too."""
    from pmlbench.api import compose_config

    assert compose_config(["method=mlknn"])["tune"]["grid"]["k"] == list(
        MLkNN.default_tuning_grid["k"]
    )
    pinned = compose_config(["method=mlknn", "method.k=15"])
    assert pinned["method"]["k"] == 15 and pinned["tune"]["grid"]["k"] is None
    both = compose_config(["method=mlknn", "method.k=15", "tune.grid.k=[3,5]"])
    assert both["tune"]["grid"]["k"] == [3, 5]
