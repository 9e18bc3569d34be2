"""``external``: a method run as an external program that talks through files.

Much PML code is written in MATLAB or Octave and trains and tests in one call. This adapter
lets such a program join a benchmark unchanged apart from a thin wrapper that reads and
writes three files:

- ``{train}``: ``X`` (n x d features; sparse stays sparse in .mat), ``Y`` (n x l candidate
  labels, 0/1, instances x labels), ``seed`` (the split's random state, -1 if none) and one
  scalar ``param_<name>`` per entry of ``method.params``;
- ``{test}``: ``X`` (m x d test features);
- ``{out}``, written by the program: ``scores`` (m x l real numbers, higher = more relevant)
  and optionally ``labels`` (m x l, 0/1 or -1/+1). Without ``labels`` the adapter predicts
  ``scores >= threshold``. An l x m output (MATLAB's labels x instances habit) is transposed
  when the orientation is unambiguous (l != m).

Files are .npz (numpy) or .mat (MATLAB v5, scipy.io) by ``file_format``. The program runs
once per test matrix, at ``decision_function`` time, because it trains and tests together:
its training time is therefore part of the predict time and is also recorded as
``fit_seconds`` in the fit diagnostics.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.io
import scipy.sparse as sp
from sklearn.base import BaseEstimator

from pmlbench.core.checks import check_features, check_label_matrix
from pmlbench.core.digest import content_digest
from pmlbench.core.parameters import Dict, Options, Type, ValidatedParameters, validate_parameters
from pmlbench.core.regular_files import regular_file_problem
from pmlbench.core.safe_text import visible
from pmlbench.errors import PluginError, PmlbenchError
from pmlbench.methods._constraints import POSITIVE, REAL, SEED

FORMATS = ("npz", "mat")
RESERVED = ("train", "test", "out", "workdir", "python")
_STDERR_LINES = 12


@dataclass(frozen=True)
class ExternalSpec:
    """How to call the external program: everything the adapter needs, as plain data."""

    command: str
    file_format: str = "npz"
    timeout: float = 600.0
    threshold: float = 0.5
    params: dict[str, Any] = field(default_factory=dict)
    workdir: str | None = None


def render_command(command: str, values: dict[str, Any]) -> list[str]:
    """Split ``command`` like a shell would, then fill ``{placeholders}`` token by token."""
    if not command or command == "???":
        raise PmlbenchError(
            "the external method needs a command; set method.command='prog {train} {test} {out}'"
        )
    try:
        tokens = shlex.split(command)
        return [token.format(**values) for token in tokens]
    except KeyError as exc:
        raise PmlbenchError(
            f"unknown placeholder {{{exc.args[0]}}} in method.command; known: "
            f"{', '.join('{' + k + '}' for k in values)} (write {{{{ and }}}} for literal braces)"
        ) from None
    except (ValueError, IndexError) as exc:
        raise PmlbenchError(f"method.command {command!r} cannot be parsed ({exc})") from None


SHELLS = frozenset(
    {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "fish", "csh", "tcsh"}
)
# Programs that run the rest of their arguments as a command: (name, options taking a value,
# how many leading operands they consume before the command).
WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "env": (frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}), 0),
    "exec": (frozenset({"-a"}), 0),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "nohup": (frozenset(), 0),
    "command": (frozenset(), 0),
    "setsid": (frozenset(), 0),
    "time": (frozenset({"-f", "--format", "-o", "--output"}), 0),
    "stdbuf": (frozenset({"-i", "-o", "-e"}), 0),
    "ionice": (frozenset({"-c", "--class", "-n", "--classdata", "-t"}), 0),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),
    "xargs": (frozenset({"-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s"}), 0),
}
# Environment variables naming a file a shell runs before its script (bash, POSIX sh).
STARTUP_VARIABLES = ("BASH_ENV", "ENV")
# Wrapper options that change what runs where: the key could not follow them.
_UNFOLLOWABLE = {"env": ("-C", "--chdir", "-S", "--split-string"), "xargs": ("",)}


def _unwrap(argv: list[str]) -> list[str]:
    """``argv`` without its leading wrappers (``env VAR=1``, ``exec``, ``nice -n 5``,
    ``timeout 60`` ...): the program that really runs, and its arguments.

    Raises:
        PmlbenchError: a wrapper option that changes the directory or re-splits the command
            (``env -C``, ``env -S``, ``xargs``), which the key cannot follow.
    """
    while argv:
        name = Path(argv[0]).name
        if name not in WRAPPERS:
            return argv
        takes_value, operands = WRAPPERS[name]
        rest = argv[1:]
        while rest and rest[0].startswith("-") and rest[0] != "-":
            option = rest.pop(0)
            if option == "--":
                break
            flag = option.split("=", 1)[0]
            bad = _UNFOLLOWABLE.get(name, ())
            if (
                any(flag == b or (b and flag.startswith(b)) for b in bad)
                or (
                    not flag.startswith("--")  # a cluster of short options: env -iC sub
                    and any(f"-{c}" in bad for c in flag[1:])
                )
            ):
                _refuse(f"runs its program through '{name} {flag}'")
            last = flag if flag.startswith("--") else f"-{flag[-1]}"
            if (flag in takes_value or last in takes_value) and "=" not in option and rest:
                rest.pop(0)
        if name in _UNFOLLOWABLE and "" in _UNFOLLOWABLE[name]:
            _refuse(f"runs its program through {name}")
        if name == "env":
            while rest and "=" in rest[0] and not rest[0].startswith("="):
                variable = rest.pop(0).split("=", 1)[0]
                if variable in STARTUP_VARIABLES:
                    _refuse(f"sets {variable}, a file the shell runs before its script")
        argv = rest[operands:]
    return argv


# Shell options naming a file the shell runs before its script.
STARTUP_OPTIONS = ("--rcfile", "--init-file")


def _shell_script(argv: list[str]) -> str | None:
    """The script a shell runs from its command line (``sh -c``, ``bash -ec``, ``zsh -o x
    -c``), None when ``argv`` does not start a shell with one.

    Raises:
        PmlbenchError: a shell started without ``-c`` and without a script file, which
            reads its commands from standard input, where the key cannot see them.
    """
    if not argv or Path(argv[0]).name not in SHELLS:
        return None
    rest, script_mode = argv[1:], False
    while rest and rest[0][:1] in "-+" and len(rest[0]) > 1 and rest[0] != "--":
        option = rest.pop(0)
        if option.split("=", 1)[0] in STARTUP_OPTIONS:
            _refuse(f"starts a shell with '{option}', a file it runs first")
        if option.startswith("--"):
            continue
        if "c" in option[1:] and option[0] == "-":
            script_mode = True
        if option[-1] in "oO" and rest:  # -o / +o / -O / +O take an option name
            rest.pop(0)
    if rest and rest[0] == "--":
        rest.pop(0)
    if script_mode:
        return rest[0] if rest else ""
    short = "".join(a[1:] for a in argv[1:] if a.startswith("-") and not a.startswith("--"))
    if not rest or "s" in short:
        _refuse("starts a shell that reads its commands from standard input")
    return None


def _refuse(problem: str) -> None:
    raise PmlbenchError(
        f"method.command {problem}, so the files it names cannot be covered by the result "
        "key and an edit of them would reuse stale results; name the files by their paths "
        "(relative to the working directory or method.workdir, where 'cd {workdir}' is fine) "
        "or call the program directly"
    )


# words that change the directory the rest runs in, and commands that run text the key
# cannot read (a string, an alias, a sourced file)
_CHANGE_DIRECTORY = ("cd", "pushd", "popd", "chdir")
_RUN_TEXT = ("eval", "alias", "source", ".")
_OPERATORS = (";", "&&", "||", "|", "&", "(", ")", "{", "}")


def check_shell_script(command: str, depth: int = 3, workdir: str | None = None) -> None:
    """Refuse a command whose files the result key cannot follow.

    A unit's key covers the files named by the words of ``method.command``, of a shell
    script inside it too, looked up in the working directory and in ``method.workdir``
    (pmlbench.runner.units). One rule for every shell form: the program is found behind any
    wrappers (``env``, ``exec``, ``nice``, ``timeout`` ...), and a shell's script (``-c`` in
    any flag cluster: ``sh -ec``, ``bash -xc``) is read, its own commands checked the same
    way; a shell anywhere else (behind a program the key does not know: ``taskset -c 0 sh
    -c ...``) is refused, and every word that is itself a command line (``script -c '...'``,
    ``octave --eval '...'``) is checked for what follows. Behind a ``cd`` to another
    directory, a word built by the shell at run time (``$VAR``, ``$(...)``, backquotes, a
    glob such as ``su*/prog.py``), text run as commands (``eval``, ``alias``, ``source``,
    ``.``), a shell startup file (``--rcfile``, ``BASH_ENV``), a wrapper that changes
    directory, or a shell reading standard input, a file edit would reuse stale numbers, so
    such a command is refused. A script *file* run by a shell (``sh run.sh``, or ``./run.sh``
    starting with ``#!/bin/sh``) is followed too: its content is checked the same way (its
    positional parameters ``$1``, ``"$@"`` ... allowed), and as the key covers the file but
    not the files it names, a script naming another existing file is refused.

    Args:
        command: ``method.command``.
        depth: how many nested command lines are followed.
        workdir: ``method.workdir``, where relative paths are also looked up.

    Raises:
        PmlbenchError: (one line) naming the construct and the fix.
    """
    try:
        argv = shlex.split(command)
    except ValueError:
        return  # render_command reports it
    program = _unwrap(argv)
    script = _shell_script(program)
    if script is not None:
        _check_commands(script, depth, shell=True, workdir=workdir)
        return
    script_file = _script_file(program, _folders(workdir))
    if script_file is not None:
        _check_script_file(script_file, depth, workdir)
        return
    for word in program[1:]:
        if Path(word).name in SHELLS:
            _refuse(
                f"runs a shell ({Path(word).name}) behind {Path(program[0]).name!r}, a program "
                "the key cannot see through"
            )
    for word in program[1:]:
        if any(c.isspace() for c in word) and depth > 0:
            _check_commands(word, depth, shell=False, workdir=workdir)


def _without_comments(script: str) -> str:
    """``script`` without its comments: a ``#`` starting a word outside quotes, up to the end
    of its line (the newline stays: it ends a command)."""
    kept: list[str] = []
    quote, escaped, comment = "", False, False
    for i, char in enumerate(script):
        if comment:
            comment = char != "\n"
            if comment:
                continue
        elif escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or script[i - 1].isspace() or script[i - 1] in ";&|()"):
            comment = True
            continue
        kept.append(char)
    return "".join(kept)


def _script_words(script: str, *, comments: bool = False) -> list[str]:
    """The words and operators of a shell script (none when its quotes do not balance);
    with ``comments`` (a script file), its comments are left out."""
    if comments:
        script = _without_comments(script)
    try:
        # a newline ends a command as ";" does (shlex reads it as a space)
        lexer = shlex.shlex(script.replace("\n", " ; "), posix=True, punctuation_chars=True)
        lexer.whitespace_split, lexer.commenters = True, ""
        return list(lexer)
    except ValueError:
        return []


def _check_commands(
    script: str, depth: int, *, shell: bool, workdir: str | None = None, comments: bool = False
) -> None:
    """Check a command line inside ``method.command``: a shell's script (``shell``), or a
    word of another program that reads as one."""
    if comments:
        script = _without_comments(script)
    if shell and any(c in script for c in "$`"):
        _refuse("runs a shell script that builds words at run time ($VAR, $(...) or backquotes)")
    words = _script_words(script)
    for word, target in zip(words, [*words[1:], ""][: len(words)], strict=True):
        if word in _CHANGE_DIRECTORY and target != "{workdir}":
            _refuse(f"runs a shell script that changes directory ({word} {target})")
        if shell and _is_glob(word):
            _refuse(f"runs a shell script whose word {word!r} matches file names at run time")
    commands: list[list[str]] = [[]]
    for word in words:
        if word in _OPERATORS:
            commands.append([])
        else:
            commands[-1].append(word)
    for simple in commands:
        words_run = [w for w in simple if not _is_assignment(w)]
        if words_run and words_run[0] in _RUN_TEXT:
            _refuse(f"runs a shell script that runs text as commands ({words_run[0]})")
        if simple and depth > 0:
            check_shell_script(shlex.join(simple), depth - 1, workdir)


# A script file larger than this is no wrapper script: refused rather than read.
_SCRIPT_LIMIT = 1 << 20
# a script's own arguments: $1, ${2}, "$@", $*, $# (the values pmlbench passes it)
_POSITIONAL = re.compile(r"\$(\d|\{\d+\}|@|\*|#|\{[@*#]\})")
# Folders of the system's own programs and libraries: a script naming /usr/bin/python3 names
# an interpreter, not a file of the method.
_SYSTEM_FOLDERS = tuple(
    dict.fromkeys(
        Path(p).resolve()
        for p in ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", sys.base_prefix, sys.prefix)
    )
)


def _folders(workdir: str | None) -> list[Path]:
    """Where a relative path of the command is looked up: the working directory, then
    ``method.workdir`` (as pmlbench.runner.units does for the key)."""
    return [Path("."), *([Path(workdir).expanduser()] if workdir else [])]


def _existing_file(word: str, folders: list[Path]) -> Path | None:
    try:
        path = Path(word).expanduser()
        for candidate in [path] if path.is_absolute() else [f / path for f in folders]:
            if candidate.is_file():
                return candidate
    except (OSError, ValueError):  # not a path (a NUL byte, too long)
        pass
    return None


def _script_file(program: list[str], folders: list[Path]) -> Path | None:
    """The script file ``program`` has a shell run (``sh run.sh``, or ``./run.sh`` whose
    ``#!`` line names a shell); None when it runs none, or the file does not exist (the
    program then fails by itself)."""
    if not program:
        return None
    if Path(program[0]).name in SHELLS:
        operands = [w for w in program[1:] if not w.startswith(("-", "+"))]
        return _existing_file(operands[0], folders) if operands else None
    found = _existing_file(program[0], folders)
    if found is None:
        return None
    try:
        with open(found, "rb") as file:
            first = file.read(256).split(b"\n", 1)[0]
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode("utf-8", "replace").split()
    if words and Path(words[0]).name == "env":
        words = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
    return found if words and Path(words[0]).name in SHELLS else None


def _check_script_file(path: Path, depth: int, workdir: str | None) -> None:
    """Follow a script file a shell runs: its commands are checked as a ``-c`` script's
    are, and a word naming another existing file (outside the system's folders) is refused,
    because the key covers the script's bytes, not the files it names."""
    problem = regular_file_problem(path, _SCRIPT_LIMIT)
    try:
        text = None if problem else path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        problem = str(exc)
        text = None
    if text is None:
        _refuse(f"has a shell run the script file {path}, which cannot be read ({problem})")
        return
    script = _POSITIONAL.sub("", "\n".join(text.splitlines()[text.startswith("#!") :]))
    try:
        _check_commands(script, depth, shell=True, workdir=workdir, comments=True)
    except PmlbenchError as error:
        raise PmlbenchError(f"in the script file {path}, {error}") from None
    own = path.resolve()
    folders = [path.parent, *_folders(workdir)]
    for word in _script_words(script, comments=True):
        named = _existing_file(word, folders)
        if named is None or named.resolve() == own:
            continue
        resolved = named.resolve()
        if any(resolved.is_relative_to(system) for system in _SYSTEM_FOLDERS):
            continue
        _refuse(
            f"has a shell run the script file {path}, which names {visible(word)!r} (the key "
            "covers the script itself, not what it names)"
        )


def _is_assignment(word: str) -> bool:
    name, equals, _ = word.partition("=")
    return bool(equals) and name.isidentifier()


def _is_glob(word: str) -> bool:
    """Whether a shell would expand ``word`` into file names (``*``, ``?``, ``[...]``);
    the test commands ``[`` and ``[[`` are no globs."""
    if word in ("[", "]", "[[", "]]"):
        return False
    return "*" in word or "?" in word or ("[" in word and "]" in word[word.index("[") + 1 :])


def write_arrays(path: Path, arrays: dict[str, Any], file_format: str) -> None:
    """Write named arrays as .npz (dense) or .mat (MATLAB v5; sparse matrices stay sparse)."""
    if file_format == "npz":
        dense = {k: (v.toarray() if sp.issparse(v) else np.asarray(v)) for k, v in arrays.items()}
        np.savez(path, **dense)  # type: ignore[arg-type]  # numpy's stub: **kwds vs allow_pickle
    else:
        scipy.io.savemat(path, arrays, do_compression=False, oned_as="column")


def read_arrays(path: Path, file_format: str) -> dict[str, np.ndarray]:
    """Read the program's output file into plain dense arrays."""
    try:
        if file_format == "npz":
            with np.load(path, allow_pickle=False) as data:
                return {k: np.asarray(data[k]) for k in data.files}
        contents = scipy.io.loadmat(path)
    except (
        OSError,
        ValueError,
        NotImplementedError,
        TypeError,
        EOFError,
        zipfile.BadZipFile,
        scipy.io.matlab.MatReadError,
    ) as exc:
        raise PmlbenchError(
            f"the external program's output {path.name} is unreadable ({exc})"
        ) from None
    return {
        k: (v.toarray() if sp.issparse(v) else np.asarray(v))
        for k, v in contents.items()
        if not k.startswith("__")
    }


def _orient(name: str, values: np.ndarray, shape: tuple[int, int], program: str) -> np.ndarray:
    values = np.asarray(values)
    if values.shape == shape:
        return values
    if values.ndim == 2 and values.shape == shape[::-1] and shape[0] != shape[1]:
        return values.T
    if values.ndim == 1 and shape[1] == 1 and values.shape[0] == shape[0]:
        return values[:, None]
    raise PluginError(
        f"external program {program!r} wrote {name!r} of shape {values.shape}; expected "
        f"{shape} (test instances x labels)"
    )


def _stderr_tail(stderr: str) -> str:
    """The program's last stderr lines on one line, control characters escaped: the text
    goes to the terminal, the store and the report, where an escape sequence must not act."""
    lines = [line for line in (stderr or "").strip().splitlines() if line.strip()]
    tail = visible(" | ".join(lines[-_STDERR_LINES:]))
    return tail[-1500:] if tail else "(no stderr output)"


class ExternalCommand(ValidatedParameters, BaseEstimator):
    """Run an external program (MATLAB/Octave, R, a binary) that trains and tests via files.

    Args:
        command: the command line, with placeholders {train}, {test}, {out} (file paths),
            {workdir}, {python} (this interpreter) and any key of ``params``, e.g.
            ``"octave-cli --no-gui my_method.m {train} {test} {out}"``.
        file_format: ``npz`` or ``mat``.
        timeout: seconds (> 0) before the program is stopped and the run fails.
        threshold: predicted labels are ``scores >= threshold`` when the program writes none.
        params: hyper-parameters handed to the program (``param_<name>`` in the train file and
            ``{name}`` in the command); the placeholder names above are reserved.
        workdir: the program's working directory (``{workdir}``); the exchange files of each
            call are written to a fresh subdirectory ``exchange-*`` of it, so that parallel
            jobs never read each other's files; after a successful call the train, test and
            out files are removed, after a failed one kept (default: a temporary directory
            for both).
        random_state: the split's seed, an integer in [0, 2**32), written to the train file
            as ``seed`` (-1 when None).

    A subclass that wraps one program overrides :meth:`external_spec`; ``fit`` checks its
    constructor parameters against ``parameter_constraints`` (inherited unless it declares
    its own) and the spec it builds against the constraints below.
    """

    default_bipartition = {"rule": "method"}
    parameter_constraints = {
        "command": [Type(str)],
        "file_format": [Options(FORMATS)],
        "timeout": POSITIVE,
        "threshold": REAL,
        "params": [None, Dict(RESERVED)],
        "workdir": [None, Type(str)],
        "random_state": SEED,
    }

    def __init__(
        self,
        command: str,
        file_format: str = "npz",
        timeout: float = 600.0,
        threshold: float = 0.5,
        params: dict | None = None,
        workdir: str | None = None,
        random_state: int | None = None,
    ):
        self.command = command
        self.file_format = file_format
        self.timeout = timeout
        self.threshold = threshold
        self.params = params
        self.workdir = workdir
        self.random_state = random_state

    def external_spec(self) -> ExternalSpec:
        """The call description; a subclass wrapping one program overrides this."""
        return ExternalSpec(
            self.command,
            self.file_format,
            float(self.timeout),
            float(self.threshold),
            dict(self.params or {}),
            self.workdir,
        )

    def fit(self, X, Y) -> ExternalCommand:
        """Keep the training data; the program itself runs once test features are known."""
        self._validate_params()
        spec = self.external_spec()
        # a subclass builds the spec from parameters of its own: check what the program gets
        validate_parameters(dataclasses.asdict(spec), ExternalCommand.parameter_constraints)
        render_command(spec.command, self._values(spec, Path(".")))  # fail before any split work
        check_shell_script(spec.command, workdir=spec.workdir)
        self.X_train_ = check_features(X)
        self.Y_train_ = check_label_matrix(
            Y, what="candidate labels", n_rows=self.X_train_.shape[0]
        )
        self._cache: tuple[str, np.ndarray, np.ndarray] | None = None
        self.diagnostics_: dict[str, Any] = {}
        return self

    def _values(
        self, spec: ExternalSpec, folder: Path, workdir: Path | None = None
    ) -> dict[str, Any]:
        suffix = f".{spec.file_format}"
        return {
            **spec.params,
            "train": str(folder / f"train{suffix}"),
            "test": str(folder / f"test{suffix}"),
            "out": str(folder / f"out{suffix}"),
            "workdir": str(folder if workdir is None else workdir),
            "python": sys.executable,
        }

    def _run(self, X) -> tuple[np.ndarray, np.ndarray]:
        spec = self.external_spec()
        X = check_features(X)
        key = content_digest(X)
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1], self._cache[2]
        with tempfile.TemporaryDirectory(prefix="pmlbench-external-") as tmp:
            folder = cwd = Path(tmp)
            if spec.workdir:
                # parallel jobs share a workdir: each call exchanges its files in a fresh
                # directory of its own there, never under shared names (its files are kept
                # for debugging when the call fails)
                cwd = Path(spec.workdir).expanduser().resolve()  # the program runs there
                cwd.mkdir(parents=True, exist_ok=True)
                folder = Path(tempfile.mkdtemp(prefix="exchange-", dir=cwd))
            values = self._values(spec, folder, cwd)
            argv = render_command(spec.command, values)
            random_state = getattr(self, "random_state", None)
            seed = -1 if random_state is None else int(random_state)
            params = {f"param_{k}": v for k, v in spec.params.items()}
            write_arrays(
                Path(values["train"]),
                {"X": self.X_train_, "Y": self.Y_train_, "seed": seed, **params},
                spec.file_format,
            )
            write_arrays(Path(values["test"]), {"X": X}, spec.file_format)
            out = Path(values["out"])
            out.unlink(missing_ok=True)
            seconds = _execute(argv, cwd, spec.timeout)
            scores, labels = self._read_output(
                out, spec, (X.shape[0], self.Y_train_.shape[1]), argv[0]
            )
            if spec.workdir:
                # the data copies and the scores (now read) would pile up call after call;
                # what the program wrote besides is kept
                for name in ("train", "test", "out"):
                    Path(values[name]).unlink(missing_ok=True)
        # the program fits and predicts in one run: its time is this method's fit time
        self.diagnostics_ = {"fit_seconds": seconds, "external_command": " ".join(argv[:1])}
        self._cache = (key, scores, labels)
        return scores, labels

    def _read_output(
        self, out: Path, spec: ExternalSpec, shape: tuple[int, int], program: str
    ) -> tuple[np.ndarray, np.ndarray]:
        if not out.is_file():
            raise PluginError(
                f"external program {program!r} exited normally but wrote no {out.name}; it must "
                f"save 'scores' (and optionally 'labels') to the {{out}} path"
            )
        arrays = read_arrays(out, spec.file_format)
        if "scores" not in arrays:
            raise PluginError(
                f"external program {program!r} wrote {out.name} without 'scores' "
                f"(found {sorted(arrays) or 'nothing'})"
            )
        if np.iscomplexobj(arrays["scores"]):
            raise PluginError(
                f"external program {program!r} wrote complex scores; scores must be real "
                "numbers (write their real part or magnitude)"
            )
        if np.asarray(arrays["scores"]).dtype.kind in "OUSV":
            # text or objects would be parsed (or not) by numpy's rules: no scores
            raise PluginError(f"external program {program!r} wrote non-numeric scores")
        try:
            scores = _orient("scores", arrays["scores"], shape, program).astype(np.float64)
        except (TypeError, ValueError):
            raise PluginError(f"external program {program!r} wrote non-numeric scores") from None
        if not np.all(np.isfinite(scores)):
            raise PluginError(f"external program {program!r} wrote NaN or infinite scores")
        if "labels" in arrays:
            if np.iscomplexobj(arrays["labels"]):
                raise PluginError(f"external program {program!r} wrote complex labels")
            labels = _orient("labels", arrays["labels"], shape, program)
            if labels.size and set(np.unique(labels).tolist()) <= {-1, 1} and -1 in labels:
                labels = labels == 1  # MATLAB PML code often writes -1/+1
            try:
                labels = check_label_matrix(labels, what=f"labels written by {program!r}")
            except PmlbenchError as exc:
                raise PluginError(str(exc)) from None
        else:
            labels = (scores >= spec.threshold).astype(np.uint8)
        return scores, labels

    def decision_function(self, X) -> np.ndarray:
        """Scores the external program wrote for ``X`` (m x l)."""
        return self._run(X)[0]

    def predict(self, X) -> np.ndarray:
        """Labels the program wrote for ``X``, else ``scores >= threshold``."""
        return self._run(X)[1]


def _execute(argv: list[str], folder: Path, timeout: float) -> float:
    """Run the program; every way it can fail becomes a one-line PluginError.

    No shell is involved: ``argv`` is executed directly. The program starts in a session
    (and process group) of its own, so that a timeout, or an interrupt of pmlbench, stops
    every process it started (``sh -c "sleep 47; ..."``'s ``sleep`` included), not only the
    direct child: :func:`_stop_group` sends SIGTERM to the group, then SIGKILL after
    ``_GRACE_SECONDS``.
    """
    start = time.perf_counter()
    try:
        process = subprocess.Popen(
            argv,
            cwd=folder,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
    except FileNotFoundError:
        raise PluginError(
            f"external program {argv[0]!r} not found; install it or give its full path in "
            "method.command"
        ) from None
    except PermissionError:
        raise PluginError(
            f"external program {argv[0]!r} is not executable (chmod +x it, or "
            "call it through its interpreter in method.command)"
        ) from None
    try:
        _, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop_group(process)
        raise PluginError(
            f"external program {argv[0]!r} did not finish within {timeout:g} s "
            "and was stopped; raise method.timeout"
        ) from None
    except BaseException:  # KeyboardInterrupt, a unit timeout's signal, ...: leave nothing
        _stop_group(process)
        raise
    if process.returncode != 0:
        raise PluginError(
            f"external program {argv[0]!r} failed with exit status {process.returncode}; "
            f"stderr: {_stderr_tail(stderr)}"
        )
    return time.perf_counter() - start


_GRACE_SECONDS = 5.0


def _signal_group(group: int, signal_number: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal_number)


def _stop_group(process: subprocess.Popen) -> None:
    """Stop the program's whole process group: SIGTERM, then SIGKILL for what is left after
    ``_GRACE_SECONDS``; then reap the program and close its pipes."""
    group = process.pid  # the leader of its own session: its pid is the group's id
    _signal_group(group, signal.SIGTERM)
    deadline = time.monotonic() + _GRACE_SECONDS
    while time.monotonic() < deadline and _group_alive(group):
        time.sleep(0.05)
        process.poll()  # reap the leader, so that only the rest of the group counts
    _signal_group(group, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired, OSError, ValueError):
        process.communicate(timeout=_GRACE_SECONDS)
    if process.poll() is None:
        process.kill()
        process.wait()


def _group_alive(group: int) -> bool:
    """Whether a process of ``group`` is still running (zombies waiting to be reaped do not
    count: they have ended)."""
    try:
        os.killpg(group, 0)
    except (ProcessLookupError, PermissionError):
        return False
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # after the command name: state, ppid, pgrp
        if int(fields[2]) == group and fields[0] not in ("Z", "X"):
            return True
    return False
