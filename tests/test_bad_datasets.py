"""A catalogue of bad dataset input: each case fails at load time with one line naming the key.

Every case builds its files in a temporary directory and calls the ``file`` dataset plugin
with the configuration a user would give (``dataset.path``, ``dataset.label_count``, ...).
The error must be a PmlbenchError on one line that names the ``dataset.*`` key and says what
to do. One case also goes through the command line, to check that nothing runs before the error and
that no traceback is printed.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from pmlbench.datasets.files import load_file
from pmlbench.errors import PmlbenchError

ROWS = 10  # each tiny file repeats its three rows this often (30 instances, enough otherwise)

FOUR_LABELS = (
    """@relation four
@attribute f1 numeric
@attribute f2 numeric
@attribute a {0,1}
@attribute b {0,1}
@attribute c {0,1}
@attribute d {0,1}
@data
"""
    + ROWS * "0.5,1,1,0,0,1\n1.5,2,0,1,1,0\n2.5,3,1,1,0,0\n"
)

MEKA_TWO_LABELS_FIRST = (
    """@relation 'meka: -C 2'
@attribute a {0,1}
@attribute b {0,1}
@attribute f1 numeric
@attribute f2 numeric
@data
"""
    + ROWS * "1,0,0.5,1\n0,1,1.5,2\n1,1,2.5,3\n"
)

XML_FOUR = """<?xml version="1.0" encoding="utf-8"?>
<labels xmlns="http://mulan.sourceforge.net/labels">
<label name="a"/><label name="b"/><label name="c"/><label name="d"/>
</labels>
"""


def write_npz(path: Path, n: int) -> None:
    rng = np.random.default_rng(0)
    X = sp.csr_matrix(rng.random((n, 3)))
    Y = np.eye(2, dtype=np.uint8)[np.arange(n) % 2]
    np.savez(
        path,
        X_data=X.data,
        X_indices=X.indices,
        X_indptr=X.indptr,
        X_shape=np.array(X.shape),
        Y=Y,
    )


def split_mat(path: Path, **override) -> None:
    rng = np.random.default_rng(0)
    parts = {
        "train_data": rng.random((20, 3)),
        "test_data": rng.random((12, 3)),
        "train_target": np.where(rng.random((4, 20)) < 0.5, 1.0, -1.0),
        "test_target": np.where(rng.random((4, 12)) < 0.5, 1.0, -1.0),
    }
    scipy.io.savemat(path, {**parts, **override})


def empty(name: str) -> Callable[[Path], dict]:
    def build(tmp: Path) -> dict:
        (tmp / name).write_bytes(b"")
        return {"path": str(tmp / name)}

    return build


def arff(text: str, beside: str | None = None, **config) -> Callable[[Path], dict]:
    """An ARFF file (with ``beside`` as the Mulan XML file next to it) and a configuration."""

    def build(tmp: Path) -> dict:
        (tmp / "four.arff").write_text(text)
        if beside is not None:
            (tmp / "four.xml").write_text(beside)
        return {"path": str(tmp / "four.arff"), **config}

    return build


def npz_archive_without_arrays(tmp: Path) -> dict:
    np.savez(tmp / "none.npz")
    return {"path": str(tmp / "none.npz")}


def truncated_npz(tmp: Path) -> dict:
    write_npz(tmp / "full.npz", 40)
    (tmp / "cut.npz").write_bytes((tmp / "full.npz").read_bytes()[:300])
    return {"path": str(tmp / "cut.npz")}


def three_instances(tmp: Path) -> dict:
    write_npz(tmp / "three.npz", 3)
    return {"path": str(tmp / "three.npz")}


def xml_given_and_count(tmp: Path) -> dict:
    (tmp / "four.arff").write_text(FOUR_LABELS)
    (tmp / "labels.xml").write_text(XML_FOUR)
    return {"path": str(tmp / "four.arff"), "xml": str(tmp / "labels.xml"), "label_count": 3}


def label_count_for_npz(tmp: Path) -> dict:
    write_npz(tmp / "d.npz", 40)
    return {"path": str(tmp / "d.npz"), "label_count": 2}


def mat_without_known_keys(tmp: Path) -> dict:
    scipy.io.savemat(tmp / "other.mat", {"features": np.ones((40, 2)), "labels": np.ones((2, 40))})
    return {"path": str(tmp / "other.mat")}


def mat_train_data_transposed(tmp: Path) -> dict:
    split_mat(tmp / "t.mat", train_data=np.random.default_rng(1).random((3, 20)))
    return {"path": str(tmp / "t.mat")}


def mat_parts_with_different_features(tmp: Path) -> dict:
    split_mat(tmp / "f.mat", test_data=np.ones((12, 5)))
    return {"path": str(tmp / "f.mat")}


def mat_v73(tmp: Path) -> dict:
    # MATLAB v7.3 files are HDF5 with a 128-byte MATLAB header whose version field is 0x0200.
    header = b"MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: Mon Jan  1 00:00:00 2024 HDF5"
    header = header.ljust(116, b" ") + b"\0" * 8 + b"\0\x02" + b"IM"
    (tmp / "v73.mat").write_bytes(header + b"\x89HDF\r\n\x1a\n" + b"\0" * 512)
    return {"path": str(tmp / "v73.mat")}


# (case id, builder(tmp_path) -> dataset config, substrings of the message: the key and the fix)
CASES = [
    ("missing file", lambda tmp: {"path": str(tmp / "nope.npz")}, ["dataset.path=", "check"]),
    ("no path", lambda tmp: {}, ["dataset.path=", "add"]),
    ("unknown extension", lambda tmp: {"path": str(tmp / "d.csv")}, ["dataset.format"]),
    ("empty npz (0 bytes)", empty("e.npz"), ["dataset.path=", "is empty (0 bytes)", "re-create"]),
    ("empty arff (0 bytes)", empty("e.arff"), ["dataset.path=", "is empty (0 bytes)"]),
    ("empty mat (0 bytes)", empty("e.mat"), ["dataset.path=", "is empty (0 bytes)"]),
    ("npz with no arrays", npz_archive_without_arrays, ["dataset.path=", "holds no arrays"]),
    ("truncated npz", truncated_npz, ["dataset.path=", "not a readable npz", "re-create"]),
    (
        "too few instances",
        three_instances,
        ["has 3 instances", "at least 30", "dataset.path=", "larger dataset"],
    ),
    (
        "label_count one short: a {0,1} label becomes a feature",
        arff(FOUR_LABELS, label_count=3),
        ["dataset.label_count=3", "'a'", "raise |dataset.label_count|", "dataset.xml"],
    ),
    (
        "label_count one short, labels first",
        arff(MEKA_TWO_LABELS_FIRST.replace(": -C 2", ""), label_count=-1),
        ["dataset.label_count=-1", "'b'", "raise |dataset.label_count|"],
    ),
    (
        "label_count takes a numeric feature as a label",
        arff(FOUR_LABELS, label_count=5),
        ["dataset.label_count=5", "'f2'", "not nominal {0,1}", "lower |dataset.label_count|"],
    ),
    (
        "label_count contradicts the Mulan XML beside the file",
        arff(FOUR_LABELS, beside=XML_FOUR, label_count=3),
        ["dataset.label_count=3", "four.xml beside it names 4 labels", "drop dataset.label_count"],
    ),
    (
        "label_count contradicts MEKA's -C",
        arff(MEKA_TWO_LABELS_FIRST, label_count=-1),
        ["dataset.label_count=-1", "-C 2", "drop dataset.label_count or set it to -2"],
    ),
    (
        "label_count contradicts dataset.xml",
        xml_given_and_count,
        ["dataset.label_count=3", "dataset.xml=", "names 4 labels", "drop dataset.label_count"],
    ),
    ("label_count of zero", arff(FOUR_LABELS, label_count=0), ["dataset.label_count=0"]),
    (
        "label_count not an integer",
        arff(FOUR_LABELS, label_count="abc"),
        ["dataset.label_count must be an integer"],
    ),
    (
        "label_count covering every attribute",
        arff(FOUR_LABELS, label_count=6),
        ["dataset.label_count=6", "leaves no features"],
    ),
    (
        "no way to tell the labels",
        arff(FOUR_LABELS),
        ["dataset.xml=", "dataset.label_count="],
    ),
    (
        "dataset.xml does not exist",
        arff(FOUR_LABELS, xml="/nonexistent/labels.xml"),
        ["dataset.xml=/nonexistent/labels.xml does not exist"],
    ),
    ("label_count given for an npz file", label_count_for_npz, ["dataset.label_count", "drop"]),
    (
        ".mat without a known layout",
        mat_without_known_keys,
        ["dataset.path=", "['features', 'labels']", "train_data / train_target"],
    ),
    (
        ".mat train_data stored features x instances",
        mat_train_data_transposed,
        ["dataset.path=", "'train_target'", "'train_data'", "transposed"],
    ),
    (
        ".mat train and test parts with different features",
        mat_parts_with_different_features,
        ["dataset.path=", "'test_data' has 5"],
    ),
    (".mat v7.3 (HDF5)", mat_v73, ["dataset.path=", "v7.3 (HDF5)", "-v7"]),
]


@pytest.mark.parametrize(("case", "build", "expected"), CASES, ids=[c[0] for c in CASES])
def test_bad_dataset_gets_one_line_error(tmp_path, case, build, expected):
    config = build(tmp_path)
    with pytest.raises(PmlbenchError) as info:
        load_file(**config)
    message = str(info.value)
    assert "\n" not in message, message
    for part in expected:
        assert part in message, f"{case}: {part!r} not in {message!r}"


def test_command_line_refuses_before_any_work(tmp_path):
    """The issue's case: ML-kNN on 3 instances used to fail inside the method ("use k <= 0")."""
    config = three_instances(tmp_path)
    run_dir = tmp_path / "run"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pmlbench",
            "method=mlknn",
            "dataset=file",
            f"dataset.path={config['path']}",
            "protocol.n_splits=2",
            "quiet=true",
            "results_store=null",
            "cache_dir=null",
            f"hydra.run.dir={run_dir}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "has 3 instances" in output and "dataset.path=" in output
    assert "Traceback" not in output
    assert not (run_dir / "results.csv").exists()
