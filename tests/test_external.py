"""The external-command method adapter, driven by small Python programs standing in for
MATLAB/Octave code, and its one-line errors for each way such a program can fail."""

from __future__ import annotations

import os
import shutil
import signal
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from pmlbench.errors import PluginError, PmlbenchError
from pmlbench.methods import external
from pmlbench.methods.external import ExternalCommand, ExternalSpec, read_arrays, render_command
from tests.helpers import assert_process_ends, start_slow_external

# A stand-in "external program": a nearest-centroid scorer. It reads the files the adapter
# wrote, checks what it was given, and writes what MODE asks for.
PROGRAM = """
import sys, json
import numpy as np, scipy.io, scipy.sparse as sp

mode, train, test, out = sys.argv[1:5]
def read(p):
    if p.endswith(".npz"):
        with np.load(p, allow_pickle=False) as d:
            return {k: d[k] for k in d.files}
    return scipy.io.loadmat(p)
def dense(a):
    return a.toarray() if sp.issparse(a) else np.asarray(a, dtype=float)
tr, te = read(train), read(test)
X, Y, Xt = dense(tr["X"]), dense(tr["Y"]), dense(te["X"])
centroids = (Y.T @ X) / np.maximum(Y.sum(axis=0), 1)[:, None]
scores = -((Xt[:, None, :] - centroids[None]) ** 2).sum(axis=2)
info = {"seed": float(np.ravel(tr["seed"])[0]),
        "params": {k: float(np.ravel(v)[0]) for k, v in tr.items() if k.startswith("param_")},
        "sparse": bool(sp.issparse(tr["X"])), "argv": sys.argv[5:]}
with open(out + ".info.json", "w") as f:
    json.dump(info, f)
with open(out + ".calls", "a") as f:
    f.write("x")
labels = (scores >= np.median(scores, axis=1, keepdims=True)).astype(float)
save = {"ok": {"scores": scores, "labels": labels}, "noLabels": {"scores": scores},
        "transposed": {"scores": scores.T, "labels": 2 * labels.T - 1},
        "badShape": {"scores": scores[:, :-1]}, "noScores": {"labels": labels},
        "nan": {"scores": scores * np.nan}, "complex": {"scores": scores + 1j}}
if mode == "crash":
    sys.stderr.write("error: Undefined function 'pinv2'\\n")
    sys.exit(3)
if mode == "silent":
    sys.exit(0)
if mode == "sleep":
    import time; time.sleep(30)
arrays = save[mode]
if out.endswith(".npz"):
    np.savez(out, **arrays)
else:
    scipy.io.savemat(out, arrays)
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("external") / "centroid.py"
    path.write_text(textwrap.dedent(PROGRAM))
    return path


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    Y = (rng.random((30, 4)) < 0.4).astype(np.uint8)
    Y[np.arange(30), np.arange(30) % 4] = 1
    X = Y @ rng.normal(scale=3.0, size=(4, 5)) + rng.normal(size=(30, 5))
    return X[:20], Y[:20], X[20:], Y[20:]


def _centroid_scores(X, Y, Xt):
    centroids = (Y.T @ X) / np.maximum(Y.sum(axis=0), 1)[:, None]
    return -((Xt[:, None, :] - centroids[None]) ** 2).sum(axis=2)


def _exchange(workdir: Path) -> Path:
    """The one directory the adapter exchanged its files in under ``workdir``."""
    (folder,) = workdir.glob("exchange-*")
    return folder


def _method(program: Path, mode: str, **kwargs) -> ExternalCommand:
    command = f"{{python}} {program} {mode} {{train}} {{test}} {{out}}"
    return ExternalCommand(command=command, **kwargs)


@pytest.mark.parametrize("file_format", ["npz", "mat"])
def test_scores_and_labels_come_back_from_the_program(program, data, file_format, tmp_path):
    X, Y, Xt, _ = data
    model = _method(
        program,
        "ok",
        file_format=file_format,
        workdir=str(tmp_path),
        params={"lam": 0.5},
        random_state=42,
    ).fit(X, Y)
    scores = model.decision_function(Xt)
    np.testing.assert_allclose(scores, _centroid_scores(X, Y, Xt), rtol=1e-12)
    labels = model.predict(Xt)
    np.testing.assert_array_equal(labels, scores >= np.median(scores, axis=1, keepdims=True))
    assert (_exchange(tmp_path) / f"out.{file_format}.calls").read_text() == "x"  # one run, cached
    info = (_exchange(tmp_path) / f"out.{file_format}.info.json").read_text()
    assert '"seed": 42.0' in info and '"param_lam": 0.5' in info
    assert model.diagnostics_["fit_seconds"] > 0


def test_sparse_features_stay_sparse_in_mat_files(program, data, tmp_path):
    X, Y, Xt, _ = data
    model = _method(program, "ok", file_format="mat", workdir=str(tmp_path)).fit(
        sp.csr_matrix(X), Y
    )
    np.testing.assert_allclose(
        model.decision_function(sp.csr_matrix(Xt)), _centroid_scores(X, Y, Xt), rtol=1e-12
    )
    assert '"sparse": true' in (_exchange(tmp_path) / "out.mat.info.json").read_text()


def test_matlab_habits_are_understood(program, data):
    X, Y, Xt, _ = data
    model = _method(program, "transposed", file_format="mat").fit(X, Y)  # l x n, -1/+1
    scores = model.decision_function(Xt)
    assert scores.shape == (10, 4)
    np.testing.assert_array_equal(
        model.predict(Xt), scores >= np.median(scores, axis=1, keepdims=True)
    )


def test_without_labels_the_threshold_decides(program, data):
    X, Y, Xt, _ = data
    model = _method(program, "noLabels", threshold=-20.0).fit(X, Y)
    np.testing.assert_array_equal(model.predict(Xt), model.decision_function(Xt) >= -20.0)


def test_params_fill_placeholders(program, data, tmp_path):
    X, Y, Xt, _ = data
    command = f"{{python}} {program} ok {{train}} {{test}} {{out}} --lam={{lam}}"
    ExternalCommand(command, params={"lam": 3}, workdir=str(tmp_path)).fit(X, Y).decision_function(
        Xt
    )
    assert '"argv": ["--lam=3"]' in (_exchange(tmp_path) / "out.npz.info.json").read_text()


@pytest.mark.parametrize(
    ("mode", "kwargs", "message"),
    [
        ("crash", {}, "failed with exit status 3; stderr: error: Undefined function 'pinv2'"),
        ("silent", {}, "exited normally but wrote no out.npz"),
        ("badShape", {}, "wrote 'scores' of shape (10, 3); expected (10, 4)"),
        ("noScores", {}, "without 'scores'"),
        ("nan", {}, "NaN or infinite scores"),
        ("complex", {}, "wrote complex scores; scores must be real"),
        ("sleep", {"timeout": 0.5}, "did not finish within 0.5 s"),
    ],
)
def test_each_failure_is_one_clear_line(program, data, mode, kwargs, message):
    X, Y, Xt, _ = data
    model = _method(program, mode, **kwargs).fit(X, Y)
    with pytest.raises(PluginError) as error:
        model.decision_function(Xt)
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_command_problems_are_reported_before_any_work(data):
    X, Y, _, _ = data
    with pytest.raises(PmlbenchError, match="needs a command"):
        ExternalCommand("???").fit(X, Y)
    with pytest.raises(PmlbenchError, match=r"unknown placeholder \{tset\}"):
        ExternalCommand("prog {train} {tset} {out}").fit(X, Y)
    with pytest.raises(PmlbenchError, match=r"^method\.params must be .*reserved names"):
        ExternalCommand("prog {train}", params={"out": 1}).fit(X, Y)
    with pytest.raises(PmlbenchError, match=r"^method\.file_format must be one of 'npz', 'mat'"):
        ExternalCommand("prog {train}", file_format="csv").fit(X, Y)
    with pytest.raises(PluginError, match="'no-such-program-xyz' not found"):
        ExternalCommand("no-such-program-xyz {train} {test} {out}").fit(X, Y).decision_function(X)


def test_command_tokens_keep_paths_with_spaces():
    argv = render_command("prog '{train}' --n={{literal}}", {"train": "/a b/train.npz"})
    assert argv == ["prog", "/a b/train.npz", "--n={literal}"]


def test_unreadable_output_is_a_clear_error(tmp_path):
    bad = tmp_path / "out.mat"
    bad.write_text("not a mat file")
    with pytest.raises(PmlbenchError, match="unreadable"):
        read_arrays(bad, "mat")
    with pytest.raises(PmlbenchError, match="unreadable"):
        read_arrays(bad, "npz")


@pytest.mark.skipif(shutil.which("octave-cli") is None, reason="GNU Octave is not installed")
def test_an_octave_program_joins_through_mat_files(data, tmp_path):
    X, Y, Xt, _ = data
    script = tmp_path / "centroid.m"
    script.write_text(
        textwrap.dedent("""\
        args = argv();
        tr = load(args{1}); te = load(args{2});
        X = full(tr.X); Y = double(tr.Y); Xt = full(te.X);
        C = (Y' * X) ./ max(sum(Y, 1), 1)';
        scores = zeros(rows(Xt), rows(C));
        for j = 1:rows(C)
          scores(:, j) = -sum((Xt - C(j, :)) .^ 2, 2);
        end
        save('-v7', args{3}, 'scores');
        """)
    )
    command = f"octave-cli --no-gui --norc --quiet {script} {{train}} {{test}} {{out}}"
    model = ExternalCommand(command, file_format="mat").fit(X, Y)
    np.testing.assert_allclose(model.decision_function(Xt), _centroid_scores(X, Y, Xt), rtol=1e-10)
    assert scipy.io  # the .mat exchange needs nothing beyond scipy


def test_a_subclass_spec_is_checked_like_the_parameters(data):
    X, Y, _, _ = data

    class Wrapper(ExternalCommand):
        def __init__(self, timeout: float = 5.0):
            self.timeout = timeout

        def external_spec(self) -> ExternalSpec:
            return ExternalSpec("prog {train} {test} {out}", file_format="csv", timeout=5.0)

    with pytest.raises(PmlbenchError, match=r"^method\.timeout must be a number in \(0, inf\)"):
        Wrapper(timeout=0).fit(X, Y)
    with pytest.raises(PmlbenchError, match=r"^method\.file_format must be one of"):
        Wrapper().fit(X, Y)


# ---------------------------------------------------------------------- processes


def _alive(argv: list[str]) -> list[int]:
    """Pids of running (not zombie) processes whose command line is exactly ``argv``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")[:-1]
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if [part.decode(errors="replace") for part in cmdline] == argv and state not in "ZX":
            found.append(int(entry.name))
    return found


def _sleep_seconds() -> str:
    """A duration no other test run uses, so that its ``sleep`` can be told apart."""
    return f"47.{os.getpid()}{time.monotonic_ns() % 1000:03d}"


needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="needs /proc")


def _run_until_stopped(command: str, data, tmp_path: Path, timeout: float) -> PmlbenchError:
    X, Y, Xt, _ = data
    model = ExternalCommand(command, timeout=timeout, workdir=str(tmp_path)).fit(X, Y)
    with pytest.raises(PluginError) as error:
        model.decision_function(Xt)
    assert (tmp_path / "started").is_file()  # the shell did start its child before the stop
    return error.value


@needs_proc
def test_timeout_stops_the_programs_children(data, tmp_path):
    """The issue's case: ``sh -c "sleep 47; ..."`` used to leave the ``sleep`` running."""
    seconds = _sleep_seconds()
    command = f"sh -c 'touch {{workdir}}/started; sleep {seconds}; echo never'"
    error = _run_until_stopped(command, data, tmp_path, timeout=1.0)
    assert "did not finish within 1 s and was stopped; raise method.timeout" in str(error)
    assert _alive(["sleep", seconds]) == []


@needs_proc
def test_children_that_ignore_sigterm_get_sigkill(data, tmp_path, monkeypatch):
    monkeypatch.setattr(external, "_GRACE_SECONDS", 0.3)
    seconds = _sleep_seconds()
    # an ignored signal stays ignored across exec: the sleep ignores SIGTERM too
    command = f"sh -c 'trap \"\" TERM; touch {{workdir}}/started; sleep {seconds}; echo never'"
    start = time.perf_counter()
    _run_until_stopped(command, data, tmp_path, timeout=0.5)
    assert time.perf_counter() - start < 10
    assert _alive(["sleep", seconds]) == []


@needs_proc
def test_an_interrupt_stops_the_program_too(data, tmp_path):
    X, Y, Xt, _ = data
    seconds = _sleep_seconds()
    command = f"sh -c 'touch {{workdir}}/started; sleep {seconds}'"
    model = ExternalCommand(command, timeout=60, workdir=str(tmp_path)).fit(X, Y)

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 1.0)
        with pytest.raises(KeyboardInterrupt):
            model.decision_function(Xt)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert (tmp_path / "started").is_file()
    assert _alive(["sleep", seconds]) == []


def test_no_shell_runs_the_command(data, tmp_path):
    """Shell syntax in method.command reaches the program as plain arguments."""
    X, Y, Xt, _ = data
    script = tmp_path / "argv.py"
    script.write_text(
        "import json, sys\n"
        "json.dump(sys.argv[1:], open(sys.argv[1] + '.argv.json', 'w'))\n"
        "import numpy as np\n"
        "np.savez(sys.argv[1], scores=np.zeros((10, 4)))\n"
    )
    command = f"{{python}} {script} {{out}} '$HOME' '*' ';' 'echo' '>' x '|' y"
    ExternalCommand(command, workdir=str(tmp_path)).fit(X, Y).decision_function(Xt)
    argv = (_exchange(tmp_path) / "out.npz.argv.json").read_text()
    assert argv.endswith('"$HOME", "*", ";", "echo", ">", "x", "|", "y"]')
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize(
    ("command", "problem"),
    [
        ('sh -ec "cd sub && python3 prog.py {train} {test} {out}"', "changes directory (cd sub)"),
        ('env sh -c "cd sub && python3 prog.py {train} {test} {out}"', "changes directory"),
        ('env -u X A=1 nice -n 5 bash -xc "cd sub; python3 prog.py"', "changes directory"),
        ("exec timeout 60 zsh -o errexit -c 'python3 $HOME/p.py'", "builds words at run time"),
        ("sh -c \"sh -c 'cd sub && python3 prog.py'\"", "changes directory (cd sub)"),
        ("env -C sub python3 prog.py {train} {test} {out}", "through 'env -C'"),
        ("bash -s", "reads its commands from standard input"),
        ("xargs python3", "through xargs"),
    ],
)
def test_every_shell_form_that_hides_files_from_the_key_is_refused(command, problem):
    """One rule for every shell invocation: behind any wrapper and with -c in any flag
    cluster, a script that changes directory or builds words at run time is refused up front
    (``sh -ec "cd sub && python3 prog.py"`` reused a stale unit after sub/prog.py changed)."""
    with pytest.raises(PmlbenchError) as error:
        external.check_shell_script(command)
    assert problem in str(error.value) and "\n" not in str(error.value)


@pytest.mark.parametrize(
    "command",
    [
        "python3 prog.py {train} {test} {out}",
        'sh -ec "cd {workdir} && python3 prog.py {train} {test} {out}"',
        "env OMP_NUM_THREADS=1 nice -n 5 python3 prog.py {train} {test} {out}",
        "bash --posix run.sh {train} {test} {out}",
        'sh -c "python3 prog.py {train} {test} {out} | cat"',
    ],
)
def test_shell_forms_the_key_follows_are_accepted(command):
    external.check_shell_script(command)


def test_a_script_behind_a_wrapper_and_flag_cluster_is_in_the_key(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from pmlbench.runner.units import input_files

    monkeypatch.chdir(tmp_path)
    (tmp_path / "prog.py").write_text("a")
    command = "env A=1 sh -ec 'python3 prog.py {train} {test} {out}'"
    spec = SimpleNamespace(
        dataset={"name": "genbase"}, noise={"name": "uniform"}, method={"command": command}
    )
    before = input_files(spec)["method.command"]["prog.py"]
    (tmp_path / "prog.py").write_text("edited")
    assert input_files(spec)["method.command"]["prog.py"] != before


def test_a_sweep_over_method_params_gives_each_value_its_own_label(program, tmp_path):
    """Two jobs differing only in ``method.params.lam`` were one label to the report, which
    then refused them as 'conflicting results'; nested params are columns of their own."""
    from pmlbench.api import compose_config
    from pmlbench.report import ReportOptions, build_report
    from pmlbench.runner.run import run_config

    for lam in (1, 2):
        config = compose_config(
            [
                "method=external",
                f"method.command='{{python}} {program} ok {{train}} {{test}} {{out}}'",
                f"+method.params.lam={lam}",
                "dataset=genbase",
                "protocol.n_splits=2",
                "quiet=true",
            ]
        )
        run_config(config, tmp_path / f"lam{lam}", quiet=True)
    report = build_report([tmp_path], ReportOptions(plots=False, html=False))
    assert sorted(report.prepared.methods) == [
        "external[params.lam=1]",
        "external[params.lam=2]",
    ]


@pytest.mark.slow
def test_ctrl_c_during_an_external_program_stops_it_too(tmp_path):
    """pmlbench exited with "interrupted" while the program, in a session of its own under
    the unit's child, kept running; now the child's descendants are stopped first."""
    proc, program = start_slow_external(tmp_path)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, output
    assert_process_ends(program, "the interrupted run")
