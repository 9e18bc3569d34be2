"""PLAIN against the authors' PyTorch code (committed numbers, no reference run needed), stage
by stage; seeding, determinism, caps, parameters and the plugin contract.

tests/fixtures/plain/reference.npz holds the inputs both sides share (standardised features,
candidates, the initial weights and the epochs' row orders) and the outputs of the authors'
functions run on the CPU (make_reference.py beside it; its docstring lists the CPU shims).
Stages:

1. the instance graph against the code's ``build_graph`` (faiss-cpu, float32 inner products):
   the same neighbours, weights within float32 rounding; the label graph exactly (float32);
2. the pseudo-labels of every epoch, the outputs on the training and test rows after 30
   epochs, on the same instance graph: identical when PyTorch runs the kernels the reference
   ran (the CPU capability recorded in the fixture), within 1e-5 otherwise;
3. the test outputs against the code's run on its own faiss graph, and the seven metrics.

PyTorch is optional: without it these tests skip, except in CI (CI=true), where the deep extra
is installed and a missing torch fails. What holds without PyTorch (the refusal, ``pmlbench
list``, unit keys) is tested in tests/test_deep_extra.py, which runs everywhere.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from pmlbench.errors import NotApplicable, PmlbenchError
from pmlbench.metrics.builtin import PAPER_METRICS
from pmlbench.plugins import registry

if os.environ.get("CI") == "true":
    import torch  # CI installs pmlbench[deep]: a missing torch fails here
else:
    torch = pytest.importorskip("torch", reason='PyTorch is optional: pip install "pmlbench[deep]"')

from pmlbench.methods.plain import PLAIN  # noqa: E402
from pmlbench.methods.plain import estimator as E  # noqa: E402
from pmlbench.methods.plain.graphs import (  # noqa: E402
    cosine_neighbors,
    instance_graph,
    label_graph,
)
from pmlbench.methods.plain.network import build_network  # noqa: E402
from pmlbench.testing import check_method  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures" / "plain"
REFERENCE = np.load(FIXTURES / "reference.npz")
META = json.loads(str(REFERENCE["meta"]))
CASES = sorted(META["cases"])
FLOAT32_ULP = 2.0**-23


def part(case: str, key: str) -> np.ndarray:
    return REFERENCE[f"{case}/{key}"]


class Fit:
    """pmlbench's PLAIN on one reference case, with every epoch's pseudo-labels recorded."""

    def __init__(self, case: str):
        self.case = case
        recorded: list[np.ndarray] = []
        propagate = E.propagate

        def recording(*args, **kwargs):
            labels = propagate(*args, **kwargs)
            recorded.append(labels.copy())
            return labels

        E.propagate = recording
        try:
            self.model = PLAIN(random_state=META["random_state"], threads=1)
            self.model.fit(part(case, "raw_train"), part(case, "C"))
        finally:
            E.propagate = propagate
        self.pseudo_labels = np.stack(recorded)


_FITS: dict[str, Fit] = {}


def fitted(case: str) -> Fit:
    if case not in _FITS:
        _FITS[case] = Fit(case)
    return _FITS[case]


def assert_same(actual: np.ndarray, expected: np.ndarray, atol: float = 1e-5) -> None:
    """Within ``atol`` of the reference (docs/methods/plain.md, "Reproducibility": a few
    float32 ulps measured between kernels). Identity holds only on the kernels that recorded
    the reference, and PyTorch's CPU capability does not name them: another CPU model with
    the same capability (AVX512) differs by up to 4.2e-7 in the pseudo-labels."""
    np.testing.assert_allclose(actual, expected, rtol=0, atol=atol)


# ------------------------------------------------------------------ against the authors' code


@pytest.mark.parametrize("case", CASES)
def test_standardisation_is_the_references(case):
    model = fitted(case).model
    np.testing.assert_array_equal(
        model.scaler_.transform(part(case, "raw_train")), part(case, "X_train")
    )
    np.testing.assert_array_equal(
        model.scaler_.transform(part(case, "raw_test")), part(case, "X_test")
    )


@pytest.mark.parametrize("case", CASES)
def test_instance_graph_is_the_codes_faiss_graph(case):
    ours = instance_graph(part(case, "X_train"), META["args"]["neighbors_num"]).normalized
    theirs = part(case, "knn_graph")
    ours = ours.toarray()
    np.testing.assert_array_equal(ours != 0, theirs != 0)  # the same neighbours
    # faiss's float32 inner products against exact ones rounded once: a few float32 ulps
    linked = theirs != 0
    relative = np.abs(ours[linked] - theirs[linked]) / np.abs(theirs[linked])
    assert relative.max() < 16 * FLOAT32_ULP


@pytest.mark.parametrize("case", CASES)
def test_label_graph_is_the_codes(case):
    expected = part(case, "label_graph").astype(np.float32)  # the code casts it to float32
    np.testing.assert_array_equal(label_graph(part(case, "C")), expected)


@pytest.mark.parametrize("case", CASES)
def test_initial_weights_and_row_orders_come_from_random_state(case):
    """What the reference fed the code is what ``random_state`` gives PLAIN."""
    model = PLAIN(random_state=META["random_state"], epochs=META["args"]["epochs"])
    weight_seed, order_rng = model._seeds()
    n, d = part(case, "X_train").shape
    q = part(case, "C").shape[1]
    network = build_network(torch, d, q, META["args"]["hidden_size"][0], weight_seed)
    for key, value in network.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), part(case, f"init:{key}"))
    orders = np.stack([order_rng.permutation(n) for _ in range(META["args"]["epochs"])])
    np.testing.assert_array_equal(orders, part(case, "orders"))


@pytest.mark.parametrize("case", CASES)
def test_pseudo_labels_of_every_epoch_are_the_codes(case):
    pseudo = fitted(case).pseudo_labels
    assert pseudo.shape == part(case, "trained:pseudo_labels").shape  # 30 epochs
    assert_same(pseudo, part(case, "trained:pseudo_labels"))
    assert pseudo.min() >= 0 and pseudo.max() <= 1


@pytest.mark.parametrize("case", CASES)
def test_outputs_after_training_are_the_codes(case):
    model = fitted(case).model
    assert_same(model.network_outputs(part(case, "raw_train")), part(case, "trained:train_outputs"))
    assert_same(model.network_outputs(part(case, "raw_test")), part(case, "trained:test_outputs"))


@pytest.mark.parametrize("case", CASES)
def test_seven_metrics_are_the_codes_on_its_own_faiss_graph(case):
    """End to end: the code on its own faiss graph against pmlbench (the graphs differ by
    float32 rounding only)."""
    model = fitted(case).model
    scores = model.decision_function(part(case, "raw_test"))
    theirs = part(case, "faiss:test_outputs").astype(np.float64)
    assert np.abs(scores - theirs).max() < 1e-5
    Y_test = part(case, "Y_test")
    threshold = META["args"]["threshold"]
    for name in PAPER_METRICS:
        metric = registry.load("metric", name)
        ours = metric(Y_test, (scores > threshold).astype(np.uint8), scores)
        expected = metric(Y_test, (theirs > threshold).astype(np.uint8), theirs)
        assert abs(ours - expected) < 1e-9, name


def test_disambiguation_scores_are_the_last_pseudo_labels():
    fit = fitted(CASES[0])
    np.testing.assert_array_equal(fit.model.disambiguation_scores_, fit.pseudo_labels[-1])
    assert fit.model.disambiguation_scores_.dtype == np.float64


def test_reference_cases_take_the_codes_paths():
    """No similarity among the k nearest is negative in the cases (where pmlbench clips the
    weight and the code would not), and they run the code's full schedule."""
    for case in CASES:
        assert fitted(case).model.diagnostics_["clipped_similarities"] == 0
    assert META["args"]["epochs"] == 30 and META["args"]["maxiter"] == 200


def test_minmax_scaling_is_scikit_learns_clipped_to_the_unit_interval():
    """float32 min-max scaling rounds some columns' largest value to 1 + 2**-23, a target
    PyTorch's CPU binary cross-entropy refuses: those values, and only those, are clipped."""
    from sklearn.preprocessing import MinMaxScaler

    from pmlbench.methods.plain.propagation import minmax_columns

    rng = np.random.default_rng(0)
    Z = rng.normal(size=(50, 400)).astype(np.float32)
    plain = MinMaxScaler().fit_transform(Z)
    assert plain.max() > 1  # some columns overshoot (float32 rounding)
    scaled = minmax_columns(Z)
    assert scaled.dtype == np.float32 and scaled.min() >= 0 and scaled.max() <= 1
    np.testing.assert_array_equal(scaled, np.clip(plain, 0, 1))
    assert np.abs(scaled - plain).max() <= 2**-23


# ------------------------------------------------------------------ graphs


def test_cosine_neighbours_rank_by_similarity_ties_to_the_lower_index():
    X = np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [1.0, 1.0], [3.0, 0.0], [0.0, 0.0]])
    neighbors, similarities = cosine_neighbors(X, 2)
    # row 0: rows 1 and 4 are the same direction (similarity 1): the lower index first
    assert neighbors[0].tolist() == [1, 4]
    np.testing.assert_allclose(similarities[0], [1.0, 1.0])
    # the zero row has similarity 0, so weight 0, to every row
    np.testing.assert_array_equal(similarities[5], [0.0, 0.0])
    # row 2: row 3 (similarity 1/sqrt 2), then the tie at 0 of rows 0, 1, 4 and the zero
    # row 5 goes to the lowest index
    assert neighbors[2].tolist() == [3, 0]
    np.testing.assert_allclose(similarities[2], [0.5**0.5, 0.0], atol=1e-15)


def test_negative_similarities_get_no_weight():
    X = np.array([[1.0, 0.0], [-1.0, 0.1], [-1.0, -0.1]])
    graph = instance_graph(X, 2)
    # row 0's two neighbours point away from it, and row 0 is each other row's second
    assert graph.clipped == 4
    assert graph.isolated == 1  # row 0: no weight left (its D set to 1, as the code's)
    assert np.isfinite(graph.normalized.toarray()).all()
    np.testing.assert_array_equal(graph.normalized.toarray()[0], 0)


def test_label_graph_of_empty_and_lone_columns():
    Y = np.array([[1, 0, 0, 1], [1, 0, 0, 0], [0, 0, 0, 1]], dtype=np.uint8)
    R = label_graph(Y)
    assert R.dtype == np.float32
    np.testing.assert_array_equal(np.diag(R), 0)
    # columns 1 and 2 are both empty: 1e-5 between them, normalised to 1
    assert R[1, 2] == pytest.approx(1.0)
    # columns 0 and 3 share one row: 1 / (2 + 2), each row summing to that alone
    assert R[0, 3] == pytest.approx(1.0)
    Y[:, 2] = 1  # column 1 now alone empty: no weight, a zero row (the code's nan_to_num)
    R = label_graph(Y)
    np.testing.assert_array_equal(R[1], 0)
    np.testing.assert_array_equal(R[:, 1], 0)


# ------------------------------------------------------------------ the estimator


def test_check_method():
    check_method("plain", params={"epochs": 3, "propagation_steps": 20})


def test_same_random_state_same_numbers_other_state_other_numbers():
    X, C = part(CASES[0], "raw_train"), part(CASES[0], "C")
    kwargs = {"epochs": 3, "propagation_steps": 20}
    a = PLAIN(random_state=7, **kwargs).fit(X, C).decision_function(X)
    b = PLAIN(random_state=7, **kwargs).fit(X, C).decision_function(X)
    c = PLAIN(random_state=8, **kwargs).fit(X, C).decision_function(X)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_fit_restores_pytorchs_global_settings():
    threads = torch.get_num_threads()
    deterministic = torch.are_deterministic_algorithms_enabled()
    state = torch.random.get_rng_state()
    X, C = part(CASES[0], "raw_train"), part(CASES[0], "C")
    model = PLAIN(random_state=1, epochs=2, propagation_steps=5, threads=1).fit(X, C)
    assert model.diagnostics_["threads"] == 1
    assert torch.get_num_threads() == threads
    assert torch.are_deterministic_algorithms_enabled() == deterministic
    assert torch.equal(torch.random.get_rng_state(), state)  # the global generator untouched


def test_diagnostics_record_device_threads_and_torch():
    diagnostics = fitted(CASES[0]).model.diagnostics_
    assert diagnostics["device"] == "cpu"
    assert diagnostics["threads"] == 1
    assert diagnostics["torch"] == torch.__version__
    assert diagnostics["epochs"] == 30


def test_inputs_over_the_caps_are_refused_before_any_work():
    X, C = part(CASES[0], "raw_train"), part(CASES[0], "C")
    with pytest.raises(NotApplicable, match=r"method\.max_features=50 .*max_features=null"):
        PLAIN(max_features=50).fit(X, C)
    n, q = C.shape
    with pytest.raises(NotApplicable, match=r"method\.max_label_work=.*=null to run it anyway"):
        PLAIN(max_label_work=n * q * q - 1).fit(X, C)


def test_the_default_caps_refuse_large_label_sets_and_the_yeast_go_sets():
    from pmlbench.datasets import bundled
    from pmlbench.methods.plain.estimator import MAX_FEATURES, MAX_LABEL_WORK
    from pmlbench.protocol.splits import plan_splits

    refused: dict[str, str] = {}
    for name, info in registry.plugins("dataset").items():
        if not info.entry_point.value.startswith("pmlbench.datasets.bundled:"):
            continue
        data = getattr(bundled, name)()
        n = plan_splits(data.n_instances, 1, 0.5, 0)[0].train_idx.size
        try:
            PLAIN()._refuse_over_caps(n, data.X.shape[1], data.n_labels)
        except NotApplicable as refusal:
            refused[name] = "max_features" if "max_features=null" in str(refusal) else "labels"
    assert refused == {
        "bibtex": "labels",
        "corel5k": "labels",
        "corel16k001": "labels",
        "delicious": "labels",
        "yeastbp": "max_features",
        "yeastcc": "max_features",
        "yeastmf": "max_features",
    }
    assert (PLAIN().max_label_work, PLAIN().max_features) == (MAX_LABEL_WORK, MAX_FEATURES)


@pytest.mark.parametrize(
    ("params", "key"),
    [
        ({"epochs": 0}, "method.epochs"),
        ({"gamma": 0}, "method.gamma"),
        ({"momentum": 1.0}, "method.momentum"),
        ({"device": "tpu"}, "method.device"),
        ({"threads": 0}, "method.threads"),
        ({"k": 2.0}, "method.k"),
    ],
)
def test_bad_parameters_are_one_line_errors(params, key):
    X, C = part(CASES[0], "raw_train"), part(CASES[0], "C")
    with pytest.raises(PmlbenchError, match=key) as error:
        PLAIN(**params).fit(X, C)
    assert "\n" not in str(error.value)


def test_too_many_neighbours_is_refused():
    X, C = part(CASES[0], "raw_train")[:5], part(CASES[0], "C")[:5]
    with pytest.raises(PmlbenchError, match="method.k = 10"):
        PLAIN().fit(X, C)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_cuda_without_a_gpu_is_refused_when_the_method_is_prepared():
    from pmlbench.plugins.loading import method_factory

    with pytest.raises(PmlbenchError, match="no CUDA device.*use method.device=cpu") as error:
        method_factory({"name": "plain", "device": "cuda"})
    assert "\n" not in str(error.value)


def test_sparse_features_give_the_same_fit():
    import scipy.sparse as sp

    X, C = part(CASES[0], "raw_train"), part(CASES[0], "C")
    kwargs = {"epochs": 2, "propagation_steps": 10, "random_state": 3}
    dense = PLAIN(**kwargs).fit(X, C).decision_function(X)
    sparse = PLAIN(**kwargs).fit(sp.csr_matrix(X), C).decision_function(sp.csr_matrix(X))
    np.testing.assert_array_equal(dense, sparse)


def test_wrong_feature_count_at_test_time():
    model = fitted(CASES[0]).model
    with pytest.raises(PmlbenchError, match="fitted on 72 features"):
        model.decision_function(np.zeros((2, 5)))


def test_registered_with_the_authors_defaults():
    info = registry.get("method", "plain")
    cls = info.load()
    assert cls is PLAIN
    defaults = PLAIN().get_params()
    args = META["args"]
    assert defaults["k"] == args["neighbors_num"]
    assert (defaults["alpha"], defaults["beta"], defaults["eta"], defaults["gamma"]) == (
        args["gamma"],
        args["zeta"],
        args["alpha"],
        args["eta"],
    )
    assert defaults["propagation_steps"] == args["maxiter"]
    assert (defaults["epochs"], defaults["batch_size"], defaults["lr"]) == (
        args["epochs"],
        args["batch_size"],
        args["lr"],
    )
    assert (defaults["momentum"], defaults["weight_decay"]) == (
        args["momentum"],
        args["weight_decay"],
    )
    assert [defaults["hidden"]] * 2 == args["hidden_size"]
    assert defaults["threshold"] == args["threshold"]


def test_declared_grid_is_around_the_authors_instance_weight():
    assert PLAIN.default_tuning_grid == {"alpha": [0.001, 0.01, 0.1, 1.0]}
    assert PLAIN().alpha in PLAIN.default_tuning_grid["alpha"]
