"""Mulan / MEKA ARFF files (dense and sparse) as datasets.

Which attributes are labels comes from Mulan's XML label file (``<label name="..."/>``
elements), or from a label count: positive = the last ``label_count`` attributes (Mulan),
negative = the first ``-label_count`` (MEKA). Without either, MEKA's ``-C N`` option in the
relation name is used, and then a Mulan XML file beside the ARFF file (``name.xml`` for
``name.arff``, ``name-train.arff`` or ``name-test.arff``).

A label count given by the user is checked against what the file says about itself, and
refused when it contradicts it: MEKA's ``-C``, a Mulan XML file beside it, and the declared
attribute types (labels are nominal ``{0,1}``: a nominal ``{0,1}`` attribute right next to
the label block, or a label block that mixes ``{0,1}`` and other types, means the count is
off; a Mulan XML file, given or beside the ARFF, settles such a case). An off-by-one count
would otherwise silently turn a label into a feature. Parsing uses liac-arff, which reads
sparse ARFF (scipy's does not).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import arff  # liac-arff
import numpy as np
import scipy.sparse as sp

from pmlbench.datasets.dataset import Dataset
from pmlbench.datasets.npz import check_data_file
from pmlbench.errors import PmlbenchError

NUMERIC_KINDS = ("NUMERIC", "REAL", "INTEGER")


def label_names_from_xml(path: str | Path) -> list[str]:
    """Label names from a Mulan XML label file, in file order (hierarchies flattened)."""
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as exc:
        raise PmlbenchError(
            f"cannot read Mulan XML label file {path} ({exc}); check the file"
        ) from None
    names = [
        str(el.get("name"))
        for el in root.iter()
        if el.tag.split("}")[-1] == "label" and el.get("name")
    ]
    if not names:
        raise PmlbenchError(f"Mulan XML file {path} declares no <label name=...> elements")
    return names


def _meka_label_count(relation: str) -> int | None:
    match = re.search(r"-C\s+(-?\d+)", relation or "")
    return -int(match.group(1)) if match else None  # MEKA's labels come first


def _xml_beside(path: Path, attributes: list[str]) -> tuple[Path, list[int]] | None:
    """A Mulan XML label file next to the ARFF file whose labels are all its attributes."""
    stems = [path.stem, re.sub(r"[-_](train|test)$", "", path.stem, flags=re.I)]
    for stem in dict.fromkeys(stems):
        candidate = path.with_name(f"{stem}.xml")
        if not candidate.is_file():
            continue
        try:
            names = label_names_from_xml(candidate)
        except PmlbenchError:
            continue  # not a Mulan label file: no evidence either way
        if all(name in attributes for name in names):
            return candidate, [attributes.index(name) for name in names]
    return None


def _is_binary(kind) -> bool:
    return isinstance(kind, list) and sorted(str(v).strip() for v in kind) == ["0", "1"]


def _is_feature_kind(kind) -> bool:
    return isinstance(kind, list) or str(kind).upper() in NUMERIC_KINDS


def _side(count: int) -> str:
    return f"the last {count}" if count > 0 else f"the first {-count}"


def _check_label_count(
    count: int,
    *,
    meka: int | None,
    beside: tuple[Path, list[int]] | None,
    attributes: list[str],
    kinds: list,
    what: str,
) -> None:
    """Refuse a user's ``dataset.label_count`` that contradicts what the file says."""
    n_attr = len(attributes)
    key = f"dataset.label_count={count}"
    if meka is not None and count != meka:
        raise PmlbenchError(
            f"{what}: {key} contradicts the file's MEKA option -C {-meka} (its @relation line), "
            f"which makes {_side(meka)} attributes labels; drop dataset.label_count "
            f"or set it to {meka}"
        )
    cols = list(range(n_attr - count, n_attr)) if count > 0 else list(range(-count))
    if beside is not None:
        xml_path, xml_cols = beside
        if set(cols) != set(xml_cols):
            raise PmlbenchError(
                f"{what}: {key} takes {_side(count)} attributes as labels, but {xml_path.name} "
                f"beside it names {len(xml_cols)} labels; drop dataset.label_count to use that "
                "XML file, or name the right one with dataset.xml=..."
            )
        return  # the XML file settles it; declared types say nothing more
    if meka is not None:
        return
    binary = [_is_binary(kinds[j]) for j in cols]
    if any(binary) and not all(binary):
        odd = attributes[cols[binary.index(False)]]
        raise PmlbenchError(
            f"{what}: {key} takes attribute {odd!r} as a label, but it is not nominal {{0,1}} "
            f"like the other label attributes; lower |dataset.label_count| or name the labels "
            "in a Mulan XML file (dataset.xml=...)"
        )
    neighbour = n_attr - count - 1 if count > 0 else -count
    if all(binary) and 0 <= neighbour < n_attr and _is_binary(kinds[neighbour]):
        # Only a file whose other features are not all {0,1} tells labels from features
        # by type (Mulan's text sets declare every attribute {0,1}).
        others = [j for j in range(n_attr) if j not in cols and j != neighbour]
        if any(_is_feature_kind(kinds[j]) and not _is_binary(kinds[j]) for j in others):
            raise PmlbenchError(
                f"{what}: {key} leaves attribute {attributes[neighbour]!r}, declared nominal "
                "{0,1} like the labels, next to the label block as a feature; if it is a "
                f"label, raise |dataset.label_count|; if it is a feature, name the labels in a "
                "Mulan XML file (dataset.xml=...)"
            )


def _sparse_indices(line: str) -> list[int]:
    """The attribute indices of one sparse ARFF row ``{i v, j w, ...}``, in file order.

    Commas inside quoted values do not separate entries; liac-arff, which parses the values,
    keeps only the last of two entries with one index, so they are counted here.
    """
    body = line.strip()
    body = body[1 : body.rfind("}")] if body.startswith("{") else body
    entries: list[str] = []
    current: list[str] = []
    quote, escaped = "", False
    for char in body:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == ",":
            entries.append("".join(current))
            current = []
            continue
        current.append(char)
    entries.append("".join(current))
    indices = []
    for entry in entries:
        head = entry.strip().split(None, 1)
        if head and head[0].isdigit():
            indices.append(int(head[0]))
    return indices


def _refuse_repeated_indices(data_lines: list[str], what: str) -> None:
    """A sparse row naming one attribute twice is ambiguous (sum? last?): refuse it."""
    for number, line in enumerate(data_lines, start=1):
        if not line.lstrip().startswith("{"):
            continue  # a dense row (a file may mix both forms, row by row)
        seen: set[int] = set()
        for index in _sparse_indices(line):
            if index not in seen:
                seen.add(index)
                continue
            raise PmlbenchError(
                f"{what}: sparse data row {number} gives attribute {index} more than once; "
                "write each attribute at most once per row"
            )


def _refuse_omitted_labels_meaning_one(
    label_cols: list[int], attributes: list[str], kinds: list, what: str
) -> None:
    """In sparse ARFF an omitted value is the attribute's first declared value (Weka's rule):
    for a label declared ``{1,0}`` every omitted label would be relevant. Refuse it."""
    for col in label_cols:
        kind = kinds[col]
        if isinstance(kind, list) and kind and kind[0].strip() != "0":
            raise PmlbenchError(
                f"{what}: label attribute {attributes[col]!r} is declared {{{','.join(kind)}}}; "
                f"in sparse ARFF an omitted value means the first declared one ({kind[0]!r}), "
                "so every omitted label would count as relevant; declare it {0,1}"
            )


def load_arff(
    path: str | Path,
    *,
    xml: str | Path | None = None,
    label_count: int | None = None,
    name: str | None = None,
    what: str | None = None,
) -> Dataset:
    """Load a (sparse or dense) ARFF file; see the module docstring for label selection.

    Args:
        path: the ARFF file.
        xml: Mulan XML label file naming the label attributes.
        label_count: number of label attributes (negative: labels come first).
        name: the dataset's name in results (default: the file's stem).
        what: how error messages name the file (``dataset.path=...`` for users' files).
    """
    path = Path(path)
    what = what or str(path)
    check_data_file(path, what)
    if label_count is not None and (
        isinstance(label_count, bool) or not isinstance(label_count, int)
    ):
        raise PmlbenchError(
            f"dataset.label_count must be an integer (negative: labels come first), "
            f"got {label_count!r}"
        )
    text = path.read_text(encoding="utf-8-sig", errors="replace")  # a BOM is no content
    data_lines = [
        line
        for line in re.split(r"^\s*@data\s*$", text, maxsplit=1, flags=re.M | re.I)[-1].splitlines()
        if line.strip() and not line.lstrip().startswith("%")
    ]
    sparse = bool(data_lines) and data_lines[0].lstrip().startswith("{")
    # Weka reads each row in its own form, so a dense file may hold sparse rows: their
    # omitted values and repeated indices need the same checks as a sparse file's
    any_sparse = any(line.lstrip().startswith("{") for line in data_lines)
    try:
        parsed = arff.loads(
            text, encode_nominal=True, return_type=arff.COO if sparse else arff.DENSE
        )
    except (arff.ArffException, ValueError, IndexError) as exc:
        raise PmlbenchError(f"{what}: not valid ARFF ({exc}); check the file") from None
    attributes = [a[0] for a in parsed["attributes"]]
    kinds = [a[1] for a in parsed["attributes"]]
    n_attr = len(attributes)
    if any_sparse:
        _refuse_repeated_indices(data_lines, what)
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
        if not Path(xml).is_file():
            raise PmlbenchError(f"dataset.xml={xml} does not exist; check the path")
        label_names = label_names_from_xml(xml)
        missing = [lbl for lbl in label_names if lbl not in attributes]
        if missing:
            raise PmlbenchError(
                f"{what}: labels {missing[:5]} from dataset.xml={xml} are not attributes of the "
                "ARFF file; use the XML file that belongs to this ARFF file"
            )
        label_cols = [attributes.index(lbl) for lbl in label_names]
        if label_count is not None and abs(label_count) != len(label_cols):
            raise PmlbenchError(
                f"{what}: dataset.label_count={label_count} contradicts dataset.xml={xml}, which "
                f"names {len(label_cols)} labels; drop dataset.label_count"
            )
    else:
        meka = _meka_label_count(parsed["relation"])
        beside = _xml_beside(path, attributes)
        if label_count == 0:
            raise PmlbenchError(
                f"{what}: dataset.label_count=0 names no labels; give the number of label "
                "attributes (negative: labels come first)"
            )
        if label_count is not None and abs(label_count) >= n_attr:
            raise PmlbenchError(
                f"{what}: dataset.label_count={label_count} leaves no features among {n_attr} "
                "attributes; check the number of labels"
            )
        if label_count is not None:
            _check_label_count(
                label_count, meka=meka, beside=beside, attributes=attributes, kinds=kinds, what=what
            )
        count = label_count if label_count is not None else meka
        if count is not None and count != 0 and abs(count) < n_attr:
            label_cols = list(range(n_attr - count, n_attr)) if count > 0 else list(range(-count))
        elif count is None and beside is not None:
            label_cols = beside[1]
        else:
            raise PmlbenchError(
                f"{what}: cannot tell which attributes are labels; give dataset.xml=<Mulan XML> "
                "or dataset.label_count=<number of labels> (negative: labels come first)"
            )
    if any_sparse:
        _refuse_omitted_labels_meaning_one(label_cols, attributes, kinds, what)
    label_set = set(label_cols)
    feature_cols = [j for j in range(n_attr) if j not in label_set and _is_feature_kind(kinds[j])]

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
                    f"{what}: label attribute {attributes[col]!r} has values {kind}; labels must "
                    "be 0/1 (is dataset.label_count right?)"
                ) from None
            finite = np.isfinite(Y[:, j])
            Y[finite, j] = codes[Y[finite, j].astype(int)]
    if np.isnan(Y).any() or not np.isin(Y, (0, 1)).all():
        raise PmlbenchError(
            f"{what}: label attributes hold values other than 0/1 (is dataset.label_count="
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
