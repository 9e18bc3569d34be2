"""Bundled datasets and the loaders for users' own files (npz, Mulan ARFF, PML .mat)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from pmlbench.datasets.arff import load_arff
from pmlbench.datasets.bundled import DATA_DIR
from pmlbench.datasets.dataset import Dataset
from pmlbench.datasets.files import load_file
from pmlbench.errors import PmlbenchError
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
}
SHA256 = {
    "genbase": "efcade7830a46a19a96fa9067e73161fe703e11cdd1b6da137105c4c46fb6d8e",
    "medical": "06fb0cc117e5d7dd8e712ec5eec478c03b6e908a78ebdd402499a50887414106",
    "arts": "bec13181f0b05563913b41dd52aeeb97574c67491da9ea4c9333db8d1e5ea7f9",
    "corel5k": "c8711d53efe56b6996920351c4d2464535fd6cf1cda51fdaa9977f7882689691",
    "bibtex": "30deb8414ef40024e0cf6bd205fba0acbc9cecbf24a5c2e1ca8c1c3ec20491fe",
    "yeastbp": "a02f21ff8afb65f52f999369823b5d17c87040d335676a3912737403ff020614",
    "yeastcc": "326de99d4bc5346a06426c796b534ff77cb31f577a7d768ae1bdb9ae400ad593",
    "yeastmf": "d8117f95f18ca972505a6ea5d22a30b6c484827b1a9dbb38641e470cc44a04b1",
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_bundled_dataset_checksum_and_shape(name):
    digest = hashlib.sha256((DATA_DIR / f"{name}.npz").read_bytes()).hexdigest()
    assert digest == SHA256[name]
    data = registry.load("dataset", name)()
    n, d, n_labels = SHAPES[name]
    assert data.X.shape == (n, d) and data.Y.shape == (n, n_labels)
    assert sp.issparse(data.X)
    if name.startswith("yeast"):
        assert data.Y_candidates is not None and np.all(data.Y_candidates >= data.Y)
    else:
        assert data.Y_candidates is None


def test_real_quirks_are_present():
    arts = registry.load("dataset", "arts")()
    assert (arts.X.getnnz(axis=1) == 0).sum() == 26
    genbase = registry.load("dataset", "genbase")()
    assert len(np.unique(genbase.X.toarray(), axis=0)) == 205


MULAN_DENSE = """% a tiny Mulan file
@relation tiny
@attribute id string
@attribute f1 numeric
@attribute f2 {NO,YES}
@attribute f3 numeric
@attribute a {0,1}
@attribute b {0,1}
@data
p1,0.5,YES,1,1,0
p2,1.5,NO,2,0,1
p3,2.5,YES,3,1,1
"""

MULAN_SPARSE = """@relation 'tiny: -C 2'
@attribute a {0,1}
@attribute b {0,1}
@attribute f1 numeric
@attribute f2 numeric
@data
{0 1,2 0.5}
{1 1,3 2}
{0 1,1 1,2 3,3 4}
"""

XML = """<?xml version="1.0" encoding="utf-8"?>
<labels xmlns="http://mulan.sourceforge.net/labels">
<label name="a"></label><label name="b"></label>
</labels>
"""


def test_dense_arff_with_xml_and_with_label_count(tmp_path):
    arff_path = tmp_path / "tiny.arff"
    arff_path.write_text(MULAN_DENSE)
    (tmp_path / "tiny.xml").write_text(XML)
    for data in (
        load_arff(arff_path, xml=tmp_path / "tiny.xml"),
        load_file(str(arff_path), label_count=2),
    ):
        np.testing.assert_array_equal(data.Y, [[1, 0], [0, 1], [1, 1]])
        np.testing.assert_array_equal(np.asarray(data.X), [[0.5, 1, 1], [1.5, 0, 2], [2.5, 1, 3]])
        assert data.label_names == ["a", "b"]


def test_sparse_meka_arff(tmp_path):
    path = tmp_path / "sparse.arff"
    path.write_text(MULAN_SPARSE)
    data = load_arff(path)  # labels first, from MEKA's -C 2
    assert sp.issparse(data.X)
    np.testing.assert_array_equal(data.Y, [[1, 0], [0, 1], [1, 1]])
    np.testing.assert_array_equal(data.X.toarray(), [[0.5, 0], [0, 2], [3, 4]])


def test_arff_label_count_mismatch_is_clear(tmp_path):
    path = tmp_path / "tiny.arff"
    path.write_text(MULAN_DENSE)
    with pytest.raises(PmlbenchError, match="label"):
        load_file(str(path), label_count=3)  # f3 (values 1..3) is no label
    with pytest.raises(PmlbenchError, match="label_count"):
        load_file(str(path))


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
