"""Counts about docs/leaderboard-results.tar.xz (the suite's result store), read from it.

The pages quote them through MyST substitutions (:mod:`.archive_counts`), so a new archive
changes every page that states them when the site is built.
"""

from __future__ import annotations

import tarfile
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
ARCHIVE = ROOT / "docs" / "leaderboard-results.tar.xz"


def counts(path: Path = ARCHIVE) -> dict[str, Any]:
    """Units by status, the methods, the lines of declined units and the size (the archive
    may hold part of a dataset the suite has not finished: nothing here assumes whole jobs)."""
    from pmlbench.runner.format import STORE_NOT_APPLICABLE_SUFFIX, from_json

    statuses: Counter[str] = Counter()
    declined_lines: set[tuple[str, str]] = set()
    per_method: Counter[str] = Counter()
    with tarfile.open(path, "r:xz") as tar:
        for member in tar.getmembers():
            handle = tar.extractfile(member) if member.isfile() else None
            if handle is None:
                continue
            record = from_json(handle.read().decode("utf-8"))
            unit = record["unit"]
            method, dataset = unit["method"]["name"], unit["dataset"]["name"]
            statuses[str(record["status"])] += 1
            per_method[method] += 1
            if member.name.endswith(STORE_NOT_APPLICABLE_SUFFIX):
                declined_lines.add((method, dataset))
    units = sum(statuses.values())
    return {
        "units": units,
        "statuses": dict(statuses),
        "methods": len(per_method),
        "declined_lines": len(declined_lines),
        "bytes": path.stat().st_size,
    }
