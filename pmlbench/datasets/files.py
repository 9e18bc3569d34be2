"""The ``file`` dataset plugin: a user's own data file (npz, Mulan/MEKA ARFF or MATLAB .mat).

Every problem with the file is refused here, before any split is drawn, with one line that
names the ``dataset.*`` key to change.
"""

from __future__ import annotations

from pathlib import Path

from pmlbench.core.regular_files import regular_file_problem
from pmlbench.core.safe_text import has_hidden, visible
from pmlbench.datasets.arff import load_arff
from pmlbench.datasets.dataset import Dataset
from pmlbench.datasets.matlab import load_mat
from pmlbench.datasets.npz import check_data_file, load_npz
from pmlbench.errors import PmlbenchError

FORMATS = ("auto", "npz", "arff", "mat")


def load_file(
    path: str = "???",
    format: str = "auto",
    xml: str | None = None,
    label_count: int | None = None,
    display_name: str | None = None,
) -> Dataset:
    """A dataset from your own file: npz (pmlbench layout), Mulan/MEKA ARFF or MATLAB .mat.

    Args:
        path: the data file.
        format: one of "auto" (by extension), "npz", "arff", "mat".
        xml: Mulan XML label file (ARFF only).
        label_count: number of label attributes (ARFF only; negative = labels come first).
        display_name: name used in results (default: the file's stem).
    """
    if path in (None, "", "???"):
        raise PmlbenchError("dataset=file needs a path: add dataset.path=/path/to/data.arff")
    p = Path(path).expanduser()
    if format not in FORMATS:
        raise PmlbenchError(f"unknown dataset.format {format!r}; use one of {list(FORMATS)}")
    fmt = p.suffix.lstrip(".").lower() if format == "auto" else format
    if fmt not in FORMATS[1:]:
        raise PmlbenchError(
            f"cannot tell the format of {p} from its extension; set dataset.format to npz, arff "
            "or mat"
        )
    what = f"dataset.path={path}"
    for key, named in (("dataset.path", path), ("dataset.xml", xml)):
        problem = None if named is None else regular_file_problem(Path(named).expanduser())
        if problem is not None:
            raise PmlbenchError(f"{key}={named} is {problem}; give the path of a data file")
    if display_name is not None and (not str(display_name).strip() or has_hidden(display_name)):
        raise PmlbenchError(
            f"dataset.display_name={visible(str(display_name))!r} is empty or holds control, "
            "format or bidirectional characters, which would act in terminals and files "
            "instead of being shown; give the dataset a plain name"
        )
    check_data_file(p, what)
    if fmt != "arff" and (xml is not None or label_count is not None):
        given = "dataset.xml" if xml is not None else "dataset.label_count"
        raise PmlbenchError(
            f"{given} applies to ARFF files only, but {what} is read as {fmt}; drop {given}"
        )
    if fmt == "npz":
        return load_npz(p, name=display_name, what=what)
    if fmt == "arff":
        return load_arff(p, xml=xml, label_count=label_count, name=display_name, what=what)
    return load_mat(p, name=display_name, what=what)
