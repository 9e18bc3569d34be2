"""Every shell command the README and docs/ quote as runnable is run here, or marked as not run.

A *shell block* is a code block of README.md or a page under docs/ that is tagged ``sh``,
``bash``, ``shell`` or ``console``, or untagged with a line that starts with a program
(``python``, ``pmlbench``, ``pip``, ...). Each one is either

- run by this module: its commands are listed in :data:`RUN` exactly as the page writes
  them, and each is pasted into ``bash`` in an empty directory (so its ``outputs/`` land
  there), with the ``python`` and ``pmlbench`` of the interpreter running the tests; a
  ``console`` block's ``$`` lines are the commands and the lines under them the output they
  must print (``...`` stands for anything); or
- marked in the Markdown by an HTML comment right before it, ``<!-- not run: REASON -->``,
  saying why (the 3,430-unit suite, a SLURM cluster, your own file, a placeholder such as
  ``<name>``).

A new or edited block that is neither fails here, naming the page and the line. The pages
docs/leaderboard.md writes (``pmlbench report --leaderboard``) cannot carry a marker:
:data:`GENERATED` says why their blocks are not run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[1]
SHELL_TAGS = {"sh", "bash", "shell", "console"}
PROGRAMS = {
    "python",
    "pmlbench",
    "pip",
    "tar",
    "mkdir",
    "cd",
    "cp",
    "sudo",
    "export",
    "for",
    "octave",
    "octave-cli",
    "git",
    "bash",
    "/usr/bin/time",
    "$",
}
MARKER = re.compile(r"^\s*<!--\s*not run:\s*(.*?)\s*-->\s*$", re.S)
# written by the build or by tools, not pages of the docs
SKIPPED_DIRS = ("docs/_build/", "docs/generated/", "docs/auto_examples/")
# pages a command writes, whose blocks cannot carry a marker: why they are not run
GENERATED = {
    "docs/leaderboard.md": (
        "written by pmlbench report --leaderboard: its report command is run on the archive "
        "by tests/test_leaderboard_page.py, its suite command runs 3,430 units"
    ),
}

# The blocks this module runs: page -> the blocks' text, exactly as written there.
RUN: dict[str, list[str]] = {
    "README.md": [
        "python -m pmlbench method=mlknn dataset=genbase",
        "python -m pmlbench method=mlknn method.k=15 dataset=medical noise.rate=2.0 seed=3\n"
        "python -m pmlbench method=pml3er dataset=genbase bipartition.rule=top_k "
        "protocol.n_splits=10\n"
        "python -m pmlbench method=nlr dataset=mirflickr5k             # a real PML dataset\n"
        "pmlbench list                                   "
        "# every installed dataset, noise, method, metric",
    ],
    "docs/tuning.md": [
        "python -m pmlbench method=mlknn dataset=genbase tune.grid.k=[5,10] tune.oracle=true "
        "protocol.n_splits=2",
        "$ python -m pmlbench method=pml3er dataset=genbase +tune.grid.lamda2=[1,10]\n"
        "error: tune.grid names unknown parameters ['lamda2'] of PML3ER; known: "
        "['admm_iter', ...]\n"
        "$ python -m pmlbench method=mlknn dataset=genbase tune.grid.k=[5,10] tune.cv=1\n"
        "error: tune.cv must be an integer in [2, inf), got 1",
    ],
}


@dataclass(frozen=True)
class Block:
    page: str  # relative to the repository
    line: int
    tag: str
    text: str  # stripped
    reason: str | None  # the not-run marker's reason, None when unmarked

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


@dataclass(frozen=True)
class Command:
    block: Block
    command: str
    expected: tuple[str, ...]  # lines of output a console block shows under the command


def pages() -> list[Path]:
    found = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return [p for p in found if not p.relative_to(ROOT).as_posix().startswith(SKIPPED_DIRS)]


def shell_blocks(path: Path) -> list[Block]:
    tokens = MarkdownIt("commonmark").parse(path.read_text(encoding="utf-8"))
    blocks = []
    for index, token in enumerate(tokens):
        if token.type not in ("fence", "code_block"):
            continue
        tag = token.info.strip().split()[0] if token.info.strip() else ""
        words = [line.split(None, 1)[0] for line in token.content.splitlines() if line.strip()]
        if tag not in SHELL_TAGS and (tag or not any(w in PROGRAMS for w in words)):
            continue
        assert token.map is not None  # block tokens carry their lines
        before = tokens[index - 1] if index else None
        marker = MARKER.match(before.content) if before and before.type == "html_block" else None
        blocks.append(
            Block(
                path.relative_to(ROOT).as_posix(),
                token.map[0] + 1,
                tag,
                token.content.strip(),
                marker.group(1) if marker else None,
            )
        )
    return blocks


def all_blocks() -> list[Block]:
    return [block for page in pages() for block in shell_blocks(page)]


def commands(block: Block) -> list[Command]:
    """The commands of a block: ``$`` lines with their output lines for a console block,
    else every line (``\\``-continued lines joined)."""
    lines = block.text.splitlines()
    if block.tag == "console" or lines[0].startswith("$ "):
        found: list[Command] = []
        for line in lines:
            if line.startswith("$ "):
                found.append(Command(block, line[2:], ()))
            elif found and line.strip():
                last = found[-1]
                found[-1] = Command(block, last.command, (*last.expected, line.strip()))
        return found
    joined = re.sub(r"\\\n\s*", "", block.text)
    return [Command(block, line.strip(), ()) for line in joined.splitlines() if line.strip()]


def run_blocks() -> list[Block]:
    blocks = {(b.page, b.text): b for b in all_blocks()}
    return [
        blocks[(page, text)]
        for page, texts in RUN.items()
        for text in texts
        if (page, text) in blocks
    ]


# ---------------------------------------------------------------------------------- markers


def test_every_shell_block_is_run_or_marked_with_a_reason():
    run = {(page, text) for page, texts in RUN.items() for text in texts}
    problems = []
    for block in all_blocks():
        listed = (block.page, block.text) in run
        if block.page in GENERATED:
            continue
        if block.reason is None and not listed:
            problems.append(
                f"{block.where}: neither run by tests/test_docs_commands.py (RUN) nor marked "
                "'<!-- not run: REASON -->' right before the block"
            )
        elif block.reason is not None and listed:
            problems.append(f"{block.where}: marked not run but listed in RUN")
        elif block.reason is not None and len(block.reason) < 10:
            problems.append(f"{block.where}: the not-run marker gives no reason")
    assert not problems, "\n".join(problems)


def test_every_block_the_tests_run_is_in_the_docs():
    found = {(b.page, b.text) for b in all_blocks()}
    missing = [
        f"{page}: {text.splitlines()[0]}"
        for page, texts in RUN.items()
        for text in texts
        if (page, text) not in found
    ]
    assert not missing, f"RUN names blocks the docs no longer have (update RUN): {missing}"


def test_the_parser_finds_blocks_markers_and_console_output(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "Text.\n\n    python -m pmlbench list\n\n"
        "<!-- not run: runs for hours on purpose -->\n    pmlbench report outputs/store\n\n"
        "```console\n$ pmlbench x\nerror: unknown command 'x'; ...\n```\n\n"
        "    W = (X'X)^-1 X'Y\n\n```python\nimport pmlbench\n```\n",
        encoding="utf-8",
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys.modules[__name__], "ROOT", tmp_path)
        blocks = shell_blocks(page)
    assert [(b.line, b.reason) for b in blocks] == [
        (3, None),
        (6, "runs for hours on purpose"),
        (8, None),
    ]
    console = commands(blocks[2])
    assert [(c.command, c.expected) for c in console] == [
        ("pmlbench x", ("error: unknown command 'x'; ...",))
    ]


# ------------------------------------------------------------------------- running them


def _run(command: Command, directory: Path) -> subprocess.CompletedProcess:
    directory.mkdir(parents=True)
    environment = {
        **os.environ,
        # the interpreter running the tests provides `python` and `pmlbench`
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "COLUMNS": "200",
        "OPENBLAS_NUM_THREADS": "1",
    }
    return subprocess.run(
        ["bash", "-c", command.command],
        cwd=directory,
        env=environment,
        capture_output=True,
        text=True,
        timeout=900,
    )


def _commands() -> list[Command]:
    return [command for block in run_blocks() for command in commands(block)]


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> dict[Command, subprocess.CompletedProcess]:
    """Every command of RUN, two at a time, each in a directory of its own."""
    root = tmp_path_factory.mktemp("docs_commands")
    todo = _commands()
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = pool.map(lambda item: _run(item[1], root / str(item[0])), enumerate(todo))
        return dict(zip(todo, results, strict=True))


def _matches(expected: str, output: str) -> bool:
    pattern = ".*".join(re.escape(part) for part in expected.split("..."))
    return re.search(pattern, output) is not None


@pytest.mark.parametrize(
    "command", _commands(), ids=lambda c: f"{c.block.page}:{c.command.split('#')[0].strip()}"
)
def test_documented_command_runs_as_the_page_says(command, ran):
    result = ran[command]
    output = result.stdout + result.stderr
    if command.expected:
        fails = any(line.startswith("error:") for line in command.expected)
        assert (result.returncode != 0) == fails, (command.command, result.returncode, output)
        missing = [line for line in command.expected if not _matches(line, output)]
        assert not missing, (
            f"{command.block.where}: {command.command!r} no longer prints {missing}:\n{output}"
        )
    else:
        assert result.returncode == 0, (
            f"{command.block.where}: {command.command!r} failed:\n{output}"
        )
