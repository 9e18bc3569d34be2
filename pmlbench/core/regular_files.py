"""Reading files that anyone may have put in a store or a run directory: regular files
only, and no more than a size limit.

A store record, a results.csv, a units.json or a report's manifest is read whole. A FIFO
named like one would block its reader forever, a link to ``/dev/zero`` would never end, and
a sparse file of a terabyte would fill the memory first. :func:`read_text` opens a path only
when it is a regular file no larger than its limit, and reads at most that many bytes; every
reader of such files goes through it.

The file is opened without blocking and checked again on the open descriptor, so a FIFO
swapped in between the check and the open is refused too.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

MIB = 1 << 20
# Limits well above anything pmlbench writes (a store record of a suite unit: about 15 KiB;
# a run's results.csv: one row per split and metric), far below what would strain a machine.
RECORD_LIMIT = 64 * MIB  # store records, run.json, units.json
TABLE_LIMIT = 256 * MIB  # results.csv
MANIFEST_LIMIT = 16 * MIB  # a report's list of the files it wrote


class UnreadableFile(OSError):
    """A path that is not read: not a regular file, or larger than the limit. The message
    says which, in a few words that fit after the path ("not a regular file (a FIFO)")."""


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a directory"),
    ):
        if test(mode):
            return name
    return "not a file"


def regular_file_problem(path: str | Path, limit: int | None = None) -> str | None:
    """Why ``path`` is not read (None: it is a regular file within ``limit`` bytes, if
    given, or it does not exist, which the reader reports its own way). Links are
    followed."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return _problem(info, limit)


def _problem(info: os.stat_result, limit: int | None) -> str | None:
    if not stat.S_ISREG(info.st_mode):
        return f"not a regular file ({_kind(info.st_mode)})"
    if limit is not None and info.st_size > limit:
        return f"{_size(info.st_size)}, larger than the {_size(limit)} such a file can hold"
    return None


def _size(n: int) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", MIB), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


def read_bytes(path: str | Path, limit: int) -> bytes:
    """The content of the regular file ``path``, at most ``limit`` bytes.

    Raises:
        FileNotFoundError: (and other OSErrors) the file cannot be opened.
        UnreadableFile: ``path`` is not a regular file (a FIFO, a device, a directory), or
            it holds more than ``limit`` bytes.
    """
    problem = regular_file_problem(path, limit)
    if problem is not None:
        raise UnreadableFile(problem)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags)
    try:
        problem = _problem(os.fstat(fd), limit)  # what was opened, not what was looked at
        if problem is not None:
            raise UnreadableFile(problem)
        chunks, total = [], 0
        while total <= limit:
            chunk = os.read(fd, min(MIB, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    finally:
        os.close(fd)
    if total > limit:  # the file grew while it was read
        raise UnreadableFile(f"larger than the {_size(limit)} such a file can hold")
    return b"".join(chunks)


def read_text(path: str | Path, limit: int, encoding: str = "utf-8") -> str:
    """:func:`read_bytes` decoded (a UnicodeDecodeError, a ValueError, when it is no text)."""
    return read_bytes(path, limit).decode(encoding)
