"""Bundled datasets and the loaders for users' own files (npz, Mulan ARFF, PML .mat)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from pmlbench.datasets.arff import load_arff
from pmlbench.datasets.bundled import DATA_DIR, genbase
from pmlbench.datasets.dataset import Dataset
from pmlbench.datasets.files import load_file
from pmlbench.errors import PmlbenchError
from pmlbench.noise.uniform import uniform_noise
from pmlbench.plugins import registry

SHAPES = {
    "genbase": (662, 1185, 27),
    "medical": (978, 1449, 45),
    "arts": (5000, 462, 26),
    "corel5k": (5000, 499, 374),
    "bibtex": (7395, 1836, 159),
    "yeastbp": (6139, 6139, 217),
    "yeastcc": (6139, 6139, 50),
    "yeastmf": (6139, 6139, 39),
    "emotions": (593, 72, 6),
    "yeast": (2417, 103, 14),
    "enron": (1702, 1001, 53),
    "cal500": (502, 68, 174),
    "slashdot": (3782, 1079, 22),
    "languagelog": (1459, 1004, 75),
    "recreation": (5000, 606, 22),
    "science": (5000, 743, 40),
    "corel16k001": (13766, 500, 153),
    "delicious": (16105, 500, 983),
    "mirflickr5k": (5000, 100, 7),
}
# Label cardinality as published (Mulan/MEKA statistics; mirflickr: the PML literature's
# figures for the full set, which this subset matches).
CARDINALITY = {
    "emotions": 1.868,
    "yeast": 4.237,
    "enron": 3.378,
    "cal500": 26.044,
    "slashdot": 1.177,
    "languagelog": 1.180,
    "recreation": 1.423,
    "science": 1.451,
    "corel16k001": 2.859,
    "delicious": 19.020,
    "mirflickr5k": 1.771,
}
REAL_PML = {"yeastbp", "yeastcc", "yeastmf", "mirflickr5k"}
SHA256 = {
    "genbase": "efcade7830a46a19a96fa9067e73161fe703e11cdd1b6da137105c4c46fb6d8e",
    "medical": "06fb0cc117e5d7dd8e712ec5eec478c03b6e908a78ebdd402499a50887414106",
    "arts": "bec13181f0b05563913b41dd52aeeb97574c67491da9ea4c9333db8d1e5ea7f9",
    "corel5k": "c8711d53efe56b6996920351c4d2464535fd6cf1cda51fdaa9977f7882689691",
    "bibtex": "30deb8414ef40024e0cf6bd205fba0acbc9cecbf24a5c2e1ca8c1c3ec20491fe",
    "yeastbp": "a02f21ff8afb65f52f999369823b5d17c87040d335676a3912737403ff020614",
    "yeastcc": "326de99d4bc5346a06426c796b534ff77cb31f577a7d768ae1bdb9ae400ad593",
    "yeastmf": "d8117f95f18ca972505a6ea5d22a30b6c484827b1a9dbb38641e470cc44a04b1",
    "emotions": "a4a68bbde72b1531564755e3371d3991599c1368715da483752187a4f8767bff",
    "yeast": "9d982ecfb77263a7e775b7b56ab2c78ea3a354e481245c657db2987148868830",
    "enron": "2e80f0b12c00065ee1e934ec7ebe92ef83175e8eeb72c71de5b3091c41e9830c",
    "cal500": "2d6ea1a3a363b95f15848c852ab726bfddb61518f8fbc4ac8c822f180242221a",
    "slashdot": "8ddf906b32f1273c0499cad7caafeaa710cd138e10cfc399dcbca2335dd5e7f1",
    "languagelog": "4bfb066c875b55fb298f4cf63bbae3ec4d222dc08d0f70a4d3798db3d555963f",
    "recreation": "d71eda62fc1384c502f5d7a297604785b2588cbf693de2ecd11c51d982d9557f",
    "science": "9742da02c9a923defce1c066ef4ca22c0c9e48d00008c14c8bcfb3bd43149b82",
    "corel16k001": "de9d7e824a282dd235799a2478ecea6bc38222c6ba76325cd3ad734185397779",
    "delicious": "091964c9431513e5281ffa9325189841d14694074b93c2bae5284c81f8199964",
    "mirflickr5k": "0edf3859bb9b0bf66d1524c41ff74538aeec208724b9681e7bc6f81c6a1e3915",
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_bundled_dataset_checksum_and_shape(name):
    digest = hashlib.sha256((DATA_DIR / f"{name}.npz").read_bytes()).hexdigest()
    assert digest == SHA256[name]
    data = registry.load("dataset", name)()
    n, d, n_labels = SHAPES[name]
    assert data.X.shape == (n, d) and data.Y.shape == (n, n_labels)
    assert sp.issparse(data.X)
    if name in CARDINALITY:
        assert data.summary()["label_cardinality"] == pytest.approx(CARDINALITY[name], abs=5e-4)
        assert data.meta["citation"]
    if name in REAL_PML:
        assert data.Y_candidates is not None and np.all(data.Y_candidates >= data.Y)
    else:
        assert data.Y_candidates is None


def test_every_bundled_file_is_registered_and_checksummed():
    files = {p.stem for p in DATA_DIR.glob("*.npz")}
    assert files == set(SHA256) == set(SHAPES)
    assert files <= set(registry.plugins("dataset"))


def test_mirflickr5k_is_real_pml_subset_with_natural_candidates():
    data = registry.load("dataset", "mirflickr5k")()
    assert data.name == "mirflickr5k"
    assert "subset of the 10,433" in data.meta["citation"]
    assert data.Y_candidates is not None
    assert np.all(data.Y <= data.Y_candidates)  # ground truth within the candidates, every row
    assert data.Y_candidates.sum(axis=1).mean() == pytest.approx(3.35, abs=0.005)
    assert data.Y.sum(axis=1).mean() == pytest.approx(1.77, abs=0.005)
    assert (data.Y.sum(axis=1) > 0).all()
    assert (data.Y_candidates > data.Y).any()  # natural noise: some candidates are wrong


def test_real_quirks_are_present():
    arts = registry.load("dataset", "arts")()
    assert (arts.X.getnnz(axis=1) == 0).sum() == 26
    genbase = registry.load("dataset", "genbase")()
    assert len(np.unique(genbase.X.toarray(), axis=0)) == 205
    slashdot = registry.load("dataset", "slashdot")()
    assert (slashdot.Y.sum(axis=0) == 0).sum() == 3  # labels never positive
    assert (slashdot.Y.sum(axis=1) == 0).sum() == 7
    languagelog = registry.load("dataset", "languagelog")()
    assert (languagelog.Y.sum(axis=1) == 0).sum() == 207
    delicious = registry.load("dataset", "delicious")()
    assert (delicious.Y.sum(axis=1) == 0).sum() == 14


def test_noise_cap_on_the_new_benchmarks():
    """What docs/datasets.md says about the uniform rule's cap m_i <= l - 1 - |y_i|."""
    from pmlbench.noise.uniform import noise_counts

    def capped(name: str, rate: float) -> int:
        Y = registry.load("dataset", name)().Y
        cardinality = Y.sum(axis=1)
        asked = np.floor(rate * cardinality + 0.5 + 1e-9)
        return int((noise_counts(cardinality, Y.shape[1], rate, "half_up") < asked).sum())

    assert capped("cal500", 2.0) == 0  # 174 labels: at most 48 true, 96 asked, 125 allowed
    assert capped("emotions", 2.0) == 415
    assert capped("yeast", 2.0) == 759


# Tiny files: three distinct rows, repeated so that the dataset reaches MIN_INSTANCES.
REPEAT = 10
MULAN_DENSE = (
    """% a tiny Mulan file
@relation tiny
@attribute id string
@attribute f1 numeric
@attribute f2 {NO,YES}
@attribute f3 numeric
@attribute a {0,1}
@attribute b {0,1}
@data
"""
    + REPEAT
    * """p1,0.5,YES,1,1,0
p2,1.5,NO,2,0,1
p3,2.5,YES,3,1,1
"""
)

MULAN_SPARSE = (
    """@relation 'tiny: -C 2'
@attribute a {0,1}
@attribute b {0,1}
@attribute f1 numeric
@attribute f2 numeric
@data
"""
    + REPEAT
    * """{0 1,2 0.5}
{1 1,3 2}
{0 1,1 1,2 3,3 4}
"""
)

XML = """<?xml version="1.0" encoding="utf-8"?>
<labels xmlns="http://mulan.sourceforge.net/labels">
<label name="a"></label><label name="b"></label>
</labels>
"""


def repeated(rows) -> np.ndarray:
    return np.tile(np.asarray(rows), (REPEAT, 1))


def test_dense_arff_with_xml_and_with_label_count(tmp_path):
    arff_path = tmp_path / "tiny.arff"
    arff_path.write_text(MULAN_DENSE)
    (tmp_path / "tiny.xml").write_text(XML)
    for data in (
        load_arff(arff_path, xml=tmp_path / "tiny.xml"),
        load_file(str(arff_path), label_count=2),
        load_file(str(arff_path)),  # the Mulan XML file beside it names the labels
    ):
        np.testing.assert_array_equal(data.Y, repeated([[1, 0], [0, 1], [1, 1]]))
        np.testing.assert_array_equal(
            np.asarray(data.X), repeated([[0.5, 1, 1], [1.5, 0, 2], [2.5, 1, 3]])
        )
        assert data.label_names == ["a", "b"]


def test_mulan_train_file_finds_its_xml(tmp_path):
    (tmp_path / "tiny-train.arff").write_text(MULAN_DENSE)
    (tmp_path / "tiny.xml").write_text(XML)
    assert load_file(str(tmp_path / "tiny-train.arff")).label_names == ["a", "b"]


def test_sparse_meka_arff(tmp_path):
    path = tmp_path / "sparse.arff"
    path.write_text(MULAN_SPARSE)
    for data in (load_arff(path), load_file(str(path), label_count=-2)):  # labels first (-C 2)
        assert sp.issparse(data.X)
        np.testing.assert_array_equal(data.Y, repeated([[1, 0], [0, 1], [1, 1]]))
        np.testing.assert_array_equal(data.X.toarray(), repeated([[0.5, 0], [0, 2], [3, 4]]))


def test_arff_label_count_mismatch_is_clear(tmp_path):
    path = tmp_path / "tiny.arff"
    path.write_text(MULAN_DENSE)
    with pytest.raises(PmlbenchError, match="label"):
        load_file(str(path), label_count=3)  # f3 (values 1..3) is no label
    with pytest.raises(PmlbenchError, match="label_count"):
        load_file(str(path))


def test_all_binary_arff_accepts_any_count(tmp_path):
    """Text sets declare features {0,1} like labels: types say nothing, the count is used."""
    path = tmp_path / "text.arff"
    header = "@relation text\n" + "".join(f"@attribute w{j} {{0,1}}\n" for j in range(4))
    rows = ["1,0,1,0", "0,1,0,1", "1,1,0,1"]
    path.write_text(header + "@data\n" + "\n".join(REPEAT * rows) + "\n")
    assert load_file(str(path), label_count=1).Y.shape == (30, 1)
    assert load_file(str(path), label_count=2).Y.shape == (30, 2)


def _random_multilabel(n: int, d: int, n_labels: int, seed: int):
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, n_labels)) < 0.4).astype(np.uint8)
    Y[:, 0] = 1  # no empty rows needed here
    return rng.random((n, d)), Y


def test_mat_in_pml_layout(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.random((30, 4))
    Y = (rng.random((30, 3)) < 0.4).astype(float)
    C = np.maximum(Y, rng.random((30, 3)) < 0.3)
    scipy.io.savemat(
        tmp_path / "d.mat", {"data": X, "target": 2 * Y.T - 1, "partial_labels": C.T.astype(float)}
    )
    data = load_file(str(tmp_path / "d.mat"))
    np.testing.assert_array_equal(data.Y, Y)
    np.testing.assert_array_equal(data.Y_candidates, C)
    np.testing.assert_allclose(data.X, X)


@pytest.mark.parametrize("sparse_features", [False, True])
def test_mat_train_test_layout_is_stacked_train_first(tmp_path, sparse_features):
    X_train, Y_train = _random_multilabel(25, 6, 4, seed=1)
    X_test, Y_test = _random_multilabel(15, 6, 4, seed=2)
    as_features = sp.csc_matrix if sparse_features else np.asarray
    scipy.io.savemat(
        tmp_path / "recreation.mat",
        {
            "train_data": as_features(X_train),
            "test_data": as_features(X_test),
            # labels x instances in -1/+1, as the multi-label collections distribute them
            "train_target": 2.0 * Y_train.T - 1,
            "test_target": 2.0 * Y_test.T - 1,
        },
    )
    data = load_file(str(tmp_path / "recreation.mat"))
    assert data.name == "recreation" and data.Y_candidates is None
    assert sp.issparse(data.X) == sparse_features
    X = data.X.toarray() if sparse_features else data.X
    np.testing.assert_allclose(X, np.vstack([X_train, X_test]))
    np.testing.assert_array_equal(data.Y, np.vstack([Y_train, Y_test]))
    assert data.meta["layout"].startswith("train_data/test_data stacked (25 train rows")


def test_mat_train_test_layout_accepts_instances_x_labels_and_0_1(tmp_path):
    X_train, Y_train = _random_multilabel(20, 3, 5, seed=3)
    X_test, Y_test = _random_multilabel(12, 3, 5, seed=4)
    scipy.io.savemat(
        tmp_path / "d.mat",
        {
            "train_data": X_train,
            "test_data": X_test,
            "train_target": Y_train,
            "test_target": Y_test,
        },
    )
    np.testing.assert_array_equal(
        load_file(str(tmp_path / "d.mat")).Y, np.vstack([Y_train, Y_test])
    )


def test_bad_files_get_clear_errors(tmp_path):
    with pytest.raises(PmlbenchError, match="does not exist"):
        load_file(str(tmp_path / "missing.npz"))
    broken = tmp_path / "broken.npz"
    broken.write_bytes(b"not a zip file")
    with pytest.raises(PmlbenchError, match="not a readable npz"):
        load_file(str(broken))
    with pytest.raises(PmlbenchError, match="dataset.path"):
        load_file()
    with pytest.raises(PmlbenchError, match="format"):
        load_file(str(tmp_path / "x.csv"))


def test_dataset_validation():
    with pytest.raises(PmlbenchError, match="NaN or infinite"):
        Dataset(X=np.array([[np.nan, 1.0]]), Y=np.array([[1]]), name="x")
    with pytest.raises(PmlbenchError, match="0/1"):
        Dataset(X=np.ones((2, 1)), Y=np.array([[2], [0]]), name="x")
    with pytest.raises(PmlbenchError, match="rows"):
        Dataset(X=np.ones((3, 1)), Y=np.ones((2, 1)), name="x")
    with pytest.raises(PmlbenchError, match="not candidates"):
        Dataset(X=np.ones((2, 1)), Y=np.ones((2, 1)), Y_candidates=np.zeros((2, 1)), name="x")


SPARSE_HEADER = """@relation probe
@attribute f0 numeric
@attribute f1 string
@attribute l0 {LABELS}
@attribute l1 {LABELS}
@data
"""


def _sparse_rows(n: int) -> str:
    rows = []
    for i in range(n):
        label = 2 + i % 2
        rows.append(f"{{0 {i / n:.3f}, 1 '{i}, quoted', {label} 1}}")
    return "\n".join(rows) + "\n"


def test_sparse_arff_labels_declared_one_first_are_refused(tmp_path):
    """Weka's rule makes an omitted sparse value the first declared one: with {1,0} every
    omitted label would be relevant (every run would score subset accuracy 1.0)."""
    path = tmp_path / "ones.arff"
    path.write_text(SPARSE_HEADER.replace("LABELS", "1,0") + _sparse_rows(40))
    with pytest.raises(PmlbenchError, match=r"'l0' is declared \{1,0\}.*declare it \{0,1\}"):
        load_arff(path, label_count=2)
    path.write_text(SPARSE_HEADER.replace("LABELS", "0,1") + _sparse_rows(40))
    data = load_arff(path, label_count=2)
    assert data.Y.sum(axis=1).tolist() == [1] * 40  # one label per row, as written


def test_sparse_arff_rows_naming_an_attribute_twice_are_refused(tmp_path):
    rows = _sparse_rows(40).splitlines()
    rows[6] = "{0 0.5, 0 0.7, 3 1}"
    path = tmp_path / "twice.arff"
    path.write_text(SPARSE_HEADER.replace("LABELS", "0,1") + "\n".join(rows) + "\n")
    with pytest.raises(PmlbenchError, match="row 7 gives attribute 0 more than once"):
        load_arff(path, label_count=2)


def test_duplicate_csr_entries_give_the_canonical_matrix_s_numbers():
    """A CSR matrix storing one value as two halves under a repeated column index is the
    same matrix to scipy; every method must see it in one canonical form (summed, sorted,
    no explicit zeros), so identical rows are grouped and numbers agree."""
    from pmlbench.methods.particle import ParticleMAP

    data = genbase()
    rows = np.random.default_rng(0).permutation(data.n_instances)[:120]
    X = sp.csr_matrix(data.X[rows])
    Y = data.Y[rows]
    # split every stored value into two halves under the same column, reversed order
    counts = np.diff(X.indptr)
    indptr = np.concatenate([[0], np.cumsum(2 * counts)])
    indices = np.empty(2 * X.nnz, dtype=X.indices.dtype)
    values = np.empty(2 * X.nnz)
    for r in range(X.shape[0]):
        cols, vals = X.indices[X.indptr[r] : X.indptr[r + 1]], X.data[X.indptr[r] : X.indptr[r + 1]]
        indices[indptr[r] : indptr[r + 1]] = np.concatenate([cols, cols])[::-1]
        values[indptr[r] : indptr[r + 1]] = np.concatenate([vals / 2, vals / 2])[::-1]
    halves = sp.csr_matrix((values, indices, indptr), shape=X.shape)
    halves.has_canonical_format = False
    canonical = Dataset(X=X, Y=Y, name="a")
    split = Dataset(X=halves, Y=Y, name="b")
    assert split.X.has_canonical_format and split.X.nnz == X.nnz
    assert np.array_equal(split.X.indices, canonical.X.indices)
    assert np.array_equal(split.X.data, canonical.X.data)
    Y_cand = uniform_noise(Y[:60], np.random.default_rng(1), rate=1.0)
    a = ParticleMAP().fit(canonical.X[:60], Y_cand).decision_function(canonical.X[60:])
    b = ParticleMAP().fit(split.X[:60], Y_cand).decision_function(split.X[60:])
    assert np.array_equal(a, b)


@pytest.mark.parametrize("name", ["evil\x1b[2J", "a\u202eb", "x\u200fy", "two\nlines", " "])
def test_a_dataset_name_with_control_or_bidi_characters_is_refused_at_the_source(name):
    """A dataset plugin's name (or dataset.display_name) went raw into results.csv and the
    report: names with escape codes or bidi controls are refused where the dataset is made."""
    data = genbase()
    with pytest.raises(PmlbenchError, match="control or bidirectional") as error:
        Dataset(X=data.X, Y=data.Y, name=name)
    message = str(error.value)
    assert "\x1b" not in message and "\u202e" not in message and "\n" not in message
