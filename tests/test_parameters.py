"""Declarative parameter constraints: the forms, every built-in method's catalogue, and the
values shipped in defaults, tuning grids and presets."""

from __future__ import annotations

import inspect
import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from hydra.core.override_parser.overrides_parser import OverridesParser
from sklearn.base import BaseEstimator

from pmlbench.core.parameters import (
    Dict,
    Interval,
    Options,
    Type,
    ValidatedParameters,
    check_parameter,
    declared_constraints,
    validate_parameters,
)
from pmlbench.errors import PmlbenchError
from pmlbench.methods.external import ExternalCommand
from pmlbench.methods.lift import LIFT
from pmlbench.methods.mlknn import MLkNN
from pmlbench.methods.particle import ParticleMAP, ParticleVLS
from pmlbench.methods.particle.credible import Stage1Params
from pmlbench.methods.pml3er import PML3ER
from pmlbench.methods.pml_lrs import PMLLRS
from pmlbench.methods.pml_ni import PMLNI
from pmlbench.methods.ridge import Ridge
from pmlbench.plugins import registry

ROOT = Path(__file__).resolve().parents[1]
METHODS = {
    "mlknn": MLkNN,
    "pml3er": PML3ER,
    "ridge": Ridge,
    "particle_map": ParticleMAP,
    "particle_vls": ParticleVLS,
    "pml_ni": PMLNI,
    "pml_lrs": PMLLRS,
    "lift": LIFT,
    "external": ExternalCommand,
}
# constructor arguments a method cannot do without (no default)
REQUIRED = {"external": {"command": "prog {train} {test} {out}"}}
INTEGER_FROM_1 = "an integer in [1, inf)"
NUMBER_FROM_0 = "a number in [0, inf)"
POSITIVE = "a number in (0, inf)"
FLAG = "true or false"
THREADS = "null or an integer in [1, inf)"
JOBS = "null or an integer in [1, inf) or an integer in (-inf, -1]"
SEED = "null or an integer in [0, 4294967295]"

# (method, parameter, bad value, what the message must say is allowed); every method has at
# least a wrong type, a value out of range and a float where an integer belongs
CATALOGUE = [
    ("mlknn", "k", 3.5, INTEGER_FROM_1),
    ("mlknn", "k", "abc", INTEGER_FROM_1),
    ("mlknn", "k", 0, INTEGER_FROM_1),
    ("mlknn", "k", True, INTEGER_FROM_1),
    ("mlknn", "s", -1, NUMBER_FROM_0),
    ("mlknn", "s", float("nan"), NUMBER_FROM_0),
    ("mlknn", "s", "1", NUMBER_FROM_0),
    ("pml3er", "k", 10.0, INTEGER_FROM_1),
    ("pml3er", "alpha", 1.0, "a number in [0, 1)"),
    ("pml3er", "lambda1", -0.5, NUMBER_FROM_0),
    ("pml3er", "lambda2", 0, POSITIVE),
    ("pml3er", "tau", float("inf"), POSITIVE),
    ("pml3er", "max_iter", 5.5, INTEGER_FROM_1),
    ("pml3er", "admm_iter", 0, INTEGER_FROM_1),
    ("pml3er", "tol", -1e-6, NUMBER_FROM_0),
    ("pml3er", "propagation_max_iter", 1e3, INTEGER_FROM_1),
    ("pml3er", "propagation_tol", "small", NUMBER_FROM_0),
    ("pml3er", "propagate_transpose", "yes", FLAG),
    ("pml3er", "init", "random", "one of 'candidates', 'enrichment'"),
    ("pml3er", "w_solver", "qr", "one of 'cholesky', 'eigh'"),
    ("pml3er", "threshold", None, "a finite number"),
    ("pml3er", "allow_empty", 0, FLAG),
    ("pml3er", "blas_threads", 0, THREADS),
    ("ridge", "lambda2", -1, POSITIVE),
    ("ridge", "lambda2", "10", POSITIVE),
    ("ridge", "w_solver", "lu", "one of 'cholesky', 'eigh'"),
    ("ridge", "threshold", float("nan"), "a finite number"),
    ("ridge", "allow_empty", "false", FLAG),
    ("ridge", "blas_threads", 1.0, THREADS),
    ("particle_map", "k", 10.5, INTEGER_FROM_1),
    ("particle_map", "alpha", -0.1, "a number in [0, 1)"),
    ("particle_map", "max_iter", 0, INTEGER_FROM_1),
    ("particle_map", "tol", 0, POSITIVE),
    ("particle_map", "threshold", 1.5, "a number in [0, 1]"),
    ("particle_map", "include_self", "false", FLAG),
    ("particle_map", "zero_weight_rows", "one", "one of 'zero', 'uniform'"),
    ("particle_map", "credible", "oof", "one of 'in_sample', 'out_of_fold'"),
    ("particle_map", "n_folds", 1, "an integer in [2, inf)"),
    ("particle_map", "oof_fallback", None, "one of 'candidate', 'authors'"),
    ("particle_map", "mlknn_k", 2.5, INTEGER_FROM_1),
    ("particle_map", "mlknn_s", -1, NUMBER_FROM_0),
    ("particle_map", "random_state", -1, SEED),
    ("particle_vls", "k", "10", INTEGER_FROM_1),
    ("particle_vls", "votes", "weighted", "one of 'unweighted', 'accuracy'"),
    ("particle_vls", "C", 0, POSITIVE),
    ("particle_vls", "loss", "log", "one of 'squared_hinge', 'hinge'"),
    ("particle_vls", "svm_max_iter", 100.0, INTEGER_FROM_1),
    ("particle_vls", "n_jobs", 0, JOBS),
    ("particle_vls", "random_state", 1.5, SEED),
    ("pml_ni", "lam", -1, NUMBER_FROM_0),
    ("pml_ni", "beta", float("nan"), NUMBER_FROM_0),
    ("pml_ni", "gamma", "0.5", NUMBER_FROM_0),
    ("pml_ni", "max_iter", 0, INTEGER_FROM_1),
    ("pml_ni", "max_iter", 500.0, INTEGER_FROM_1),
    ("pml_ni", "blas_threads", -1, THREADS),
    ("pml_lrs", "lambda_w", -1, NUMBER_FROM_0),
    ("pml_lrs", "lambda_y", [1], NUMBER_FROM_0),
    ("pml_lrs", "lambda_e", float("inf"), NUMBER_FROM_0),
    ("pml_lrs", "max_iter", 2.5, INTEGER_FROM_1),
    ("pml_lrs", "threshold", "0.5", "a finite number"),
    ("pml_lrs", "blas_threads", 2.0, THREADS),
    ("lift", "ratio", 0, "a number in (0, 1]"),
    ("lift", "ratio", 1.5, "a number in (0, 1]"),
    ("lift", "C", -1, POSITIVE),
    ("lift", "C", "1", POSITIVE),
    ("lift", "n_jobs", 0, JOBS),
    ("lift", "n_jobs", 2.0, JOBS),
    ("lift", "random_state", "seed", SEED),
    ("external", "command", 3, "a string"),
    ("external", "file_format", "csv", "one of 'npz', 'mat'"),
    ("external", "timeout", 0, POSITIVE),
    ("external", "threshold", "high", "a finite number"),
    ("external", "params", {"out": 1}, "reserved names 'train', 'test', 'out'"),
    ("external", "params", [1, 2], "null or a mapping"),
    ("external", "workdir", 5, "null or a string"),
    ("external", "random_state", 3.0, SEED),
]


def _built_in() -> dict[str, type]:
    """Every method pmlbench itself ships: the catalogued ones and any registered since."""
    registered = {
        name: info.load()
        for name, info in registry.plugins("method").items()
        if info.distribution == "pmlbench"
    }
    return {**METHODS, **registered}


BUILT_IN = _built_in()


def _build(name: str, **params):
    return METHODS[name](**{**REQUIRED.get(name, {}), **params})


def _constructor_defaults(cls) -> dict:
    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    return {p.name: p.default for p in parameters if p.default is not inspect.Parameter.empty}


# --- the catalogue ------------------------------------------------------------------------


def _wants_int(name: str, param: str) -> bool:
    accepted = METHODS[name].parameter_constraints[param]
    return any(isinstance(c, Interval) and c.kind is int for c in accepted)


def test_catalogue_has_each_kind_of_mistake_for_every_method():
    for name in METHODS:
        cases = [(p, v) for m, p, v, _ in CATALOGUE if m == name]
        numbers = [(p, v) for p, v in cases if isinstance(v, (int, float))]
        wrong_type = [v for _, v in cases if v is None or isinstance(v, (str, list))]
        float_for_int = [v for p, v in numbers if isinstance(v, float) and _wants_int(name, p)]
        out_of_range = [v for v in numbers if v[1] not in float_for_int]
        assert wrong_type and float_for_int and out_of_range, name


@pytest.mark.parametrize("name, param, value, allowed", CATALOGUE)
def test_bad_value_fails_in_fit_before_any_work(name, param, value, allowed):
    estimator = _build(name, **{param: value})
    # no data at all: the parameters must be refused before X or Y is looked at
    with pytest.raises(PmlbenchError) as error:
        estimator.fit(None, None)
    message = str(error.value)
    assert f"method.{param} must be" in message
    assert allowed in message
    assert " ".join(repr(value).split()) in message
    assert "\n" not in message


@pytest.mark.parametrize("name, param, value, allowed", CATALOGUE)
def test_runner_check_gives_the_same_line(name, param, value, allowed):
    """What the runner calls before loading any data: the class's declared constraints."""
    with pytest.raises(PmlbenchError) as error:
        validate_parameters({param: value}, declared_constraints(METHODS[name]), prefix="method")
    assert str(error.value).startswith(f"method.{param} must be ")
    assert allowed in str(error.value)


def test_the_issue_examples():
    for params, key, shown in [
        ({"k": 3.5}, "method.k", "3.5"),
        ({"s": -1}, "method.s", "-1"),
        ({"k": "abc"}, "method.k", "'abc'"),
    ]:
        with pytest.raises(PmlbenchError) as error:
            MLkNN(**params).fit(np.zeros((20, 2)), np.zeros((20, 2), dtype=int))
        assert str(error.value).startswith(f"{key} must be ")
        assert f"got {shown}" in str(error.value)
        assert "[1, inf)" in str(error.value) or "[0, inf)" in str(error.value)


@pytest.mark.parametrize("name", sorted(BUILT_IN))
def test_every_constructor_parameter_is_constrained(name):
    cls = BUILT_IN[name]
    assert issubclass(cls, ValidatedParameters)
    # ValidatedParameters must come before BaseEstimator, whose _validate_params is sklearn's
    assert cls.__mro__.index(ValidatedParameters) < cls.__mro__.index(BaseEstimator)
    parameters = set(inspect.signature(cls.__init__).parameters) - {"self"}
    assert set(cls.parameter_constraints) == parameters


def test_catalogued_classes_are_the_registered_ones():
    registered = registry.plugins("method")
    for name, cls in METHODS.items():
        assert registered[name].distribution == "pmlbench"
        assert registered[name].load() is cls


# --- shipped values: defaults, grids, presets, documented examples ------------------------


@pytest.mark.parametrize("name", sorted(BUILT_IN))
def test_defaults_and_default_grid_satisfy_the_constraints(name):
    cls = BUILT_IN[name]
    constraints = declared_constraints(cls)
    validate_parameters(_constructor_defaults(cls), constraints)
    cls(**REQUIRED.get(name, {}))._validate_params()
    for param, values in (getattr(cls, "default_tuning_grid", None) or {}).items():
        for value in values:
            validate_parameters({param: value}, constraints)


def _parse(override: str):
    """A Hydra override's value(s), parsed as Hydra parses the command line."""
    parsed = OverridesParser.create().parse_overrides([override])[0]
    return list(parsed.sweep_iterator()) if parsed.is_sweep_override() else [parsed.value()]


def _sweeps(config: dict) -> dict[str, list]:
    params = (((config.get("hydra") or {}).get("sweeper") or {}).get("params")) or {}
    return {key: _parse(f"{key}={value}") for key, value in params.items()}


def _experiment_cases() -> list[tuple[str, str, str, object]]:
    """(file, method, parameter, value) for every method value an experiment file sets."""
    folder = ROOT / "conf" / "experiment"
    cases = []
    for path in sorted(folder.glob("*.yaml")):
        config = yaml.safe_load(path.read_text()) or {}
        sweeps = _sweeps(config)
        methods = [str(m) for m in sweeps.get("method", [])]
        for entry in config.get("defaults") or []:
            if isinstance(entry, dict) and "override /method" in entry:
                methods.append(entry["override /method"])
        methods = methods or list(BUILT_IN)
        # method values: the file's own, those of the sensitivity files it sweeps over, and
        # method.<param> sweeps; ${name} is replaced by every value name sweeps over
        blocks = [config.get("method") or {}]
        for option in sweeps.get("+experiment/sensitivity", []):
            extra = yaml.safe_load((folder / "sensitivity" / f"{option}.yaml").read_text())
            blocks.append(extra.get("method") or {})
        values: dict[str, list] = {}
        for block in blocks:
            for param, value in block.items():
                if isinstance(value, str) and value.startswith("${"):
                    source = value[2:-1]
                    values.setdefault(param, []).extend(sweeps.get(source, [config.get(source)]))
                else:
                    values.setdefault(param, []).append(value)
        for key, swept in sweeps.items():
            if key.startswith("method."):
                values.setdefault(key.removeprefix("method."), []).extend(swept)
        grid = ((config.get("tune") or {}).get("grid")) or {}
        for param, listed in grid.items():
            values.setdefault(param, []).extend(listed or [])
        cases += [
            (path.name, method, param, value)
            for method in methods
            for param, listed in values.items()
            for value in listed
        ]
    return cases


EXPERIMENT_CASES = _experiment_cases()


def test_experiment_files_were_read():
    # paper_sensitivity sweeps lambda1 and lambda2 of pml3er over 10^-3 .. 10^3
    swept = {(m, p) for f, m, p, _ in EXPERIMENT_CASES if f == "paper_sensitivity.yaml"}
    assert {("pml3er", "lambda1"), ("pml3er", "lambda2")} <= swept
    values = {v for f, _, p, v in EXPERIMENT_CASES if p == "lambda2"}
    assert {0.001, 1000.0} <= values


@pytest.mark.parametrize("path, method, param, value", EXPERIMENT_CASES)
def test_experiment_values_satisfy_the_constraints(path, method, param, value):
    validate_parameters({param: value}, declared_constraints(BUILT_IN[method]))


PRESETS = sorted(
    (ROOT / "plugins" / "pmlbench-example" / "pmlbench_example" / "conf" / "method").glob("*.yaml")
)


@pytest.mark.parametrize("path", PRESETS, ids=[p.stem for p in PRESETS])
def test_example_presets_satisfy_their_methods_constraints(path):
    config = yaml.safe_load(path.read_text())
    base = next(d for d in config["defaults"] if isinstance(d, str) and d != "_self_")
    available = registry.plugins("method")
    if base not in available:
        pytest.skip(f"the example plugin (method {base!r}) is not installed")
    cls = available[base].load()
    values = {**_constructor_defaults(cls), **config.get("method", {})}
    validate_parameters(values, declared_constraints(cls))


# values the method pages, docs/tuning.md and the README show on command lines
DOCUMENTED = [
    ("mlknn", "method.k=15"),
    ("mlknn", "tune.grid.k=[3,5,10]"),
    ("mlknn", "tune.grid.s=[0.5,1]"),
    ("lift", "method.n_jobs=2"),
    ("lift", "method.ratio=0.2"),
    ("particle_map", "method.include_self=true"),
    ("particle_map", "method.threshold=0.3"),
    ("particle_map", "method.credible=out_of_fold"),
    ("particle_map", "method.zero_weight_rows=uniform"),
    ("particle_vls", "method.n_jobs=2"),
    ("particle_vls", "method.votes=accuracy"),
    ("particle_vls", "method.loss=hinge"),
    ("pml3er", "method.alpha=0.05"),
    ("pml3er", "method.lambda2=100"),
    ("pml3er", "method.init=enrichment"),
    ("pml3er", "method.propagate_transpose=false"),
    ("pml3er", "tune.grid.lambda2=[1,10,100]"),
    ("pml_ni", "method.beta=1"),
    ("pml_ni", "method.gamma=0.1"),
    ("pml_ni", "tune.grid.beta=[0.1,0.5,1]"),
    ("pml_lrs", "method.lambda_e=1"),
    ("pml_lrs", "method.lambda_y=0.1"),
    ("pml_lrs", "tune.grid.lambda_y=[0.1,1,10]"),
    ("external", "method.file_format=mat"),
    ("external", "method.timeout=3600"),
    ("external", "method.params={lambda: 1}"),
]


@pytest.mark.parametrize("name, override", DOCUMENTED)
def test_documented_values_satisfy_the_constraints(name, override):
    key = override.partition("=")[0].rpartition(".")[2]
    values = _parse(override)
    if override.startswith("tune.grid."):
        values = values[0]
    for value in values:
        validate_parameters({key: value}, declared_constraints(METHODS[name]))


# --- checks that need the data ------------------------------------------------------------


def _data(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    X = rng.random((n, 4))
    Y = (rng.random((n, 3)) < 0.5).astype(np.uint8)
    Y[np.arange(n), rng.integers(0, 3, n)] = 1
    return X, Y


@pytest.mark.parametrize(
    "estimator, key, bound",
    [
        (MLkNN(k=25), "method.k = 25", "method.k <= 19"),
        (PML3ER(k=20), "method.k = 20", "method.k <= 19"),
        (ParticleMAP(k=20), "method.k = 20", "method.k <= 19"),
        (ParticleMAP(mlknn_k=20), "method.mlknn_k = 20", "method.mlknn_k <= 19"),
        (ParticleVLS(include_self=True, k=21), "method.k = 21", "method.k <= 20"),
    ],
)
def test_too_many_neighbours_names_the_parameter_and_the_bound(rng, estimator, key, bound):
    X, Y = _data(20, rng)
    with pytest.raises(PmlbenchError, match="neighbours requested") as error:
        estimator.fit(X, Y)
    assert key in str(error.value) and bound in str(error.value)


def test_the_neighbour_bound_is_exact(rng):
    X, Y = _data(20, rng)
    MLkNN(k=19).fit(X, Y)
    ParticleMAP(k=19, mlknn_k=19).fit(X, Y)


def test_out_of_fold_bounds_are_exact(rng):
    # 32 instances in 5 folds: held-out folds of 7, 7, 6, 6, 6, so stage 1 sees at least 25
    X, Y = _data(32, rng)
    ParticleMAP(credible="out_of_fold", k=24, random_state=0).fit(X, Y)
    with pytest.raises(PmlbenchError, match=r"method.k = 25 .* use method.k <= 24"):
        ParticleMAP(credible="out_of_fold", k=25, random_state=0).fit(X, Y)
    with pytest.raises(PmlbenchError, match=r"method.n_folds = 40 folds .* method.n_folds <= 32"):
        ParticleMAP(credible="out_of_fold", n_folds=40).fit(X, Y)


def test_stage1_params_use_the_same_constraints():
    with pytest.raises(PmlbenchError, match=r"method.alpha must be a number in \[0, 1\)"):
        Stage1Params(alpha=1.0).check()
    Stage1Params().check()


# --- the constraint forms -----------------------------------------------------------------


def test_booleans_are_not_numbers():
    assert not Interval(int, 0, None).accepts(True)
    assert not Interval(float).accepts(False)
    assert not Type(int).accepts(True)
    assert Type(bool).accepts(True)
    assert not Options((0, 1)).accepts(False)
    assert not Options((True, False)).accepts(1)
    assert Options((True, False)).accepts(True)


def test_integers_stay_integers():
    interval = Interval(int, 1, None)
    assert interval.accepts(3) and interval.accepts(np.int64(3)) and interval.accepts(np.uint32(3))
    for value in (3.5, 3.0, np.float64(3.0), "3", None, [3]):
        assert not interval.accepts(value)
    assert Interval(float, 0, None).accepts(10)  # a real interval takes integers


def test_nan_and_inf_are_refused_unless_asked_for():
    for value in (math.nan, math.inf, -math.inf, np.nan, np.float32("inf")):
        assert not Interval(float).accepts(value)
        assert not Interval(float, 0, None).accepts(value)
    assert Interval(float, finite=False).accepts(math.inf)
    assert not Interval(float, finite=False).accepts(math.nan)


@pytest.mark.parametrize(
    "closed, low_in, high_in, shown",
    [
        ("both", True, True, "a number in [0, 1]"),
        ("left", True, False, "a number in [0, 1)"),
        ("right", False, True, "a number in (0, 1]"),
        ("neither", False, False, "a number in (0, 1)"),
    ],
)
def test_closed_and_open_bounds(closed, low_in, high_in, shown):
    interval = Interval(float, 0, 1, closed=closed)
    assert interval.accepts(0) is low_in and interval.accepts(0.0) is low_in
    assert interval.accepts(1) is high_in and interval.accepts(1.0) is high_in
    assert interval.accepts(0.5)
    assert not interval.accepts(-1e-12) and not interval.accepts(1 + 1e-12)
    assert interval.describe() == shown


def test_unbounded_sides_and_large_integers():
    assert Interval(int, None, -1).describe() == "an integer in (-inf, -1]"
    assert Interval(float, 0, None, closed="neither").describe() == "a number in (0, inf)"
    assert Interval(int).describe() == "an integer"
    assert Interval(float).describe() == "a finite number"
    seed = Interval(int, 0, 2**32 - 1)
    assert seed.describe() == "an integer in [0, 4294967295]"
    assert seed.accepts(2**32 - 1) and not seed.accepts(2**32)
    assert Interval(float, 0, None).accepts(10**400)  # beyond float range, still exact


def test_bad_forms_are_refused_when_declared():
    with pytest.raises(TypeError):
        Interval(str, 0, 1)
    with pytest.raises(TypeError):
        Interval(int, 0, 1, closed="open")  # type: ignore[arg-type]


def test_options_never_raise_on_odd_values():
    options = Options(("a", "b"))
    assert options.accepts("a") and not options.accepts("c")
    assert not options.accepts(np.array(["a", "b"]))
    assert not options.accepts(None)
    assert options.describe() == "one of 'a', 'b'"


def test_dict_and_none():
    mapping = Dict(reserved=("out",))
    assert mapping.accepts({}) and mapping.accepts({"lam": 1})
    assert not mapping.accepts({"out": 1}) and not mapping.accepts({1: 2})
    assert not mapping.accepts([("lam", 1)])
    check_parameter("x", None, [None, Interval(int, 1, None)], prefix="method")
    with pytest.raises(PmlbenchError, match=r"^method.x must be null or an integer in \[1, inf\)"):
        check_parameter("x", 0, [None, Interval(int, 1, None)], prefix="method")


def test_error_lines():
    with pytest.raises(PmlbenchError) as error:
        check_parameter("k", 10.0, [Interval(int, 1, None)], prefix="method")
    assert str(error.value) == (
        "method.k must be an integer in [1, inf), got 10.0 "
        "(write 10: integer parameters take no decimal point)"
    )
    with pytest.raises(PmlbenchError) as error:
        check_parameter("grid", np.arange(30).reshape(10, 3), [Type(list)], prefix="tune")
    assert str(error.value).startswith("tune.grid must be a list, got array(")
    assert "\n" not in str(error.value)


def test_validate_parameters_checks_only_what_is_declared_and_given():
    constraints = {"k": [Interval(int, 1, None)], "s": [Interval(float, 0, None)]}
    validate_parameters({"k": 3, "other": "anything"}, constraints)
    assert declared_constraints(object()) == {}
    assert declared_constraints(MLkNN) is MLkNN.parameter_constraints


def test_a_subclass_with_its_own_constructor_is_checked_on_its_own_parameters():
    class Wrapped(ExternalCommand):
        def __init__(self, lam: float = 1.0, timeout: float = 10.0):
            self.lam = lam
            self.timeout = timeout

    Wrapped()._validate_params()  # no command, file_format, ... attributes: not checked
    with pytest.raises(PmlbenchError, match="method.timeout must be a number in"):
        Wrapped(timeout=-1)._validate_params()
