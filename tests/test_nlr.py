"""NLR against the authors' NLR.m run in GNU Octave (committed numbers, no Octave needed), the
primal and dual forms, sparse input, the demo's scaling and threshold, parameter checks, and
fit_grid against fits from scratch.

tests/fixtures/nlr/reference.npz holds the inputs and Octave's outputs; the script beside it
(make_reference.py) produced them and regenerates them. Only the last test runs Octave.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import pmlbench.methods.nlr as nlr_module
from pmlbench.datasets.bundled import corel5k, emotions, enron, medical
from pmlbench.errors import NotApplicable, PmlbenchError
from pmlbench.methods.nlr import NLR, minmax_rows, nlr_iterate, nlr_solve, nlr_system
from pmlbench.noise.uniform import uniform_noise
from pmlbench.plugins import registry
from pmlbench.testing import check_fit_grid
from tests.helpers import regenerated_reference, relative_error

FIXTURES = Path(__file__).parent / "fixtures" / "nlr"
REFERENCE = np.load(FIXTURES / "reference.npz")
META = json.loads(str(REFERENCE["meta"]))
CASES = {case["name"]: case for case in META["cases"]}
RTOL = 1e-6


def case_data(name: str, reference=REFERENCE):
    """(X_train, Y_train, X_test, parameters) of one reference case."""
    case = CASES[name]
    X, C = reference[f"{case['data']}_X"], reference[f"{case['data']}_C"]
    train = reference[f"{case['data']}_train"]
    if case["fold"] is not None:
        train = train[case["fold"]]
    params = {"beta": case["beta"], "gamma": case["gamma"], "lam": case["lam"]}
    return X[train], C[train], X[~train], params


def check_against_reference(model: NLR, name: str, X_test: np.ndarray) -> None:
    assert np.array_equal(model.noisy_labels_, REFERENCE[f"{name}_N"]), "N differs"
    assert relative_error(model.W1_, REFERENCE[f"{name}_W1"]) < RTOL
    assert relative_error(model.raw_scores(X_test), REFERENCE[f"{name}_raw"]) < RTOL
    # scaled scores lie in [0, 1] and are exactly 0 at each row's minimum: compare absolutely
    np.testing.assert_allclose(
        model.decision_function(X_test), REFERENCE[f"{name}_scaled"], rtol=0, atol=RTOL
    )
    assert np.array_equal(model.predict(X_test), REFERENCE[f"{name}_pred"])


@pytest.mark.parametrize("name", sorted(CASES))
def test_scores_match_the_authors_code(name):
    X_train, Y_train, X_test, params = case_data(name)
    model = NLR(**params).fit(X_train, Y_train)
    assert model.diagnostics_["form"] == ("dual" if name.startswith("wide") else "primal")
    check_against_reference(model, name, X_test)


@pytest.mark.parametrize("name", ["synth_demo", "synth_second", "wide_demo"])
@pytest.mark.parametrize("form", ["primal", "dual"])
def test_both_forms_match_where_features_are_on_one_scale(name, form):
    X_train, Y_train, X_test, params = case_data(name)
    check_against_reference(NLR(form=form, **params).fit(X_train, Y_train), name, X_test)


def test_dual_form_loses_precision_on_raw_birds_features():
    """Documented: K = XXᵀ is dominated by two features of scale 1e4-1e5, so the kernel form
    agrees to only about 3e-5 relative; the labels and the noisy-label matrix still agree."""
    X_train, Y_train, X_test, params = case_data("birds_fold1")
    model = NLR(form="dual", **params).fit(X_train, Y_train)
    assert np.array_equal(model.noisy_labels_, REFERENCE["birds_fold1_N"])
    raw, expected = model.raw_scores(X_test), REFERENCE["birds_fold1_raw"]
    assert np.abs(raw - expected).max() / np.abs(expected).max() < 1e-3
    assert np.array_equal(model.predict(X_test), REFERENCE["birds_fold1_pred"])


def test_sparse_features_give_the_same_fit():
    X_train, Y_train, X_test, params = case_data("wide_demo")
    for form in ("primal", "dual"):
        model = NLR(form=form, **params).fit(sp.csr_matrix(X_train), Y_train)
        check_against_reference(model, "wide_demo", sp.csr_matrix(X_test))


@pytest.mark.parametrize("form", ["primal", "dual"])
def test_scores_on_the_candidates_alone_change_nothing(form, monkeypatch):
    """With few candidates, step 3 computes X(W1 − W2) only where it is read; forcing the
    full product instead gives the same run."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(120, 40 if form == "dual" else 15))
    Y = (rng.random((120, 30)) < 0.05).astype(np.uint8)
    Y[np.arange(120), rng.integers(0, 30, size=120)] = 1
    assert 10 * Y.sum() < Y.size  # the candidate-only path applies
    fast = nlr_solve(X, Y, 1.0, 0.5, 1.6, form=form)
    monkeypatch.setattr(nlr_module, "_MAX_GATHERED", 0)
    full = nlr_solve(X, Y, 1.0, 0.5, 1.6, form=form)
    assert fast.N.any() and np.array_equal(fast.N, full.N)
    assert fast.n_changed == full.n_changed
    np.testing.assert_allclose(fast.W1, full.W1, rtol=1e-12, atol=0)


def test_noisy_labels_are_mostly_the_false_candidates():
    X_train, Y_train, _, params = case_data("synth_second")
    truth = REFERENCE["synth_Y"][REFERENCE["synth_train"]]
    N = NLR(**params).fit(X_train, Y_train).noisy_labels_.astype(bool)
    assert not (N & (Y_train == 0)).any()  # only candidates can be noisy
    false_candidates = (Y_train == 1) & (truth == 0)
    precision = (N & false_candidates).sum() / N.sum()
    assert precision > 0.75 > false_candidates.sum() / Y_train.sum()


def test_update_rule_for_noisy_labels():
    """Step 3 in closed form: a candidate is noisy iff (X W1 − X W2) < 1 − λ/2 there."""
    X_train, Y_train, _, params = case_data("synth_second")
    solution = nlr_solve(X_train, Y_train, **params, max_iter=7)
    # N after iteration 7 comes from the W's of iteration 7
    gap = X_train @ (solution.W1 - solution.W2)
    expected = (Y_train == 1) & (gap < 1 - params["lam"] / 2)
    assert np.array_equal(solution.N.astype(bool), expected)


def test_min_max_scaling_and_threshold():
    raw = np.array([[1.0, 3.0, 2.0, 2.9], [5.0, 5.0, 5.0, 5.0], [-1.0, 0.0, -0.5, -0.05]])
    scaled = minmax_rows(raw)
    np.testing.assert_allclose(scaled[0], [0.0, 1.0, 0.5, 0.95])
    assert (scaled[1] == 0).all()  # a flat row: 0 everywhere instead of the demo's 0/0
    model = NLR()
    model.W1_ = np.eye(4)
    model.n_features_in_ = 4
    predicted = model.predict(raw)
    assert predicted.tolist() == [[0, 1, 0, 1], [0, 0, 0, 0], [0, 1, 0, 1]]
    # the demo's rule is strict: a scaled score of exactly the threshold is not enough
    model.threshold = 0.5
    assert model.predict(raw)[0].tolist() == [0, 1, 0, 1]


@pytest.mark.parametrize(
    ("params", "key"),
    [
        ({"gamma": 0}, "method.gamma"),
        ({"beta": -1}, "method.beta"),
        ({"lam": float("nan")}, "method.lam"),
        ({"max_iter": 0}, "method.max_iter"),
        ({"max_iter": 2.5}, "method.max_iter"),
        ({"threshold": 1.5}, "method.threshold"),
        ({"form": "kernel"}, "method.form"),
        ({"blas_threads": 0}, "method.blas_threads"),
        ({"max_order": 0}, "method.max_order"),
    ],
)
def test_bad_parameters_are_one_line_errors(params, key):
    X_train, Y_train, _, _ = case_data("synth_demo")
    with pytest.raises(PmlbenchError, match=key) as error:
        NLR(**params).fit(X_train, Y_train)
    assert "\n" not in str(error.value)


def test_systems_over_the_cap_are_refused_before_any_work():
    X_train, Y_train, _, params = case_data("wide_demo")  # 50 training instances, 90 features
    NLR(max_order=50, **params).fit(X_train, Y_train)
    with pytest.raises(NotApplicable, match="method.max_order=null") as error:
        NLR(max_order=49, **params).fit(X_train, Y_train)
    assert "50 x 50 eigendecomposition" in str(error.value)
    assert "\n" not in str(error.value)
    with pytest.raises(NotApplicable, match="90 x 90"):
        NLR(max_order=80, form="primal", **params).fit(X_train, Y_train)
    NLR(max_order=None, form="primal", **params).fit(X_train, Y_train)


def test_the_default_cap_admits_every_bundled_dataset():
    """Under the one budget NLR runs the yeast GO sets (order 3069: 16x ML-kNN's tuned time on
    yeastbp, docs/methods/nlr.md); the largest order among the bundled datasets."""
    from pmlbench.plugins.loading import load_dataset

    model = NLR()
    assert model.max_order == 4000
    for name in ("yeastbp", "corel16k001", "delicious"):
        data = load_dataset({"name": name})
        n_train = data.n_instances - -(-data.n_instances // 2)  # the test part is ceil(n / 2)
        assert min(n_train, data.X.shape[1]) <= model.max_order


def test_wrong_feature_count_at_test_time():
    X_train, Y_train, X_test, params = case_data("synth_demo")
    model = NLR(**params).fit(X_train, Y_train)
    with pytest.raises(PmlbenchError, match="fitted on 12 features"):
        model.decision_function(X_test[:, :5])


def test_registered_with_the_demo_defaults():
    cls = registry.load("method", "nlr")
    assert cls is NLR
    model = cls()
    assert (model.beta, model.gamma, model.lam, model.max_iter, model.threshold) == (
        100.0,
        10.0,
        2.1,
        100,
        0.9,
    )


def test_regenerated_reference_matches_the_committed_one(tmp_path):
    """Run the authors' NLR.m again in Octave (optional: needs octave-cli and a copy of the
    authors' repository in NLR_SOURCE) and compare with the committed numbers."""
    fresh = regenerated_reference(FIXTURES, "NLR_SOURCE", "github.com/Yangfc-ML/NLR", tmp_path)
    for name in CASES:
        assert np.array_equal(fresh[f"{name}_N"], REFERENCE[f"{name}_N"])
        assert np.array_equal(fresh[f"{name}_pred"], REFERENCE[f"{name}_pred"])
        for part in ("W1", "raw"):
            assert relative_error(fresh[f"{name}_{part}"], REFERENCE[f"{name}_{part}"]) < RTOL


# ---- the tuning grid and fit_grid ---------------------------------------------------------


def real_subset(loader, n: int, *, features: int | None = None, labels=None, rate: float = 1.0):
    """The first n instances of a bundled dataset (optionally only its first features and
    labels) with uniform candidate noise."""
    data = loader()
    X = data.X[:n] if features is None else data.X[:n, :features]
    return X, uniform_noise(data.Y[:n, :labels], np.random.default_rng(0), rate=rate)


# each case takes a different way through the shared score products of several λ
GRID_CASES = {
    "dual, few candidates (per-label products)": (corel5k, 250, None, 80, 1.0, {}),
    "primal through V, few candidates (rows gathered per label)": (
        corel5k,
        600,
        None,
        80,
        1.0,
        {"form": "primal"},
    ),
    "primal, dense candidates (one product)": (emotions, 300, None, None, 1.0, {}),
    "dual, dense candidates (one product)": (enron, 250, None, None, 3.0, {}),
    "primal through V, dense candidates (one product)": (medical, 600, 200, None, 4.0, {}),
}


@pytest.mark.parametrize("case", sorted(GRID_CASES))
def test_fit_grid_equals_fits_from_scratch(case):
    """λ only moves the threshold of step 3, so the λs' iterates differ only through their
    noisy labels: the shared products change the scores' last bits, never a decision here,
    and every fit is identical to its fit from scratch."""
    loader, n, features, labels, rate, params = GRID_CASES[case]
    X, Y = real_subset(loader, n, features=features, labels=labels, rate=rate)
    model = NLR(**params)
    system = nlr_system(X, Y, model.beta, model.gamma, form=model.form)
    assert sp.issparse(X)
    points = [{"lam": lam} for lam in NLR.default_tuning_grid["lam"]]
    fits = dict(model.fit_grid(X, Y, points))
    assert sorted(fits) == list(range(len(points)))
    assert len({int(f.noisy_labels_.sum()) for f in fits.values()}) == len(points)
    assert check_fit_grid(model, X, Y, points, atol=0) == 0.0
    for index, point in enumerate(points):
        alone = NLR(**params, **point).fit(X, Y)
        assert np.array_equal(fits[index].noisy_labels_, alone.noisy_labels_)
        assert np.array_equal(fits[index].W1_, alone.W1_)
        assert fits[index].diagnostics_["last_change"] == alone.diagnostics_["last_change"]
    assert system.by_label == case.startswith("dual, few")
    assert system.through_V == ("through V" in case)


def test_fit_grid_groups_points_that_need_their_own_eigendecomposition():
    X, Y = real_subset(emotions, 200)
    points = [{"lam": lam, "beta": beta} for beta in (1.0, 100.0) for lam in (1.7, 2.5)]
    points.append({"lam": 2.1, "threshold": 0.5})
    assert check_fit_grid(NLR(), X, Y, points, atol=0) == 0.0


def test_fit_grid_refuses_what_fit_refuses():
    X_train, Y_train, _, params = case_data("wide_demo")  # 50 instances x 90 features
    points = [{"lam": 1.7}, {"lam": 2.1, "max_order": 49}]
    with pytest.raises(NotApplicable, match="method.max_order=null"):
        next(NLR(**params).fit_grid(X_train, Y_train, points))
    with pytest.raises(PmlbenchError, match="method.lam"):
        next(NLR().fit_grid(X_train, Y_train, [{"lam": -1.0}]))


def reference_iterations(X, Y, beta, gamma, lam, max_iter):
    """NLR's iterations with Eᵀ N recomputed in full every time (the loop as it was before
    only the labels whose noisy set moved were recomputed)."""
    system = nlr_system(X, Y, beta, gamma)
    q, n, E = system.q, system.n, system.E
    Z1 = np.zeros((E.shape[1], q))
    Z2 = np.zeros_like(Z1)
    EN = np.zeros_like(Z1)
    noisy = np.zeros(system.flat.size, dtype=bool)
    for _ in range(max_iter):
        Z1 = system.c1 - EN - beta * system.theta * Z2
        Z2 = system.c2 + EN - beta * system.theta * Z1
        S = system.F @ (Z1 - Z2)  # the primal form, (XV)Z
        noisy = 0.5 * (1.0 - S.reshape(-1)[system.flat]) - lam / 4 > 0
        Nt = sp.csr_matrix(
            (np.ones(int(noisy.sum())), (system.cols[noisy], system.rows[noisy])), shape=(q, n)
        )
        EN = (Nt @ E).T
    return system.basis @ Z1, noisy


def test_noisy_labels_product_recomputed_only_where_it_moved_is_exact():
    X, Y = real_subset(emotions, 300)
    assert not nlr_system(X, Y, 100.0, 10.0).through_V
    W1, noisy = reference_iterations(X, Y, 100.0, 10.0, 2.1, 60)
    [solution] = nlr_iterate(nlr_system(X, Y, 100.0, 10.0), [2.1], max_iter=60)
    assert 0 < sum(solution.n_changed[1:]) and noisy.any()
    assert np.array_equal(solution.W1, W1)  # bit for bit


def test_default_grid_is_the_authors_range():
    """docs/methods/nlr.md: λ from the authors' parameters.pdf, at the demo's β and γ."""
    assert NLR.default_tuning_grid == {"lam": [1.3, 1.7, 2.1, 2.5]}
    assert NLR().lam in NLR.default_tuning_grid["lam"]
