"""Decisions that BLAS rounding cannot flip (docs/protocol.md, "Reproducibility").

Another CPU runs other BLAS kernels, whose results differ from this machine's in the last
bits. These tests simulate that without changing the machine's BLAS: they perturb the
BLAS-computed inputs of every fragile decision at the rounding level (about 1e-15 relative),
or present the same data in another column order (other summation orders), and require the
same decision: kNN order among tied distances, the NNLS weights of identical neighbours,
k-means assignments of equidistant points, tuning choices between equal CV scores, and whole
PML3ER / PARTICLE / PML-LD fits on binary data full of duplicate rows.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import nnls

import pmlbench.numerics.neighbors as neighbors_module
from pmlbench.methods.particle import ParticleVLS
from pmlbench.methods.pml3er import PML3ER
from pmlbench.numerics.enrichment import knn_graph, nnls_weights
from pmlbench.numerics.exact import canonical_nnls, row_groups, squared_distances
from pmlbench.numerics.kmeans import kmeans_labels
from pmlbench.protocol.tuning import best_index

ROUNDING = 1e-15


def binary_with_duplicates(seed: int = 0, n: int = 120, d: int = 40, n_labels: int = 6):
    """Binary features (like genbase) where a third of the rows repeat earlier rows."""
    rng = np.random.default_rng(seed)
    base = (rng.random((n - n // 3, d)) < 0.15).astype(np.float64)
    X = np.vstack([base, base[rng.integers(0, len(base), n // 3)]])
    X = X[rng.permutation(n)]
    Y = (rng.random((n, n_labels)) < 0.35).astype(np.uint8)
    Y[Y.sum(axis=1) == 0, 0] = 1
    return X, Y


def noisy_euclidean(seed: int):
    """scikit-learn's distances with a relative error of the size of BLAS rounding."""
    original = neighbors_module.euclidean_distances
    rng = np.random.default_rng(seed)

    def perturbed(*args, **kwargs):
        D = original(*args, **kwargs)
        return D * (1.0 + ROUNDING * rng.standard_normal(D.shape))

    return perturbed


def blas_as_if_inexact(monkeypatch) -> None:
    """Make kneighbors treat BLAS distances of whole-number features as rounded, as it does
    for other features, so that simulated rounding reaches them (real kernels compute
    distances of small whole numbers exactly: see the tests below)."""
    monkeypatch.setattr(neighbors_module, "_integer_valued", lambda X: False)


@pytest.mark.parametrize("sparse", [False, True])
def test_knn_ties_are_broken_by_index_whatever_the_rounding(monkeypatch, sparse):
    X, _ = binary_with_duplicates()
    X = sp.csr_matrix(X) if sparse else X
    blas_as_if_inexact(monkeypatch)
    reference = knn_graph(X, 10)
    for seed in range(3):
        monkeypatch.setattr(neighbors_module, "euclidean_distances", noisy_euclidean(seed))
        assert np.array_equal(knn_graph(X, 10), reference)


def count_features(seed: int = 3, n: int = 150, d: int = 30) -> np.ndarray:
    """Whole-number counts (like the yeast sets) with repeated rows: many tied distances."""
    rng = np.random.default_rng(seed)
    base = rng.poisson(0.7, size=(n - 40, d)).astype(np.float64)
    return np.vstack([base, base[rng.integers(0, len(base), 40)]])


def count_remeasurements(monkeypatch) -> list[int]:
    """A list that grows by one for each call of kneighbors' second, BLAS-free measurement."""
    calls: list[int] = []
    original = neighbors_module.squared_distances
    monkeypatch.setattr(
        neighbors_module,
        "squared_distances",
        lambda *args: calls.append(1) or original(*args),
    )
    return calls


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("features", ["binary", "counts"])
def test_whole_number_features_skip_the_second_measurement_with_the_same_result(
    monkeypatch, sparse, features
):
    X = binary_with_duplicates()[0] if features == "binary" else count_features()
    X = sp.csr_matrix(X) if sparse else X
    query = X[:50]
    fast = [
        neighbors_module.kneighbors(X, X, 7, exclude_self=True, return_distance=True),
        neighbors_module.kneighbors(query, X, 7, return_distance=True),
    ]
    calls = count_remeasurements(monkeypatch)
    neighbors_module.kneighbors(X, X, 7, exclude_self=True)
    assert not calls  # the exact path measures nothing again
    blas_as_if_inexact(monkeypatch)
    remeasured = [
        neighbors_module.kneighbors(X, X, 7, exclude_self=True, return_distance=True),
        neighbors_module.kneighbors(query, X, 7, return_distance=True),
    ]
    assert calls  # the general path did
    for (idx, dist), (idx_again, dist_again) in zip(fast, remeasured, strict=True):
        assert np.array_equal(idx, idx_again)
        assert np.array_equal(dist, dist_again)  # bit for bit


def test_whole_number_distances_do_not_depend_on_the_order_of_the_sums():
    X = count_features()
    permuted = np.random.default_rng(4).permutation(X.shape[1])
    D = neighbors_module.euclidean_distances(X, X, squared=True)
    D_again = neighbors_module.euclidean_distances(X[:, permuted], X[:, permuted], squared=True)
    assert np.array_equal(D, D_again)
    rows, cols = np.nonzero(np.ones_like(D, dtype=bool))
    assert np.array_equal(D.ravel(), squared_distances(X, X, rows, cols))


@pytest.mark.parametrize(
    "X",
    [
        np.array([[0.5, 1.0], [1.0, 2.0], [3.0, 1.0]]),  # not whole numbers
        np.array([[1.0, 2.0], [2.0**26, 1.0], [3.0, 1.0]]),  # squared norms too large
        np.array([[1.0, 2.0], [2.0, 1.0], [3.0, 1.0]], dtype=np.float32),  # single precision
    ],
    ids=["fractions", "large", "float32"],
)
def test_other_features_are_measured_again(monkeypatch, X):
    calls = count_remeasurements(monkeypatch)
    neighbors_module.kneighbors(X, X, 1, exclude_self=True)
    assert not calls  # no two candidates within the rounding margin: the BLAS order is exact
    neighbors_module.kneighbors(X, X, 1, exclude_self=True, return_distance=True)
    assert calls  # the distances returned are measured again


def test_knn_ties_on_continuous_features_with_duplicate_rows(monkeypatch):
    rng = np.random.default_rng(1)
    base = rng.normal(size=(30, 8)) * 1e3
    X = np.vstack([base, base[:10], base[:10]])  # each of the first ten rows three times
    reference, distances = neighbors_module.kneighbors(X, X, 6, return_distance=True)
    monkeypatch.setattr(neighbors_module, "euclidean_distances", noisy_euclidean(7))
    again, distances_again = neighbors_module.kneighbors(X, X, 6, return_distance=True)
    assert np.array_equal(again, reference)
    assert np.array_equal(distances_again, distances)
    # the three copies of row 0 are its nearest, in index order
    assert list(reference[0, :3]) == [0, 30, 40]


def test_identical_neighbours_share_their_weight_equally():
    x = np.array([1.0, 1.0, 0.0, 0.0])
    a = np.array([1.0, 0.0, 0.0, 0.0])
    b = np.array([0.0, 1.0, 0.0, 0.0])
    X = np.vstack([x, a, a, b, b, b, np.array([0.0, 0.0, 1.0, 1.0])])
    V = nnls_weights(X, np.array([[1, 2, 3, 4, 5, 6]] + [[0, 2, 3, 4, 5, 6]] * 6)).toarray()
    # x = a + b: weight 1/2 for a (split over two copies), 1/2 for b (over three copies)
    np.testing.assert_allclose(V[0, 1:7], [1 / 4, 1 / 4, 1 / 6, 1 / 6, 1 / 6, 0.0], atol=1e-15)


def test_a_row_with_copies_among_its_neighbours_is_rebuilt_from_them():
    X = np.array([[1.0, 2.0], [1.0, 2.0], [2.0, 4.0], [1.0, 2.0]])
    V = nnls_weights(X, np.array([[2, 1, 3], [0, 2, 3], [0, 1, 3], [0, 1, 2]])).toarray()
    np.testing.assert_array_equal(V[0], [0.0, 0.5, 0.0, 0.5])  # not 0.5 x row 2


def test_nnls_weights_equal_scipy_where_the_solution_is_unique():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(80, 20))
    N = knn_graph(X, 8)
    V = nnls_weights(X, N).toarray()
    for i in range(80):
        w = nnls(X[N[i]].T, X[i])[0]
        w = w / w.sum() if w.sum() > 0 else np.full(8, 1 / 8)
        np.testing.assert_allclose(V[i, N[i]], w, rtol=0, atol=1e-9)


def test_nnls_weights_do_not_move_when_the_gram_matrices_move_by_rounding(monkeypatch):
    import pmlbench.numerics.enrichment as enrichment

    X, _ = binary_with_duplicates(2)
    N = knn_graph(X, 10)
    reference = nnls_weights(X, N).toarray()
    original = enrichment.row_grams
    rng = np.random.default_rng(5)

    def perturbed(*args):
        G = original(*args)
        E = ROUNDING * rng.standard_normal(G.shape)
        return G * (1.0 + (E + E.transpose(0, 2, 1)) / 2)

    monkeypatch.setattr(enrichment, "row_grams", perturbed)
    np.testing.assert_allclose(nnls_weights(X, N).toarray(), reference, rtol=0, atol=1e-9)


def test_canonical_nnls_with_dependent_columns_is_a_minimiser():
    a, b = np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])
    A = np.column_stack([a, b, a + b, 2 * a + b])  # rank 2
    x = np.array([3.0, 2.0, 0.0])
    v = canonical_nnls(A.T @ A, A.T @ x, float(x @ x))
    assert (v >= 0).all()
    np.testing.assert_allclose(A @ v, x, atol=1e-12)
    perturbed = canonical_nnls((A.T @ A) * (1 + ROUNDING), A.T @ x, float(x @ x))
    np.testing.assert_allclose(perturbed, v, atol=1e-9)


def test_row_groups_and_exact_distances():
    X = np.array([[0.0, 1.0], [-0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    assert list(row_groups(X)) == [0, 0, 1, 0]
    assert list(row_groups(sp.csr_matrix(X))) == [0, 0, 1, 0]
    d = squared_distances(X, X, np.array([2, 2, 2]), np.array([0, 1, 3]))
    assert d[0] == d[1] == d[2] == 2.0


def test_kmeans_assigns_equidistant_points_to_the_lower_centre_in_any_column_order():
    X, _ = binary_with_duplicates(4, n=150, d=30)
    labels = kmeans_labels(X, 12, seed=3)
    for perm_seed in range(3):
        perm = np.random.default_rng(perm_seed).permutation(X.shape[1])
        assert np.array_equal(kmeans_labels(X[:, perm], 12, seed=3), labels)
    # every group is exactly the set of rows nearest to its mean (a Lloyd fixed point)
    centres = np.stack([X[labels == g].mean(axis=0) for g in np.unique(labels)])
    D = ((X[:, None, :] - centres[None]) ** 2).sum(axis=2)
    assert np.all(D[np.arange(len(X)), labels] <= D.min(axis=1) + 1e-12)


def test_kmeans_drops_clusters_when_fewer_distinct_points_than_groups():
    X = np.repeat(np.eye(3), 4, axis=0)
    labels = kmeans_labels(X, 10, seed=0)
    assert len(np.unique(labels)) == 3
    assert all(len(set(labels[4 * g : 4 * g + 4])) == 1 for g in range(3))


def test_tuning_ties_within_rounding_go_to_the_first_grid_point():
    assert best_index(np.array([0.5, 0.5 + 1e-16, 0.4]), higher_is_better=True) == 0
    assert best_index(np.array([0.7, 0.7 * (1 + 1e-12)]), higher_is_better=False) == 0
    assert best_index(np.array([0.5, 0.5 + 1e-6]), higher_is_better=True) == 1


@pytest.mark.parametrize(
    "make",
    [lambda: PML3ER(lambda2=10.0), lambda: ParticleVLS(random_state=0)],
    ids=["pml3er", "particle_vls"],
)
def test_whole_fits_on_duplicate_rich_binary_data_ignore_rounding(monkeypatch, make):
    X, Y = binary_with_duplicates(6, n=160, d=50)
    train, test = X[:100], X[100:]
    blas_as_if_inexact(monkeypatch)
    reference = make().fit(train, Y[:100]).predict(test)
    monkeypatch.setattr(neighbors_module, "euclidean_distances", noisy_euclidean(11))
    permuted = np.random.default_rng(8).permutation(X.shape[1])
    again = make().fit(train[:, permuted], Y[:100]).predict(test[:, permuted])
    assert np.array_equal(again, reference)


def test_run_json_and_store_records_name_the_cpu_and_the_blas_kernel(tmp_path):
    from threadpoolctl import threadpool_info

    from pmlbench.runner.format import from_json
    from tests.helpers import run_pmlbench

    done = run_pmlbench(
        tmp_path,
        "method=mlknn",
        "dataset=genbase",
        "protocol.n_splits=1",
        "results_store=store",
        "cache_dir=null",
        "quiet=true",
        "hydra.run.dir=run",
    )
    assert done.returncode == 0, done.stderr
    import scipy.linalg  # noqa: F401  (the run loads scipy's BLAS too)

    kernels = {i["architecture"] for i in threadpool_info() if i["user_api"] == "blas"}
    versions = from_json((tmp_path / "run" / "run.json").read_text())["versions"]
    assert versions["cpu"] and "logical cores" in versions["cpu"]
    assert all(kernel in versions["blas"] for kernel in kernels), versions["blas"]
    records = [from_json(p.read_text()) for p in (tmp_path / "store").glob("*.json")]
    assert records and all(r["run"]["versions"]["blas"] == versions["blas"] for r in records)


def test_the_leaderboard_names_the_methods_whose_numbers_depend_on_the_machine():
    from pathlib import Path

    from pmlbench.report.leaderboard import machine_dependent_methods

    found = machine_dependent_methods(["mlknn", "pml3er", "pml_ld", "pml_ld[n_groups=5]", "nope"])
    assert set(found) == {"pml_ld", "pml_ld[n_groups=5]"}
    assert "InitW" in found["pml_ld"]
    page = (Path(__file__).resolve().parents[1] / "docs" / "leaderboard.md").read_text()
    section = page.split("### Machine-dependent numbers", 1)[1].split("###", 1)[0]
    assert "- pml_ld:" in section and "- pml3er" not in section


def test_a_report_counts_one_set_of_blas_libraries_once_whatever_the_load_order(tmp_path):
    """Processes of the same code list their BLAS libraries in the order they loaded them, so
    records of one suite hold both orders; the provenance (report.html, the leaderboard's
    version table) must show one entry, not a mix of two "versions"."""
    import json

    import pandas as pd

    from pmlbench.report import provenance as provenance_module
    from pmlbench.report.sources import LoadedResults

    orders = ["openblas 0.3.31 (Haswell); openblas 0.3.30 (Haswell)"] * 2
    orders.append("openblas 0.3.30 (Haswell); openblas 0.3.31 (Haswell)")
    sources = []
    for i, blas in enumerate(orders):
        path = tmp_path / f"unit{i}.json"
        run = {"versions": {"numpy": "2.4.6", "blas": blas}, "git_commit": "abc"}
        path.write_text(json.dumps({"status": "done", "run": run}))
        sources.append(str(path))
    loaded = LoadedResults(records=pd.DataFrame({"source": sources}))
    versions = {row[0]: row[1] for row in provenance_module.provenance(loaded, [])["versions"]}
    assert versions["blas"] == "openblas 0.3.30 (Haswell); openblas 0.3.31 (Haswell)"


def test_the_blas_libraries_are_recorded_sorted(monkeypatch):
    """Sorted where they are recorded, joined by the format's one separator, so new records
    of one set of libraries read one way whatever order a process loaded them in."""
    import threadpoolctl

    from pmlbench.runner.format import LIBRARY_SEPARATOR
    from pmlbench.runner.outputs import machine_description

    loaded = [
        {"user_api": "blas", "internal_api": "openblas", "version": "0.3.31", "architecture": "X"},
        {"user_api": "openmp", "internal_api": "openmp", "version": None},
        {"user_api": "blas", "internal_api": "mkl", "version": "2024", "architecture": "Y"},
    ]
    for order in (loaded, loaded[::-1]):
        monkeypatch.setattr(threadpoolctl, "threadpool_info", lambda order=order: order)
        blas = machine_description()["blas"]
        assert blas == LIBRARY_SEPARATOR.join(["mkl 2024 (Y)", "openblas 0.3.31 (X)"])
