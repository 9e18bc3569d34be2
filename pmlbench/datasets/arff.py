"""Mulan / MEKA ARFF files (dense and sparse) as datasets.

Which attributes are labels comes from Mulan's XML label file (``<label name="..."/>``
elements), or from a label count: positive = the last ``label_count`` attributes (Mulan),
negative = the first ``-label_count`` (MEKA). Without either, MEKA's ``-C N`` option in the
relation name is used. Parsing uses liac-arff, which reads sparse ARFF (scipy's does not).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import arff  # liac-arff
import numpy as np
import scipy.sparse as sp

from pmlbench.datasets.dataset import Dataset
from pmlbench.errors import PmlbenchError


def label_names_from_xml(path: str | Path) -> list[str]:
    """Label names from a Mulan XML label file, in file order (hierarchies flattened)."""
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as exc:
        raise PmlbenchError(
            f"cannot read Mulan XML label file {path} ({exc}); check the file"
        ) from None
    names = [el.get("name") for el in root.iter() if el.tag.split("}")[-1] == "label"]
    if not names:
        raise PmlbenchError(f"Mulan XML file {path} declares no <label name=...> elements")
    return names


def _meka_label_count(relation: str) -> int | None:
    match = re.search(r"-C\s+(-?\d+)", relation or "")
    return -int(match.group(1)) if match else None  # MEKA's labels come first


def load_arff(
    path: str | Path,
    *,
    xml: str | Path | None = None,
    label_count: int | None = None,
    name: str | None = None,
) -> Dataset:
    """Load a (sparse or dense) ARFF file; see the module docstring for label selection."""
    path = Path(path)
    if not path.is_file():
        raise PmlbenchError(f"ARFF file {path} does not exist; check dataset.path")
    text = path.read_text(errors="replace")
    data_lines = [
        line
        for line in re.split(r"^\s*@data\s*$", text, maxsplit=1, flags=re.M | re.I)[-1].splitlines()
        if line.strip() and not line.lstrip().startswith("%")
    ]
    sparse = bool(data_lines) and data_lines[0].lstrip().startswith("{")
    try:
        parsed = arff.loads(
            text, encode_nominal=True, return_type=arff.COO if sparse else arff.DENSE
        )
    except (arff.ArffException, ValueError, IndexError) as exc:
        raise PmlbenchError(f"{path} is not valid ARFF ({exc}); check the file") from None
    attributes = [a[0] for a in parsed["attributes"]]
    kinds = [a[1] for a in parsed["attributes"]]
    n_attr = len(attributes)
    if sparse:
        values, rows, cols = parsed["data"]
        n = len(data_lines)  # rows with no stored value still count
        numeric = [not isinstance(v, str) for v in values]  # string attributes are no features
        values = np.array(
            [np.nan if v is None else v for v, ok in zip(values, numeric, strict=True) if ok],
            dtype=np.float64,
        )
        rows, cols = np.asarray(rows)[numeric], np.asarray(cols)[numeric]
        M = sp.csr_matrix((values, (rows, cols)), shape=(n, n_attr))
    else:
        M = np.asarray(parsed["data"], dtype=object)
    if xml is not None:
        label_names = label_names_from_xml(xml)
        missing = [lbl for lbl in label_names if lbl not in attributes]
        if missing:
            raise PmlbenchError(
                f"{path}: labels {missing[:5]} from {xml} are not attributes of the ARFF file; "
                "use the XML file that belongs to this ARFF file"
            )
        label_cols = [attributes.index(lbl) for lbl in label_names]
    else:
        count = label_count if label_count is not None else _meka_label_count(parsed["relation"])
        if count is None or count == 0:
            raise PmlbenchError(
                f"{path}: cannot tell which attributes are labels; give dataset.xml=<Mulan XML> "
                "or dataset.label_count=<number of labels> (negative: labels come first)"
            )
        if abs(count) >= n_attr:
            raise PmlbenchError(
                f"{path}: label_count {count} leaves no features among {n_attr} attributes; "
                "check the number of labels"
            )
        label_cols = list(range(n_attr - count, n_attr)) if count > 0 else list(range(-count))
    label_set = set(label_cols)
    feature_cols = [
        j
        for j in range(n_attr)
        if j not in label_set
        and (isinstance(kinds[j], list) or str(kinds[j]).upper() in ("NUMERIC", "REAL", "INTEGER"))
    ]

    def columns(cols):
        block = M[:, cols]
        if sp.issparse(block):
            return block.toarray()
        missing = np.equal(block, None)  # '?' in the file
        return np.where(missing, np.nan, block).astype(np.float64)

    Y = columns(label_cols)
    for j, col in enumerate(label_cols):
        kind = kinds[col]
        if isinstance(kind, list):  # nominal: map the index back to its value ("0"/"1")
            try:
                codes = np.array([float(v) for v in kind])
            except ValueError:
                raise PmlbenchError(
                    f"{path}: label attribute {attributes[col]!r} has values {kind}; "
                    "labels must be "
                    "0/1 (is label_count right?)"
                ) from None
            finite = np.isfinite(Y[:, j])
            Y[finite, j] = codes[Y[finite, j].astype(int)]
    if np.isnan(Y).any() or not np.isin(Y, (0, 1)).all():
        raise PmlbenchError(
            f"{path}: label attributes hold values other than 0/1 (is label_count "
            f"{label_count} right for this file?); fix the label count or the XML file"
        )
    X = columns(feature_cols)
    if sparse:
        X = sp.csr_matrix(X)
    return Dataset(
        X=X,
        Y=Y.astype(np.uint8),
        name=name or path.stem,
        label_names=[attributes[c] for c in label_cols],
        meta={"source": str(path), "format": "arff"},
    )
