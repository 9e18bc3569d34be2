"""Atomic file writes: a reader sees the old file or the complete new one, never a part.

Every file pmlbench writes (run directories, the result store, the shared-work cache,
reports) goes through :func:`atomic_write`: the content is written to a hidden temporary
file beside the destination, flushed to disk and renamed into place, and the directory is
flushed so that the rename itself survives a crash.

Permissions follow the umask, as for any file a program creates: the temporary file is
created with mode 0666 and the kernel applies the process's umask (and a default ACL of the
directory, where there is one), so under umask 022 files are 0644 and colleagues on a shared
file system can read them; under 077 they are 0600. (``tempfile.mkstemp`` would create
0600 files whatever the umask.)

A destination that cannot be written (read-only file system, no permission, disk full,
quota exceeded, a path through a regular file) raises :class:`UnwritablePath`, a one-line
:class:`~pmlbench.errors.PmlbenchError` naming the path; no temporary file is left behind.
"""

from __future__ import annotations

import errno
import os
import secrets
from collections.abc import Callable
from pathlib import Path

from pmlbench.errors import PmlbenchError

# OSErrors that say "this location cannot be written": the user's choice of directory (or
# the state of its disk) is at fault, not pmlbench, so they become one line, not a traceback.
UNWRITABLE = frozenset(
    {
        errno.EROFS,
        errno.EACCES,
        errno.EPERM,
        errno.ENOSPC,
        errno.EDQUOT,
        errno.EFBIG,
        errno.ENOTDIR,
        errno.EISDIR,
        errno.EEXIST,
        errno.ENAMETOOLONG,
    }
)
FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
_ATTEMPTS = 100


class UnwritablePath(PmlbenchError):
    """A file or directory could not be written; the message names the path and the cause.

    Attributes:
        path: the file (or directory) pmlbench tried to write.
        code: the ``errno`` of the underlying OSError.
        key: the config key that chose the location (``results_store``, ...), when known.
    """

    def __init__(self, path: str | Path, code: int, reason: str, key: str | None = None):
        self.path, self.code, self.reason, self.key = Path(path), code, reason, key
        super().__init__(self._message())

    def __reduce__(self) -> tuple:  # pickled across processes (joblib, submitit)
        return (type(self), (self.path, self.code, self.reason, self.key))

    @classmethod
    def from_os_error(cls, path: str | Path, exc: OSError) -> UnwritablePath:
        code = exc.errno or 0
        reason = exc.strerror or errno.errorcode.get(code, str(exc))
        return cls(path, code, reason[:1].lower() + reason[1:])

    @property
    def full(self) -> bool:
        """Whether the disk (or the quota) is full, rather than not writable at all."""
        return self.code in FULL

    def naming(self, key: str) -> UnwritablePath:
        """The same error, its advice naming the config key that chose the location."""
        return UnwritablePath(self.path, self.code, self.reason, key)

    def _message(self) -> str:
        where = f"cannot write {self.path}: {self.reason}"
        if self.key is None:
            advice = "free some space there" if self.full else "choose a writable location"
            return f"{where}; {advice}"
        if self.full:
            return f"{where}; free some space or set {self.key}=<directory on another disk>"
        return f"{where}; set {self.key}=<a directory you can write>"


def is_unwritable(exc: BaseException) -> bool:
    """Whether ``exc`` is an OSError that means the location cannot be written."""
    return isinstance(exc, OSError) and exc.errno in UNWRITABLE


def _create_temporary(directory: Path, name: str) -> Path:
    """A new, empty hidden file beside ``name`` in ``directory``, created with mode 0666 so
    that the umask alone decides its permissions."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(_ATTEMPTS):
        candidate = directory / f".{name}.{secrets.token_hex(4)}.tmp"
        try:
            fd = os.open(candidate, flags, 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return candidate
    raise FileExistsError(errno.EEXIST, "no free temporary file name", str(directory))


def _fsync_directory(directory: Path) -> None:
    """Flush a directory entry (the rename) to disk, where the platform allows it."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return  # e.g. Windows cannot open directories; the rename itself is still atomic
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise  # some file systems cannot fsync a directory; a failing disk can
    finally:
        os.close(fd)


def atomic_write(path: str | Path, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp_path)`` on a temporary file beside ``path``, then rename it into place.

    ``write`` must write into the file at ``tmp_path`` (opening it again is fine; replacing
    it with another file would lose its permissions).

    Raises:
        UnwritablePath: the directory or the file cannot be created or written (read-only
            or full file system, no permission, ...); nothing is left behind.
    """
    path = Path(path)
    tmp_path: Path | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp_path = _create_temporary(path.parent, path.name)
        write(tmp_path)
        with open(tmp_path, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp_path, path)
        tmp_path = None
        _fsync_directory(path.parent)
    except OSError as exc:
        if not is_unwritable(exc):
            raise
        raise UnwritablePath.from_os_error(path, exc) from exc
    finally:
        if tmp_path is not None:
            tmp_path.unlink(missing_ok=True)
    return path


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically (see :func:`atomic_write`)."""

    def write(tmp: Path) -> None:
        tmp.write_text(text, encoding="utf-8")

    return atomic_write(path, write)


def check_writable_directory(directory: str | Path, key: str) -> Path:
    """Create ``directory`` if needed and check that files can be created in it.

    Raises:
        UnwritablePath: naming the directory and ``key``, the config key that chose it.
    """
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        _create_temporary(directory, "pmlbench-write-check").unlink()
    except OSError as exc:
        if not is_unwritable(exc):
            raise
        raise UnwritablePath.from_os_error(directory, exc).naming(key) from exc
    return directory
