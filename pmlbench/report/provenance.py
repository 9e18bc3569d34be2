"""Where a report's results came from: the provenance read from disk.

A results.csv or units.json is described by the ``run.json`` beside it; a result-store
record (finished or failed unit) carries its package versions, CPU, BLAS and git commit
itself and names its run directory, whose ``run.json`` holds the command. :func:`provenance`
counts commands, commits and versions over every source a report read, beside how the
report itself was made (its command, the pmlbench commit and the time). report.html and the
leaderboard show it; nothing else here is read or computed.
"""

from __future__ import annotations

import shlex
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypedDict

from pmlbench import __version__
from pmlbench.core.regular_files import RECORD_LIMIT, read_text
from pmlbench.report.sources import LoadedResults
from pmlbench.runner.format import (
    LIBRARY_SEPARATOR,
    RESULTS_FILE,
    RUN_RECORD_FILE,
    UNITS_FILE,
    from_json,
)
from pmlbench.runner.outputs import git_commit, package_versions

NOT_RECORDED = "not recorded"


class Provenance(TypedDict):
    """The provenance of a report, JSON-ready (report.html embeds it as it is)."""

    generated: str  # when the report was made, to the minute, local time zone
    report_command: str  # the report's own command line (display_command)
    report_commit: str  # pmlbench's git commit when the report was made, or NOT_RECORDED
    sources: int  # result sources read: store records, results.csv, units.json, run dirs
    inputs: list[str]  # the paths given to the report
    commands: list[list[Any]]  # [command line, sources], most common first
    commits: list[list[Any]]  # [git commit, sources], most common first
    versions: list[list[str]]  # [package, recorded version(s), version now]


def display_command(argv: Sequence[str] | None) -> str:
    """A command line as the user typed it: ``python -m pmlbench ...``, ``pmlbench ...``."""
    if not argv:
        return NOT_RECORDED
    program = Path(str(argv[0]))
    if program.name == "__main__.py":
        head = f"python -m {program.parent.name}"
    else:
        head = program.name
    return " ".join([head, shlex.join(str(a) for a in argv[1:])]).strip()


def _read_json(path: Path) -> dict[str, Any] | None:
    """A run or store record; None when absent, damaged, not a regular file (a FIFO named
    like one would block the report) or larger than any record."""
    try:
        data = from_json(read_text(path, RECORD_LIMIT))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _run_info(source: Path, run_records: dict[Path, dict[str, Any] | None]) -> dict[str, Any]:
    """Versions, git commit and command of the run behind one result source.

    A results.csv or units.json is described by the run.json beside it (a run directory by
    its own); a store record (finished or failed unit) carries versions and commit itself
    and names its run directory, whose run.json holds the command.
    """

    def run_json(run_dir: Path) -> dict[str, Any]:
        if run_dir not in run_records:
            run_records[run_dir] = _read_json(run_dir / RUN_RECORD_FILE)
        return run_records[run_dir] or {}

    if source.is_dir() or source.name in (RESULTS_FILE, UNITS_FILE):
        record = run_json(source if source.is_dir() else source.parent)
        return {
            "versions": record.get("versions") or {},
            "git_commit": record.get("git_commit"),
            "command": record.get("command"),
        }
    record = _read_json(source) or {}
    run = record.get("run") or {}
    command = record.get("command") or run.get("command")
    if command is None and run.get("run_dir"):
        command = run_json(Path(run["run_dir"])).get("command")
    return {
        "versions": run.get("versions") or record.get("versions") or {},
        "git_commit": run.get("git_commit", record.get("git_commit")),
        "command": command,
    }


# Entries that list several libraries (pmlbench.runner.format.LIBRARY_SEPARATOR): sorted
# where they are recorded, but archived records list them in the order a process loaded
# them, which varies between processes of the same code.
LIBRARY_LISTS = frozenset({"blas"})


def _in_one_order(package: Any, version: Any) -> str:
    """``version`` as text; a list of libraries sorted, so one set reads one way."""
    if str(package) in LIBRARY_LISTS and isinstance(version, str):
        return LIBRARY_SEPARATOR.join(sorted(version.split(LIBRARY_SEPARATOR)))
    return str(version)


def provenance(loaded: LoadedResults, command: Sequence[str] | None = None) -> Provenance:
    """Where the results came from (versions, commits, command lines, from the run records
    and store records of every result file read) and how this report was made.

    Args:
        loaded: the results the report read (their ``source`` column, failures and
            incomplete runs name the files whose records are read).
        command: the command line that made the report (default: ``sys.argv``).
    """
    found = list(loaded.records["source"].astype(str)) if "source" in loaded.records else []
    found += [str(p) for p in loaded.failures.get("path", [])]
    found += [str(p) for p in loaded.incomplete]
    sources = [Path(s) for s in dict.fromkeys(found)]
    run_records: dict[Path, dict[str, Any] | None] = {}
    commands: Counter[str] = Counter()
    commits: Counter[str] = Counter()
    versions: dict[str, Counter[str]] = {}
    for source in sources:
        info = _run_info(source, run_records)
        commands[display_command(info["command"]) if info["command"] else NOT_RECORDED] += 1
        commits[str(info["git_commit"] or NOT_RECORDED)] += 1
        for package, version in (info["versions"] or {}).items():
            versions.setdefault(str(package), Counter())[_in_one_order(package, version)] += 1
    now = {p: _in_one_order(p, v) for p, v in package_versions().items()}
    now.setdefault("pmlbench", __version__)
    packages = list(dict.fromkeys([*versions, *now]))
    return {
        "generated": time.strftime("%Y-%m-%d %H:%M %Z").strip(),
        "report_command": display_command(list(command) if command is not None else sys.argv),
        "report_commit": git_commit() or NOT_RECORDED,
        "sources": len(sources),
        "inputs": [str(f) for f in loaded.files],
        "commands": [[c, n] for c, n in commands.most_common()],
        "commits": [[c, n] for c, n in commits.most_common()],
        "versions": [
            [
                package,
                ", ".join(
                    v if len(versions[package]) == 1 else f"{v} ({n})"
                    for v, n in versions[package].most_common()
                )
                if package in versions
                else "–",
                now.get(package, "–"),
            ]
            for package in packages
        ],
    }
