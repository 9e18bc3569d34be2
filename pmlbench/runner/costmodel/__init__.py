"""A cost model per method: a unit's CPU seconds from the size of its data and its fits.

For each method, fitted by least squares to the CPU seconds the store records of finished
units hold (``scripts/fit_cost_model.py``)::

    cpu_seconds = exp(a) * n_train**b * d**c * q**e * fits

with ``n_train`` the training instances of a split, ``d`` the features, ``q`` the labels and
``fits`` the unit's work in fits of its method on the whole training split (:class:`Work`)::

    fits = 1 + kappa * G * F * (cv - 1) / cv + B

- 1: the final fit (predicting the test part is counted in it);
- tuning (pmlbench.protocol.tuning) on ``G`` >= 2 grid points, each fitted on ``F`` folds of
  (cv - 1) / cv of the rows: ``F`` = 1 for ``tune.procedure=holdout`` (the default), ``cv``
  for ``kfold``; a one-point grid is taken without cross-validation. ``kappa`` is what one
  grid point's fit costs against a fresh fit on that many rows, measured per method on the
  tuned records of the first source that has any (the median of tuning seconds / final-fit
  seconds / (G F (cv-1)/cv), both from the split's timings): below 1 for a method that
  shares work across grid points (its ``fit_grid`` hook); a method without tuned records
  gets the median of the measured methods' kappa (``default_kappa``; 1 when none is);
- ``B`` = cv_b - 1 for a ``global`` or ``per_label`` bipartition on out-of-fold training
  scores (``bipartition.training_scores=cv``, ``cv_b`` folds), else 0.

So a unit with the tuning its method's records had is estimated from those records alone,
and another grid or procedure costs its share more or less. On a dataset the method was
fitted on (a bundled dataset, as the sources hold it), the estimate is also multiplied by
that dataset's factor: exp of the mean log residual of its records, what the three sizes do
not tell (iterations to converge, sparsity, label structure); on any other dataset the
power law alone estimates. Each method is fitted to the
records of the first source (a result store or a tar archive of one) that holds it on at
least :data:`MIN_DATASETS` datasets: a tuned store before an older archive.

A method without a model (a plugin's, or one no source holds) is estimated by the
:data:`FALLBACK` rule: the median of the modelled methods' estimates of one fit on the same
data, times its fits with the default kappa.

The fitted coefficients ship in ``cost_model.json`` in this package's folder (a package of its
own: a data file of ``pmlbench.runner`` itself would enter every unit's content key, as the
package data of the modules a unit runs does), with each source's
SHA-256 and the git commits its records were computed at (a model fitted to older records
shows), and with the sizes of the sources' datasets, so a dry run can estimate a unit on a
bundled dataset without loading it. The file also holds how far off the model is on its
records: per method, the ratio of estimated to recorded CPU seconds of a unit of a known
dataset, its dataset's factor taken from the dataset's other units (leave-one-unit-out), and
of a new dataset, each dataset's records estimated by a model fitted to the other datasets
(leave-one-dataset-out); for the fallback rule, each method's records estimated by the
median of the other methods' models.

The file also lists the units its sources hold as declined (``.na.json``: a method's cap
refused the data up front, pmlbench.errors.NotApplicable) and never as finished, by
:func:`unit_signature`: what the unit is, whatever code computed it and whichever split. A
dry run at another commit (whose keys differ) counts such a unit as expected to decline,
at no cost, instead of estimating it as a computed one.
"""

from __future__ import annotations

import hashlib
import math
import tarfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from pmlbench.runner.format import STORE_NOT_APPLICABLE_SUFFIX, from_json
from pmlbench.runner.units import content_key

MODEL_FILE = Path(__file__).with_name("cost_model.json")
FORM = "cpu_seconds = exp(a) * n_train^b * d^c * q^e * fits"
FITS = "fits = 1 + kappa * G * F * (cv - 1) / cv + B"
VALIDATION = "known dataset: leave-one-unit-out; new dataset: leave-one-dataset-out"
FALLBACK = "median of the modelled methods' estimates of one fit, times the unit's fits"
FALLBACK_NAME = "(fallback rule)"
MIN_DATASETS = 4  # a method is fitted to a source holding it on this many datasets
LEARNED_RULES = ("global", "per_label")  # bipartition rules that fit thresholds


@dataclass(frozen=True)
class Work:
    """The fits one unit makes, as counted in :data:`FITS` (``fits`` gives the number)."""

    grid_points: int = 1  # G; 1: nothing tuned, no cross-validation
    scored_folds: int = 0  # F: folds each grid point is fitted on
    fold_share: float = 0.0  # (cv - 1) / cv: the rows of one fold's fit
    extra_fits: float = 0.0  # B: the bipartition's out-of-fold fits

    def fits(self, kappa: float = 1.0) -> float:
        """The unit's fits in fits on the whole training split."""
        tuning = self.grid_points * self.scored_folds * self.fold_share if self.tuned else 0.0
        return 1.0 + kappa * tuning + self.extra_fits

    @property
    def tuned(self) -> bool:
        return self.grid_points > 1 and self.scored_folds > 0

    @property
    def tuning_share(self) -> float:
        """G F (cv - 1) / cv: the tuning's fits with kappa 1 (0 when nothing is tuned)."""
        return self.grid_points * self.scored_folds * self.fold_share if self.tuned else 0.0

    @classmethod
    def of(
        cls,
        tune: Mapping[str, Any] | None,
        bipartition: Mapping[str, Any] | None = None,
        *,
        grid_points: int | None = None,
    ) -> Work:
        """The work of a unit from its ``tune`` and ``bipartition`` nodes (a unit key's or a
        config's). ``grid_points`` overrides the count from ``tune.grid`` (a record's
        tuning lists the points it tried). A ``tune`` node without ``procedure`` is from
        before the option existed, when every fold was scored (``kfold``)."""
        tune = tune or {}
        points = _grid_points(tune.get("grid")) if grid_points is None else grid_points
        folds, share = 0, 0.0
        if points > 1:
            cv = _int(tune.get("cv"), 5)
            folds = 1 if tune.get("procedure", "kfold") == "holdout" else cv
            share = (cv - 1) / cv
        extra = 0.0
        bipartition = bipartition or {}
        if bipartition.get("rule") in LEARNED_RULES:
            if bipartition.get("training_scores", "cv") == "cv":
                extra = float(_int(bipartition.get("cv"), 5) - 1)
        return cls(points, folds, share, extra)


def _int(value: Any, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except (TypeError, ValueError):
        return default


def _grid_points(grid: Any) -> int:
    if not isinstance(grid, Mapping):
        return 1
    points = 1
    for values in grid.values():
        if isinstance(values, (list, tuple)):
            points *= max(len(values), 1)
    return points


@dataclass(frozen=True)
class Observation:
    """One finished unit: its method, data size, work and CPU seconds."""

    key: str
    method: str
    dataset: str
    n_train: float
    d: float
    q: float
    work: Work
    cpu_seconds: float
    # kappa of this unit: tuning seconds / final-fit seconds / tuning share (None: untuned)
    kappa: float | None = None


def record_work(record: Mapping[str, Any]) -> Work:
    """The work a store record's unit did: its tuning as the split records it (the grid points
    tried, ``cv``, ``procedure``), else as its unit key says."""
    unit = record.get("unit") or {}
    split = record.get("split") or {}
    tuning = split.get("tuning") if isinstance(split, Mapping) else None
    tune = unit.get("tune") or {}
    points = None
    if isinstance(tuning, Mapping) and isinstance(tuning.get("grid"), list):
        points = len(tuning["grid"])
        tune = {**tune, **{k: tuning[k] for k in ("cv", "procedure") if tuning.get(k)}}
    return Work.of(tune, unit.get("bipartition"), grid_points=points)


def observation(record: Mapping[str, Any]) -> Observation | None:
    """The observation of a finished store record (None: not finished, or sizes missing)."""
    if record.get("status", "done") != "done":
        return None
    try:
        unit, data, split = record["unit"], record["dataset"], record["split"]
        cpu = float(record["run"]["cpu_seconds"])
        n_train = float(split["n_train"])
        d, q = float(data["d"]), float(data["l"])
        method = str(unit["method"]["name"])
    except (KeyError, TypeError, ValueError):
        return None
    if not all(math.isfinite(v) and v > 0 for v in (cpu, n_train, d, q)):
        return None
    work = record_work(record)
    return Observation(
        str(record.get("key", "")),
        method,
        str(data["name"]),
        n_train,
        d,
        q,
        work,
        cpu,
        _unit_kappa(split, work),
    )


def _unit_kappa(split: Mapping[str, Any], work: Work) -> float | None:
    """kappa of one tuned unit from its split's timings (None: untuned or not timed)."""
    tuning = split.get("tuning") or {}
    try:
        tuning_seconds, fit_seconds = float(tuning["seconds"]), float(split["fit_seconds"])
    except (KeyError, TypeError, ValueError):
        return None
    final = fit_seconds - tuning_seconds
    if not work.tuned or tuning_seconds <= 0 or final <= 0:
        return None
    return tuning_seconds / final / work.tuning_share


# ----------------------------------------------------------------------------- sources


@dataclass
class Source:
    """Store records to fit to: a result store's directory or a tar archive of one."""

    name: str  # as the docs show it
    sha256: str  # of the archive; of a directory, over its record files' names and contents
    records: list[dict[str, Any]]
    declined: list[dict[str, Any]] = field(default_factory=list)  # its .na.json outcomes


def archive_records(path: str | Path, *, declined: bool = False) -> Iterator[dict[str, Any]]:
    """The finished-unit records in a tar archive of ``<store>/<key>.json`` files (other
    outcome files skipped), or with ``declined`` its declined units' (``.na.json``) only."""
    with tarfile.open(path) as archive:
        for member in archive:
            name = member.name.rsplit("/", 1)[-1]
            wanted = (
                name.endswith(STORE_NOT_APPLICABLE_SUFFIX)
                if declined
                else name.count(".") == 1 and name.endswith(".json")
            )
            if not member.isfile() or not wanted:
                continue
            handle = archive.extractfile(member)
            if handle is not None:
                yield from_json(handle.read().decode("utf-8"))


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file, hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_source(path: str | Path, name: str | None = None) -> Source:
    """The finished-unit records of a store directory or a tar archive of one, and its
    declined units' outcomes."""
    path = Path(path)
    name = name or str(path)
    if path.is_dir():
        from pmlbench.runner.format import store_outcome_files, store_record_files
        from pmlbench.runner.status import Status
        from pmlbench.runner.store import iter_outcomes, iter_records

        digest = hashlib.sha256()
        outcomes = [file for _, file in store_outcome_files(path, Status.NOT_APPLICABLE)]
        for file in sorted([*store_record_files(path), *outcomes]):
            digest.update(file.name.encode("utf-8") + b"\0" + file.read_bytes() + b"\0")
        declined = list(iter_outcomes(path, Status.NOT_APPLICABLE))
        return Source(name, digest.hexdigest(), list(iter_records(path)), declined)
    return Source(
        name,
        file_sha256(path),
        list(archive_records(path)),
        list(archive_records(path, declined=True)),
    )


def unit_signature(unit: Mapping[str, Any]) -> str:
    """What a unit is, whatever code computes it and whichever split: the content key of its
    description (a record's ``unit``) without its code digests, key schema and split. Units of
    one signature are the same method, parameters, data, noise and protocol; a method's caps
    decide on those, so such units decline alike."""
    return content_key({k: v for k, v in unit.items() if k not in ("code", "schema", "split")})


def declined_units(sources: Iterable[Source]) -> list[dict[str, Any]]:
    """The units the sources hold as declined and never as finished, one entry per
    :func:`unit_signature`, with its method and dataset, the first source that declined it and
    its splits there."""
    sources = list(sources)
    finished = {unit_signature(r["unit"]) for s in sources for r in s.records if "unit" in r}
    entries: dict[str, dict[str, Any]] = {}
    for source in sources:
        for outcome in source.declined:
            try:
                unit = outcome["unit"]
                signature = unit_signature(unit)
                method, dataset = str(unit["method"]["name"]), str(unit["dataset"]["name"])
            except (KeyError, TypeError, ValueError):
                continue
            if signature in finished:
                continue
            entry = entries.setdefault(
                signature,
                {
                    "signature": signature,
                    "method": method,
                    "dataset": dataset,
                    "source": source.name,
                    "splits": 0,
                },
            )
            if entry["source"] == source.name:
                entry["splits"] += 1
    return sorted(entries.values(), key=lambda e: (e["method"], e["dataset"], e["signature"]))


# ----------------------------------------------------------------------------- fitting


def _design(obs: list[Observation]) -> np.ndarray:
    return np.column_stack(
        [
            np.ones(len(obs)),
            np.log([o.n_train for o in obs]),
            np.log([o.d for o in obs]),
            np.log([o.q for o in obs]),
        ]
    )


def method_kappa(obs: list[Observation]) -> float | None:
    """The median kappa of a method's tuned units (None when none was timed)."""
    values = [o.kappa for o in obs if o.kappa is not None and math.isfinite(o.kappa)]
    return float(np.median(values)) if values else None


@dataclass(frozen=True)
class MethodFit:
    """A method's fitted coefficients ``(a, b, c, e)``, kappa, and the mean log residual of
    each dataset it was fitted on (that dataset's factor, see the module docstring)."""

    coefficients: tuple[float, float, float, float]
    kappa: float
    residuals: Mapping[str, float] = field(default_factory=dict)

    def one_fit(self, n_train: float, d: float, q: float, dataset: str | None = None) -> float:
        """CPU seconds of one fit on ``n_train`` rows (of ``dataset``, when it is one the
        method was fitted on: times its factor)."""
        a, b, c, e = self.coefficients
        log = a + b * math.log(n_train) + c * math.log(d) + e * math.log(q)
        return math.exp(log + self.residuals.get(dataset, 0.0) if dataset else log)

    def estimate(
        self, n_train: float, d: float, q: float, work: Work, dataset: str | None = None
    ) -> float:
        return self.one_fit(n_train, d, q, dataset) * work.fits(self.kappa)


def _log_residuals(fit: MethodFit, obs: list[Observation]) -> list[float]:
    return [math.log(o.cpu_seconds / fit.estimate(o.n_train, o.d, o.q, o.work)) for o in obs]


def fit_method(obs: list[Observation], kappa: float | None = None) -> MethodFit:
    """Least-squares ``(a, b, c, e)`` of :data:`FORM` in logs, each unit's CPU seconds divided
    by its fits at ``kappa`` (default: the observations' own, else 1; minimum-norm when the
    sizes do not vary enough to tell every coefficient), and each dataset's mean log
    residual."""
    if not obs:
        raise ValueError("no observations to fit")
    if kappa is None:
        kappa = method_kappa(obs) or 1.0
    target = np.log([o.cpu_seconds / o.work.fits(kappa) for o in obs])
    coefficients, *_ = np.linalg.lstsq(_design(obs), target, rcond=None)
    a, b, c, e = (float(v) for v in coefficients)
    plain = MethodFit((a, b, c, e), kappa)
    by_dataset: dict[str, list[float]] = {}
    for o, r in zip(obs, _log_residuals(plain, obs), strict=True):
        by_dataset.setdefault(o.dataset, []).append(r)
    residuals = {ds: float(np.mean(values)) for ds, values in sorted(by_dataset.items())}
    return MethodFit((a, b, c, e), kappa, residuals)


def held_out_ratios(obs: list[Observation], kappa: float) -> list[tuple[float, Observation]]:
    """(estimated / recorded CPU seconds, observation) of every observation, each dataset's
    observations estimated by a model fitted to the other datasets' (leave-one-dataset-out:
    a dataset the model has not seen)."""
    ratios = []
    for dataset in sorted({o.dataset for o in obs}):
        train = [o for o in obs if o.dataset != dataset]
        if not train:
            continue
        fit = fit_method(train, kappa)
        for o in obs:
            if o.dataset == dataset:
                ratios.append((fit.estimate(o.n_train, o.d, o.q, o.work) / o.cpu_seconds, o))
    return ratios


def known_dataset_ratios(fit: MethodFit, obs: list[Observation]) -> list[tuple[float, Observation]]:
    """(estimated / recorded CPU seconds, observation) of every observation of a dataset with
    other observations, its dataset's factor taken from those others (leave-one-unit-out:
    another noise level, split or parameter of a dataset the model has seen)."""
    plain = MethodFit(fit.coefficients, fit.kappa)
    residuals = _log_residuals(plain, obs)
    ratios = []
    for i, o in enumerate(obs):
        others = [r for j, (r, p) in enumerate(zip(residuals, obs, strict=True))
                  if j != i and p.dataset == o.dataset]  # fmt: skip
        if others:
            factor = math.exp(float(np.mean(others)))
            ratios.append((plain.estimate(o.n_train, o.d, o.q, o.work) * factor / o.cpu_seconds, o))
    return ratios


def fallback_estimate(
    fits: Iterable[MethodFit], n_train: float, d: float, q: float, work: Work, kappa: float
) -> float | None:
    """The :data:`FALLBACK` rule's CPU seconds (None: no method is modelled)."""
    one = [f.one_fit(n_train, d, q) for f in fits]
    return float(np.median(one)) * work.fits(kappa) if one else None


def accuracy(pairs: list[tuple[float, Observation]]) -> dict[str, Any] | None:
    """Median, 10th and 90th percentiles of estimated / recorded CPU seconds per unit, and
    the ratio of their sums (None: no pairs)."""
    if not pairs:
        return None
    ratios = [r for r, _ in pairs]
    estimated = sum(r * o.cpu_seconds for r, o in pairs)
    return {
        "units": len(pairs),
        "median": round(float(np.median(ratios)), 3),
        "p10": round(float(np.percentile(ratios, 10)), 3),
        "p90": round(float(np.percentile(ratios, 90)), 3),
        "sum": round(estimated / sum(o.cpu_seconds for _, o in pairs), 3),
    }


def method_observations(records: Iterable[Mapping[str, Any]]) -> dict[str, list[Observation]]:
    """The observations of finished records by method, each method's in a fixed order."""
    by_method: dict[str, list[Observation]] = {}
    for record in records:
        o = observation(record)
        if o is not None:
            by_method.setdefault(o.method, []).append(o)
    # a fixed order, whatever order the source gave: the fit is then the same to the last bit
    return {
        m: sorted(obs, key=lambda o: (o.dataset, o.key, o.cpu_seconds))
        for m, obs in sorted(by_method.items())
    }


def fit_model(sources: list[Source], command: str = "") -> dict[str, Any]:
    """The cost model (the content of :data:`MODEL_FILE`) fitted to ``sources``: each method
    to the first source holding it on :data:`MIN_DATASETS` datasets or more."""
    chosen: dict[str, tuple[int, list[Observation]]] = {}
    datasets: dict[str, dict[str, int]] = {}
    described = []
    observed: list[dict[str, list[Observation]]] = []  # by source, by method
    for index, source in enumerate(sources):
        commits: set[str] = set()
        for record in source.records:
            data = record.get("dataset") or {}
            try:
                size = {"n": int(data["n"]), "d": int(data["d"]), "q": int(data["l"])}
                datasets.setdefault(str(data["name"]), size)
            except (KeyError, TypeError, ValueError):
                pass
        observed.append(method_observations(source.records))
        for method, obs in observed[-1].items():
            if method not in chosen and len({o.dataset for o in obs}) >= MIN_DATASETS:
                chosen[method] = (index, obs)
        for where, obs in chosen.values():
            if where == index:
                keys = {o.key for o in obs}
                commits |= {
                    str(r["run"]["git_commit"])
                    for r in source.records
                    if r.get("key") in keys and (r.get("run") or {}).get("git_commit")
                }
        described.append(
            {
                "name": source.name,
                "sha256": source.sha256,
                "records": len(source.records),
                "git_commits": sorted(commits),
            }
        )
    # kappa: from the tuned records of the first source that has any of the method's
    kappas: dict[str, float] = {}
    for method in chosen:
        for by_method in observed:
            found = method_kappa(by_method.get(method, []))
            if found is not None:
                kappas[method] = round(found, 4)  # as the file holds it: refits from it agree
                break
    default_kappa = round(float(np.median(list(kappas.values()))), 4) if kappas else 1.0
    methods: dict[str, Any] = {}
    fits: dict[str, MethodFit] = {}
    for method, (index, obs) in sorted(chosen.items()):
        fits[method] = fit_method(obs, kappas.get(method, default_kappa))
        methods[method] = method_entry(
            fits[method], obs, sources[index].name, kappa_measured=method in kappas
        )
    model = {
        "form": FORM,
        "fits": FITS,
        "validation": VALIDATION,
        "fallback": FALLBACK,
        "command": command,
        "sources": described,
        "default_kappa": default_kappa,
        "methods": methods,
        "fallback_accuracy": _fallback_accuracy(chosen, fits, default_kappa),
        "datasets": dict(sorted(datasets.items())),
        "declined": declined_units(sources),
    }
    return model


def method_entry(
    fit: MethodFit, obs: list[Observation], source: str, *, kappa_measured: bool
) -> dict[str, Any]:
    """A method's entry in the model file: its fit to ``obs`` (the records of ``source``) and
    how far off it is on them (:func:`known_dataset_ratios`, :func:`held_out_ratios`)."""
    return {
        "source": source,
        "coefficients": [round(v, 6) for v in fit.coefficients],
        "kappa": fit.kappa,
        "kappa_measured": kappa_measured,
        "dataset_factors": {ds: round(r, 4) for ds, r in fit.residuals.items()},
        "records": len(obs),
        "datasets": len({o.dataset for o in obs}),
        "tuning": _typical_work(obs),
        "known_dataset": accuracy(known_dataset_ratios(fit, obs)),
        "new_dataset": accuracy(held_out_ratios(obs, fit.kappa)),
    }


def _typical_work(obs: list[Observation]) -> dict[str, Any]:
    """The work most of a method's records did (for the docs: what the model was fitted on)."""
    counts: dict[Work, int] = {}
    for o in obs:
        counts[o.work] = counts.get(o.work, 0) + 1
    work = min(counts, key=lambda w: (-counts[w], tuple(asdict(w).values())))
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in asdict(work).items()}


def _fallback_accuracy(
    chosen: Mapping[str, tuple[int, list[Observation]]],
    fits: Mapping[str, MethodFit],
    kappa: float,
) -> dict[str, Any] | None:
    """How far off the fallback rule is: each method's records estimated by the median of the
    other methods' models (None: fewer than two methods)."""
    pairs: list[tuple[float, Observation]] = []
    for method, (_, obs) in sorted(chosen.items()):
        others = [f for m, f in sorted(fits.items()) if m != method]
        if not others:
            return None
        for o in obs:
            value = fallback_estimate(others, o.n_train, o.d, o.q, o.work, kappa)
            if value is not None:
                pairs.append((value / o.cpu_seconds, o))
    found = accuracy(pairs)
    return None if found is None else {**found, "methods": len(chosen)}


def accuracy_table(model: Mapping[str, Any]) -> str:
    """The model's accuracy on its records as a Markdown table, one row per method (and one
    for the fallback rule): estimated / recorded CPU seconds per unit (median, 10th and 90th
    percentiles) and of the sums, for a unit of a dataset the model was fitted on (another
    noise level, split or parameter: leave-one-unit-out) and of a dataset it was not
    (leave-one-dataset-out)."""
    several = len({entry["source"] for entry in model["methods"].values()}) > 1
    lines = [
        "| method | " + ("fitted to | " if several else "") + "units | datasets | "
        "known dataset: median | 90th pct. | sum | new dataset: median | 10th pct. | "
        "90th pct. | sum |",
        "|---|" + ("---|" if several else "") + "--:|" * 9,
    ]

    def cells(entry: Mapping[str, Any] | None, *keys: str) -> str:
        if not entry:
            return " | ".join("-" for _ in keys)
        return " | ".join(f"{entry[k]:.2f}" for k in keys)

    for method, entry in model["methods"].items():
        where = f"{entry['source']} | " if several else ""
        lines.append(
            f"| {method} | {where}{entry['records']} | {entry['datasets']} | "
            f"{cells(entry['known_dataset'], 'median', 'p90', 'sum')} | "
            f"{cells(entry['new_dataset'], 'median', 'p10', 'p90', 'sum')} |"
        )
    fallback = model.get("fallback_accuracy")
    if fallback:
        where = "the other methods | " if several else ""
        lines.append(
            f"| {FALLBACK_NAME} | {where}{fallback['units']} | {fallback['methods']} methods | "
            f"{cells(None, 'median', 'p90', 'sum')} | "
            f"{cells(fallback, 'median', 'p10', 'p90', 'sum')} |"
        )
    return "\n".join(lines)


# ----------------------------------------------------------------------------- estimates


@dataclass(frozen=True)
class Estimate:
    """CPU seconds of one unit and how they were estimated: ``model`` (the method's own) or
    ``fallback`` (:data:`FALLBACK`)."""

    seconds: float
    how: str


def _coefficients(values: Iterable[float]) -> tuple[float, float, float, float]:
    a, b, c, e = (float(v) for v in values)
    return a, b, c, e


class CostModel:
    """The fitted cost model: estimates a unit's CPU seconds from its data's size and work."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.data = dict(data)
        self.methods: dict[str, dict[str, Any]] = dict(data.get("methods") or {})
        self.datasets: dict[str, dict[str, int]] = dict(data.get("datasets") or {})
        self.declined: dict[str, dict[str, Any]] = {
            str(e["signature"]): dict(e) for e in data.get("declined") or []
        }
        self.fits = {
            name: MethodFit(
                _coefficients(entry["coefficients"]),
                float(entry.get("kappa", 1.0)),
                dict(entry.get("dataset_factors") or {}),
            )
            for name, entry in self.methods.items()
        }

    @classmethod
    def load(cls, path: str | Path = MODEL_FILE) -> CostModel:
        """Read a model file (by default the one shipped with pmlbench)."""
        return cls(from_json(Path(path).read_text(encoding="utf-8")))

    def dataset_size(self, name: str) -> tuple[int, int, int] | None:
        """``(n, d, q)`` of a dataset the model's sources hold (None: not there)."""
        size = self.datasets.get(name)
        return None if size is None else (size["n"], size["d"], size["q"])

    @property
    def default_kappa(self) -> float:
        """The kappa of a method without a model (or without tuned records)."""
        return float(self.data.get("default_kappa", 1.0))

    def kappa(self, method: str) -> float:
        """The method's kappa (:attr:`default_kappa` for a method without a model)."""
        fit = self.fits.get(method)
        return self.default_kappa if fit is None else fit.kappa

    def estimate(
        self,
        method: str,
        n_train: float,
        d: float,
        q: float,
        work: Work = Work(),
        dataset: str | None = None,
    ) -> Estimate | None:
        """CPU seconds of one unit: the method's model (with the factor of ``dataset``, a
        dataset of the model's sources as they hold it, when the method was fitted on it),
        else the fallback rule (None: a size is not positive, or nothing is modelled)."""
        if not all(v > 0 for v in (n_train, d, q)):
            return None
        fit = self.fits.get(method)
        if fit is not None:
            return Estimate(fit.estimate(n_train, d, q, work, dataset), "model")
        value = fallback_estimate(self.fits.values(), n_train, d, q, work, self.default_kappa)
        return None if value is None else Estimate(value, "fallback")

    def provenance(self) -> str:
        """What the model was fitted to: ``docs/leaderboard-results.tar.xz sha256 1a2b3c4d``
        (each source that a method's model comes from)."""
        used = {entry.get("source") for entry in self.methods.values()}
        parts = [
            f"{s['name']} sha256 {str(s['sha256'])[:8]}"
            for s in self.data.get("sources") or []
            if s.get("name") in used
        ]
        return " and ".join(parts) or "?"


@lru_cache(maxsize=1)
def shipped_model() -> CostModel | None:
    """The model shipped with pmlbench (None when its file is missing or unreadable)."""
    try:
        return CostModel.load()
    except (OSError, ValueError, KeyError, TypeError):
        return None
