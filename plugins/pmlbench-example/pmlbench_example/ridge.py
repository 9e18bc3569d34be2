"""``ext_ridge``: a ridge-regression method run as an external Octave or Python program.

A worked example of wrapping code written in another language: the program
(``external/ridge.m`` for Octave, ``external/ridge.py`` as a Python stand-in) reads the
training features and candidate labels from a .mat file, fits ridge regression from the
features to the candidate indicator matrix in closed form, and writes scores and labels.
pmlbench's ``external`` adapter does the file exchange; this class only fixes the command.
"""

from __future__ import annotations

from pathlib import Path

from pmlbench.plugin import ExternalCommand, ExternalSpec, Interval, Options

SCRIPTS = Path(__file__).parent / "external"
PROGRAMS = {
    "octave": (
        f"octave-cli --no-gui --norc --quiet {SCRIPTS / 'ridge.m'} {{train}} {{test}} {{out}}"
    ),
    "python": f"{{python}} {SCRIPTS / 'ridge.py'} {{train}} {{test}} {{out}}",
}


class ExternalRidge(ExternalCommand):
    """Ridge regression on candidate labels, computed by an external Octave/Python program.

    Args:
        lam: ridge penalty (the bias is not penalised).
        program: ``octave`` (needs octave-cli on PATH) or ``python`` (a stand-in script).
        timeout: seconds the program may take.
    """

    default_bipartition = {"rule": "method"}
    # Replaces ExternalCommand's constraints, which describe its own constructor.
    parameter_constraints = {
        "lam": [Interval(float, 0, None)],
        "program": [Options(tuple(PROGRAMS))],
        "timeout": [Interval(float, 0, None, closed="neither")],
    }

    def __init__(self, lam: float = 1.0, program: str = "python", timeout: float = 120.0):
        self.lam = lam
        self.program = program
        self.timeout = timeout

    def external_spec(self) -> ExternalSpec:
        return ExternalSpec(
            PROGRAMS[self.program],
            file_format="mat",
            timeout=float(self.timeout),
            params={"lam": float(self.lam)},
        )
