"""The report's output directory: what a report wrote, so that the next one into the same
``--out`` leaves nothing of it behind.

A report writes a different set of files depending on its options and results (Bayesian
tables only with ``--bayesian``, win/tie/loss tables only with a reference, figures only
with matplotlib). Files of an earlier report that the new one does not write would sit
beside its tables and look like its own. Each report therefore lists what it wrote in
:data:`MANIFEST`; the next report into the directory removes the files of that list it did
not write again. Files the report never wrote (a user's notes) are never touched.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from pmlbench.core.atomic import atomic_write_text
from pmlbench.core.regular_files import MANIFEST_LIMIT, read_text
from pmlbench.errors import PmlbenchError
from pmlbench.runner.format import from_json, to_json

MANIFEST = ".pmlbench_report.json"


def _listed(out: Path) -> list[str]:
    """The relative paths the previous report's manifest lists (none when unreadable)."""
    try:
        data = from_json(read_text(out / MANIFEST, MANIFEST_LIMIT))
    except (OSError, ValueError):  # absent, not a regular file, too large, not JSON
        return []
    files = data.get("files") if isinstance(data, dict) else None
    return [f for f in files if isinstance(f, str)] if isinstance(files, list) else []


def _inside(out: Path, name: str) -> Path | None:
    """``out / name`` when it lies inside ``out`` once every symbolic link on the way is
    resolved (a manifest is a file anyone can edit, and ``out/plots`` may be a link to
    another folder); None otherwise."""
    if not name or os.path.isabs(name) or ".." in Path(name).parts:
        return None
    path = out / name
    try:
        root = out.resolve(strict=True)
        parent = path.parent.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if parent != root and root not in parent.parents:
        return None
    return parent / path.name


def subfolder(out_dir: str | Path, name: str) -> Path:
    """The folder ``out_dir / name`` a report writes into (its figures), created when
    missing. Every file a report writes lies inside ``--out``: a symbolic link there (to
    another folder, whose files the report would overwrite) or a file of that name is
    refused.

    Raises:
        PmlbenchError: ``out_dir / name`` is a link or not a folder (one line, with the fix).
    """
    out = Path(out_dir)
    path = out / name
    if path.is_symlink():
        target = os.readlink(path)
        raise PmlbenchError(
            f"{path} is a symbolic link (to {target}); a report writes only inside --out "
            f"{out}, so it would overwrite that folder's files: remove the link or choose "
            "another --out"
        )
    if path.exists() and not path.is_dir():
        raise PmlbenchError(
            f"{path} is a file, but the report writes its {name} folder there: move the "
            "file away or choose another --out"
        )
    path.mkdir(parents=True, exist_ok=True)
    return path


def replace_previous(out_dir: str | Path, written: Iterable[Path]) -> list[Path]:
    """Remove the files an earlier report listed in ``out_dir`` that this one did not write,
    then list this report's files; returns ``written``."""
    out = Path(out_dir)
    written = list(written)
    names = sorted({os.path.relpath(p, out) for p in written})
    for name in set(_listed(out)) - set(names):
        path = _inside(out, name)
        if path is not None and path.is_file() and not path.is_symlink():
            path.unlink(missing_ok=True)
    atomic_write_text(out / MANIFEST, to_json({"files": names}))
    return written
