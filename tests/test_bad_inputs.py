"""A catalogue of bad input, run as a user runs it: each case of issue 12 (and a few more).

Every case is one command line, ``pmlbench <overrides> dataset=genbase protocol.n_splits=2
...`` with its own run directory, result store and cache. A bad case must exit non-zero
with exactly one line of output, ``error: ...``, that names the config key (and the fix
where there is one), print no traceback, and write nothing: no results.csv, run.json or
units.json, no store record, no cache entry. A good case (the right answer is a correct
run) must exit 0 and write the results it was asked for, so the catalogue is not one-sided.

The cases run in this process through :func:`pmlbench.cli.main.main` (the function behind
the ``pmlbench`` console script and ``python -m pmlbench``; about 0.5 s each instead of
2 s for a new interpreter), which must leave ``sys.argv`` and Hydra's global state as it
found them; :func:`test_the_real_command_line_agrees` runs a few of them as subprocesses.
Cases of bad dataset files beyond these are in tests/test_bad_datasets.py, faults of disks
and file modes in tests/test_files.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hydra.core.global_hydra import GlobalHydra

from pmlbench.cli.main import main as cli_main


def tiny_npz(tmp: Path) -> list[str]:
    """A dataset of 3 instances: ML-kNN used to fail inside fit ("use k <= 0")."""
    X = sp.csr_matrix(np.random.default_rng(0).random((3, 4)))
    np.savez(
        tmp / "three.npz",
        X_data=X.data,
        X_indices=X.indices,
        X_indptr=X.indptr,
        X_shape=np.array(X.shape),
        Y=np.eye(2, dtype=np.uint8)[[0, 1, 0]],
    )
    return ["dataset=file", f"dataset.path={tmp / 'three.npz'}"]


def empty_npz(tmp: Path) -> list[str]:
    """A 0-byte .npz used to give EOFError with a hint that could not reproduce it."""
    (tmp / "empty.npz").write_bytes(b"")
    return ["dataset=file", f"dataset.path={tmp / 'empty.npz'}"]


def meka_arff(tmp: Path) -> Path:
    """40 instances, 4 labels first, then 3 numeric features; the relation says ``-C 4``."""
    rng = np.random.default_rng(1)
    Y = (rng.random((40, 4)) < 0.4).astype(int)
    Y[np.arange(40), np.arange(40) % 4] = 1
    X = rng.random((40, 3)).round(3)
    header = ["@relation 'four: -C 4'"]
    header += [f"@attribute {name} {{0,1}}" for name in "abcd"]
    header += [f"@attribute f{i} numeric" for i in range(3)]
    rows = [",".join(map(str, [*y, *x])) for y, x in zip(Y, X, strict=True)]
    path = tmp / "four.arff"
    path.write_text("\n".join([*header, "@data", *rows]) + "\n")
    return path


def arff_with_count(count: int) -> Callable[[Path], list[str]]:
    def build(tmp: Path) -> list[str]:
        path = meka_arff(tmp)
        return ["dataset=file", f"dataset.path={path}", f"dataset.label_count={count}"]

    return build


def arff_as_it_says(tmp: Path) -> list[str]:
    return ["dataset=file", f"dataset.path={meka_arff(tmp)}"]


@dataclass(frozen=True)
class Case:
    """One command line and what it must print (substrings) or must not print."""

    name: str
    overrides: list[str] | Callable[[Path], list[str]]
    says: list[str]
    never: list[str] = field(default_factory=list)


BAD = [
    Case(
        "n_splits=0",
        ["protocol.n_splits=0"],
        ["protocol.n_splits must be an integer in [1, inf), got 0"],
    ),
    Case(
        "n_splits=2.5",
        ["protocol.n_splits=2.5"],
        ["protocol.n_splits must be an integer in [1, inf), got 2.5"],
    ),
    Case(
        "n_splits=abc",
        ["protocol.n_splits=abc"],
        ["protocol.n_splits must be an integer in [1, inf), got 'abc'"],
    ),
    Case(
        "n_splits=null",
        ["protocol.n_splits=null"],
        ["protocol.n_splits must be an integer in [1, inf), got None"],
    ),
    Case("seed=abc", ["seed=abc"], ["seed must be an integer in [0, inf), got 'abc'"]),
    Case("seed=-3", ["seed=-3"], ["seed must be an integer in [0, inf), got -3"]),
    Case("seed=true", ["seed=true"], ["seed must be an integer in [0, inf), got True"]),
    Case(
        "noise.rate=nan", ["noise.rate=nan"], ["noise.rate must be a number in [0, inf), got nan"]
    ),
    Case(
        "noise.rate=inf", ["noise.rate=inf"], ["noise.rate must be a number in [0, inf), got inf"]
    ),
    Case("noise.rate=abc", ["noise.rate=abc"], ["noise.rate must be a number", "got 'abc'"]),
    Case(
        "method.k=-1",
        ["method=mlknn", "method.k=-1"],
        ["method.k must be an integer in [1, inf), got -1"],
        never=["k <= 330", "use k <="],
    ),
    Case(
        "method.k=3.5",
        ["method=mlknn", "method.k=3.5"],
        ["method.k must be an integer in [1, inf), got 3.5"],
    ),
    Case(
        "method.k=abc",
        ["method=mlknn", "method.k=abc"],
        ["method.k must be an integer in [1, inf), got 'abc'"],
    ),
    Case(
        "method.s=-1",
        ["method=mlknn", "method.s=-1"],
        ["method.s must be a number in [0, inf), got -1"],
    ),
    Case(
        "dataset of 3 instances",
        tiny_npz,
        ["dataset.path=", "has 3 instances", "at least 30", "choose a larger dataset"],
        never=["0 training instances", "use k <="],
    ),
    Case(
        "empty .npz",
        empty_npz,
        ["dataset.path=", "is empty (0 bytes)", "re-create or re-download it"],
        never=["EOFError"],
    ),
    Case(
        "label_count=3 where MEKA's -C says 4",
        arff_with_count(3),
        ["dataset.label_count=3 contradicts", "-C 4", "drop dataset.label_count or set it to -4"],
    ),
    Case(
        "label_count=-3 where MEKA's -C says 4",
        arff_with_count(-3),
        ["dataset.label_count=-3 contradicts", "-C 4", "set it to -4"],
    ),
    Case(
        "bipartition.cv=1",
        ["bipartition.rule=global", "bipartition.cv=1"],
        ["bipartition.cv must be an integer in [2, inf), got 1"],
    ),
    Case(
        "bipartition.cv=1 (rule method)",
        ["bipartition.cv=1"],
        ["bipartition.cv must be an integer in [2, inf), got 1"],
    ),
    Case(
        "bipartition.objective unknown",
        ["bipartition.rule=global", "bipartition.objective=f1"],
        ["bipartition.objective=f1: unknown metric 'f1'", "available: average_precision"],
    ),
    Case("tune.cv=1", ["tune.cv=1"], ["tune.cv must be an integer in [2, inf), got 1"]),
    Case(
        "tune.cv=1 with a grid",
        ["tune.grid.k=[5,10]", "tune.cv=1"],
        ["tune.cv must be an integer in [2, inf), got 1"],
    ),
    Case(
        "tune.scoring unknown",
        ["tune.grid.k=[5,10]", "tune.scoring=auc"],
        ["tune.scoring=auc: unknown metric 'auc'", "available: average_precision"],
    ),
    # printed literally: rich markup would eat "[average_precision,...]"
    Case(
        "metrics=[]", ["metrics=[]"], ["no metrics selected; set metrics=[average_precision,...]"]
    ),
    Case(
        "metrics=average_precision (no list)",
        ["metrics=average_precision"],
        ["metrics must be a list of metric names", "set metrics=[average_precision]"],
    ),
    Case(
        "unknown metric",
        ["metrics=[average_precison]"],
        ["metrics=[average_precison]: unknown metric 'average_precison'", "average_precision"],
    ),
    Case(
        "test_size=1.5",
        ["protocol.test_size=1.5"],
        ["protocol.test_size must be a number in (0, 1), got 1.5"],
    ),
    Case(
        "test_size=1.5 without protocol.",
        ["test_size=1.5"],
        ["unknown config key 'test_size'; did you mean protocol.test_size=1.5?"],
        never=["+test_size"],  # Hydra's advice, which would add a key nothing reads
    ),
    Case(
        "protocol.nsplits",
        ["protocol.nsplits=3"],
        ["unknown config key 'protocol.nsplits'; did you mean protocol.n_splits=3?"],
    ),
    Case(
        "metric_convention=matlab",
        ["metric_convention=matlab"],
        ["metric_convention must be one of 'zhang', 'sklearn', got 'matlab'"],
    ),
    Case("recompute=no", ["recompute=no"], ["recompute must be true or false, got 'no'"]),
    Case("quiet=maybe", ["quiet=maybe"], ["quiet must be true or false, got 'maybe'"]),
    Case("dry_run=no", ["dry_run=no"], ["dry_run must be true or false, got 'no'"]),
    Case("method=mlknnn", ["method=mlknnn"], ["unknown method 'mlknnn'"]),
    Case("method.kk", ["method=mlknn", "method.kk=3"], ["method 'mlknn' has no parameter 'kk'"]),
]


# the right answer is a run: (name, overrides, number of splits expected in results.csv)
GOOD = [
    ("seed=3", ["seed=3"], 2),
    ("n_splits=1 (no ± nan)", ["protocol.n_splits=1"], 1),
    ("noise.rate=0", ["noise.rate=0"], 2),
    ("label_count=-4 as MEKA's -C says", arff_with_count(-4), 2),
    ("MEKA's -C alone", arff_as_it_says, 2),
    ("seed=5 given after seed=abc: the last wins", ["seed=abc", "seed=5"], 2),
]


@dataclass
class Outcome:
    code: int
    output: str
    run_dir: Path
    store: Path
    cache: Path

    @property
    def lines(self) -> list[str]:
        return [line for line in self.output.splitlines() if line.strip()]

    def written(self) -> list[str]:
        """Files the command left in the store and the cache, and its run outputs."""
        files = [p for d in (self.store, self.cache) if d.exists() for p in d.rglob("*")]
        files += [
            self.run_dir / name
            for name in ("results.csv", "run.json", "units.json")
            if (self.run_dir / name).exists()
        ]
        return sorted(str(p) for p in files if p.is_file())


def _arguments(overrides: list[str], tmp: Path) -> list[str]:
    return [
        "dataset=genbase",
        "protocol.n_splits=2",
        "quiet=true",
        f"results_store={tmp / 'store'}",
        f"cache_dir={tmp / 'cache'}",
        f"hydra.run.dir={tmp / 'run'}",
        *overrides,
    ]


def _overrides(case: Case | Callable[[Path], list[str]] | list[str], tmp: Path) -> list[str]:
    overrides = case.overrides if isinstance(case, Case) else case
    return overrides(tmp) if callable(overrides) else list(overrides)


def run_in_process(overrides: list[str], tmp: Path, capsys) -> Outcome:
    """``pmlbench <overrides>`` in this process, as the console script calls it."""
    argv = list(sys.argv)
    try:
        code = cli_main(_arguments(overrides, tmp))
    except SystemExit as exc:  # Hydra's task exits; the console script passes it on
        code = exc.code if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    assert sys.argv == argv, "main() must restore sys.argv"
    assert not GlobalHydra.instance().is_initialized(), "main() must clear Hydra's state"
    return Outcome(code, captured.out + captured.err, tmp / "run", tmp / "store", tmp / "cache")


def run_subprocesses(commands: list[tuple[list[str], Path]]) -> list[Outcome]:
    """``python -m pmlbench <overrides>`` for each (overrides, directory), each in a new
    interpreter, all started at once."""
    procs = [
        (
            subprocess.Popen(
                [sys.executable, "-m", "pmlbench", *_arguments(overrides, tmp)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                cwd=tmp,
            ),
            tmp,
        )
        for overrides, tmp in commands
    ]
    outcomes = []
    for proc, tmp in procs:
        out, err = proc.communicate(timeout=300)
        outcomes.append(
            Outcome(proc.returncode, out + err, tmp / "run", tmp / "store", tmp / "cache")
        )
    return outcomes


def assert_refused(outcome: Outcome, case: Case) -> None:
    assert outcome.code != 0, f"{case.name}: exit 0\n{outcome.output}"
    assert "Traceback" not in outcome.output, outcome.output
    assert len(outcome.lines) == 1, f"{case.name}: not one line:\n{outcome.output}"
    line = outcome.lines[0]
    assert line.startswith("error: "), line
    for part in case.says:
        assert part in line, f"{case.name}: {part!r} not in {line!r}"
    for part in case.never:
        assert part not in line, f"{case.name}: {part!r} in {line!r}"
    assert outcome.written() == [], f"{case.name}: wrote {outcome.written()}"


def assert_ran(outcome: Outcome, name: str, n_splits: int) -> pd.DataFrame:
    assert outcome.code == 0, f"{name}:\n{outcome.output}"
    assert "error:" not in outcome.output and "Traceback" not in outcome.output, outcome.output
    results = pd.read_csv(outcome.run_dir / "results.csv")
    assert sorted(results["split"].unique()) == list(range(n_splits))
    assert results["value"].notna().all()
    if n_splits == 1:
        assert "nan" not in outcome.output and "±" not in outcome.output, outcome.output
    else:
        assert "±" in outcome.output
    return results


@pytest.mark.parametrize("case", BAD, ids=[c.name for c in BAD])
def test_bad_input_is_refused_in_one_line(case, tmp_path, capsys):
    assert_refused(run_in_process(_overrides(case, tmp_path), tmp_path, capsys), case)


@pytest.mark.parametrize(("name", "overrides", "n_splits"), GOOD, ids=[g[0] for g in GOOD])
def test_good_input_runs(name, overrides, n_splits, tmp_path, capsys):
    # the files are tiny (16 training instances): ML-kNN untuned, its k grid needs more
    untuned = [*_overrides(overrides, tmp_path), "tune.grid=null"]
    outcome = run_in_process(untuned, tmp_path, capsys)
    results = assert_ran(outcome, name, n_splits)
    run = json.loads((outcome.run_dir / "run.json").read_text())
    if name.startswith("seed="):
        assert (results["seed"] == int(name.split("=")[1].split()[0])).all()
    if "MEKA" in name:  # the four labels first, the three numeric attributes as features
        assert (run["dataset"]["l"], run["dataset"]["d"]) == (4, 3)


def test_the_real_command_line_agrees(tmp_path):
    """The in-process runs above stand for ``python -m pmlbench``: two bad cases and a good
    one, each in a new interpreter."""
    chosen = [c for c in BAD if c.name in ("n_splits=abc", "dataset of 3 instances")]
    folders = [tmp_path / name for name in ("bad0", "bad1", "good")]
    for folder in folders:
        folder.mkdir()
    commands = [(_overrides(case, tmp), tmp) for case, tmp in zip(chosen, folders, strict=False)]
    *bad, good = run_subprocesses([*commands, (["protocol.n_splits=1"], folders[2])])
    for case, outcome in zip(chosen, bad, strict=True):
        assert_refused(outcome, case)
    assert_ran(good, "n_splits=1", 1)
