"""Hostile plugins, programs, files and store records: each is contained (a failed unit, the
sweep goes on), refused in one line naming the file, key or plugin, or flagged; never a
wrong, stale or lost number with exit status 0, a traceback or a raw terminal escape."""

from __future__ import annotations

import textwrap
import threading

import numpy as np
import pytest

from pmlbench.errors import PmlbenchError
from pmlbench.methods.external import ExternalCommand

# An external program that sleeps (so that parallel calls overlap) and then scores every
# label with the value of its parameter ``lam`` read from the train file.
PARAM_ECHO = """
import sys, time
import numpy as np
train, test, out = sys.argv[1:4]
time.sleep(0.5)
with np.load(train) as tr, np.load(test) as te:
    lam = float(tr["param_lam"]); n = te["X"].shape[0]; l = tr["Y"].shape[1]
np.savez(out, scores=np.full((n, l), lam))
"""


def _small_data():
    rng = np.random.default_rng(0)
    Y = (rng.random((20, 3)) < 0.5).astype(np.uint8)
    return rng.normal(size=(20, 4)), Y, rng.normal(size=(6, 4))


def test_parallel_calls_sharing_a_workdir_exchange_their_own_files(tmp_path):
    program = tmp_path / "echo.py"
    program.write_text(textwrap.dedent(PARAM_ECHO))
    workdir = tmp_path / "wd"
    X, Y, Xt = _small_data()
    command = f"{{python}} {program} {{train}} {{test}} {{out}}"
    found: dict[float, np.ndarray] = {}

    def run(lam: float) -> None:
        model = ExternalCommand(command, params={"lam": lam}, workdir=str(workdir)).fit(X, Y)
        found[lam] = model.decision_function(Xt)

    threads = [threading.Thread(target=run, args=(lam,)) for lam in (1.0, -3.0)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert set(found) == {1.0, -3.0}
    for lam, scores in found.items():
        np.testing.assert_array_equal(scores, np.full((6, 3), lam))
    assert len(list(workdir.glob("exchange-*"))) == 2  # kept for debugging, one per call


def test_scripts_named_inside_a_shell_command_are_in_the_key(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from pmlbench.runner.units import input_files

    monkeypatch.chdir(tmp_path)
    (tmp_path / "myprog.py").write_text("a")
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "run.m").write_text("b")
    command = (
        "sh -c 'cd {workdir} && octave-cli run.m {train} {test} {out};python myprog.py {out}|cat'"
    )
    spec = SimpleNamespace(
        dataset={"name": "genbase"},
        noise={"name": "uniform"},
        method={"name": "external", "command": command, "workdir": str(tmp_path / "work")},
    )
    files = input_files(spec)["method.command"]
    assert sorted(files) == ["myprog.py", "run.m"]
    (tmp_path / "myprog.py").write_text("edited")
    assert input_files(spec)["method.command"]["myprog.py"] != files["myprog.py"]


@pytest.mark.parametrize(
    ("script", "problem"),
    [
        ("cd sub && python prog.py {train} {test} {out}", "changes directory (cd sub)"),
        ("python $HOME/prog.py {train} {test} {out}", "builds words at run time"),
        ("python `cat which` {train} {test} {out}", "builds words at run time"),
    ],
)
def test_a_shell_script_the_key_cannot_follow_is_refused(script, problem):
    X, Y, _ = _small_data()
    with pytest.raises(PmlbenchError) as error:
        ExternalCommand(f"sh -c '{script}'").fit(X, Y)
    assert problem in str(error.value) and "\n" not in str(error.value)
    ExternalCommand("sh -c 'cd {workdir} && python prog.py {train} {test} {out}'").fit(X, Y)
