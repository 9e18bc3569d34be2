"""Fit time and peak memory of every method as the data grow, with fitted exponents.

Two growth series (issue 13, item 3):

- ``n``: random subsamples of corel16k001 (500 features, 153 labels) of 1,000 to all 13,766
  instances, every instance used for training;
- ``labels``: the first q labels (in a fixed random order) of delicious (500 features,
  983 labels), q from 50 to 983, on a fixed random subsample of instances (``--label-rows``,
  default 3,000, to keep the default run near 20 minutes on a 2-core machine; ``0`` uses
  all 16,105).

Candidates come from the uniform noise model at rate 1.0 (seed 0), every method runs with
its default hyper-parameters (LIFT without its ``max_label_instances`` cap, which would cut
both curves short), no tuning and no cache; methods that refuse a size up front (PML-LD
above its ``max_train``, PARTICLE-VLS above its label-pair cap) are listed as n/a there.
Each (method, size) is one fit in a fresh subprocess, so runs do not share caches or memory:
the fit's wall and CPU seconds (joblib worker processes included), the subprocess's peak
resident memory (``ru_maxrss``) and its growth over the resident memory just before the fit
(``fit MB``: what the fit itself holds at its peak; for LIFT, whose labels are fitted in
joblib worker processes, the largest worker's peak is recorded too, ``worker_peak_mb``).
``plain_pml3er`` is the dense, deliberately plain transcription of PML3ER in
``benchmarks/bench_pml3er.py`` (dense X, dense n x n V), measured beside pmlbench's at every
size.

For each method and series the exponent b of ``time ≈ a·size^b`` (and of ``fit MB``) is the
least-squares slope of log(value) on log(size) over the sizes where the method ran.
Results go to a Markdown file and two plots (log-log, one per series) made with matplotlib:

    python benchmarks/bench_scaling.py                                # both series, all methods
    python benchmarks/bench_scaling.py --series n --methods mlknn pml3er plain_pml3er
    python benchmarks/bench_scaling.py --n-sizes 1000 4000 --label-sizes 50 200 \\
        --out docs/scaling_results.md --img docs/img
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

N_DATASET = "corel16k001"
LABEL_DATASET = "delicious"
N_SIZES = (1000, 2000, 4000, 8000, 13766)
LABEL_SIZES = (50, 100, 200, 400, 983)
PLAIN = "plain_pml3er"
SEED = 0


def builtin_plugins(kind: str, leave_out: str) -> list[str]:
    """Names of the plugins of ``kind`` that pmlbench itself registers (its own modules, not
    other distributions'), by name, without ``leave_out``."""
    from pmlbench.plugins import registry

    package = registry.KINDS[kind] + "."
    return [
        name
        for name, info in registry.plugins(kind).items()
        if info.entry_point.value.startswith(package) and name != leave_out
    ]


def builtin_methods() -> list[str]:
    """Methods registered by pmlbench itself, but the ``external`` command wrapper; LIFT
    without its labels x instances cap."""
    return [
        "lift:max_label_instances=null" if name == "lift" else name
        for name in builtin_plugins("method", leave_out="external")
    ]


def parse_variant(text: str) -> tuple[str, dict]:
    """``lift:solver=newton,tol=0.01`` -> ("lift", {"solver": "newton", "tol": 0.01})."""
    name, _, settings = text.partition(":")
    params: dict = {}
    for setting in filter(None, settings.split(",")):
        key, _, value = setting.partition("=")
        try:
            params[key] = json.loads(value)
        except json.JSONDecodeError:
            params[key] = value
    return name, params


def series_data(series: str, size: int, label_rows: int):
    """Features and candidate labels of one point of a growth series."""
    from pmlbench.noise.uniform import uniform_noise
    from pmlbench.plugins import registry

    rng = np.random.default_rng(SEED)
    if series == "n":
        data = registry.load("dataset", N_DATASET)()
        rows = np.sort(rng.permutation(data.n_instances)[:size])
        X, Y = data.X[rows], data.Y[rows]
    else:
        data = registry.load("dataset", LABEL_DATASET)()
        order = rng.permutation(data.Y.shape[1])
        rows = np.arange(data.n_instances)
        if label_rows:
            rows = np.sort(rng.permutation(data.n_instances)[:label_rows])
        X, Y = data.X[rows], data.Y[rows][:, np.sort(order[:size])]
    return X, uniform_noise(Y, np.random.default_rng(SEED + 1), rate=1.0)


def rss_mb() -> float:
    """Resident memory of this process now (Linux /proc)."""
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def fit_once(method: str, series: str, size: int, label_rows: int) -> dict:
    """One fit in this process: seconds, CPU seconds (workers included) and memory."""
    from pmlbench.errors import NotApplicable

    X, S = series_data(series, size, label_rows)
    record = {"method": method, "series": series, "size": size, "n": X.shape[0]}
    record["labels"] = S.shape[1]
    if method == PLAIN:
        sys.path.insert(0, str(Path(__file__).parent))
        from bench_pml3er import plain_pml3er
        from threadpoolctl import threadpool_limits

        def fit():
            with threadpool_limits(1, user_api="blas"):  # as pmlbench's PML3ER by default
                plain_pml3er(X, S)
    else:
        from pmlbench.plugins import registry

        name, params = parse_variant(method)
        estimator = registry.load("method", name)(**params)
        if "random_state" in estimator.get_params():
            estimator.set_params(random_state=SEED)

        def fit():
            estimator.fit(X, S)

    before = rss_mb()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    start, cpu = time.perf_counter(), time.process_time()
    try:
        fit()
    except NotApplicable as exc:
        record.update(status="n/a", message=str(exc))
        return record
    wall, own = time.perf_counter() - start, time.process_time() - cpu
    from joblib.externals.loky import get_reusable_executor

    get_reusable_executor().shutdown(wait=True)  # workers' CPU and memory reach RUSAGE_CHILDREN
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    record.update(
        status="ok",
        wall=wall,
        cpu=own + (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime),
        peak_mb=peak,
        fit_mb=max(peak - before, 0.0),
        # joblib workers (LIFT): the largest one's peak, its imports and data included
        worker_peak_mb=after.ru_maxrss / 1024,
    )
    return record


def measure(method: str, series: str, size: int, label_rows: int, timeout: float | None):
    """:func:`fit_once` in a fresh subprocess (stopped after ``timeout`` seconds)."""
    command = [sys.executable, __file__, "--unit", method, series, str(size), str(label_rows)]
    base = {"method": method, "series": series, "size": size}
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, start_new_session=True
        )
    except subprocess.TimeoutExpired:
        return {**base, "status": "timeout", "wall": timeout}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        error = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {**base, "status": "failed", "message": error}
    return json.loads(lines[-1])


def exponent(records: list[dict], key: str, last: int | None = None) -> float:
    """Least-squares slope of log(value) on log(size) over the sizes that ran (the ``last``
    largest of them only, if given: fixed costs weigh on the small sizes)."""
    points = sorted((r["size"], r[key]) for r in records if r["status"] == "ok" and r[key] > 0)
    points = points[-last:] if last else points
    if len(points) < 2:
        return float("nan")
    sizes, values = np.log([p[0] for p in points]), np.log([p[1] for p in points])
    return float(np.polyfit(sizes, values, 1)[0])


def cell(record: dict | None, key: str) -> str:
    if record is None:
        return ""
    if record["status"] == "ok":
        return f"{record[key]:.1f}" if record[key] < 100 else f"{record[key]:.0f}"
    return "n/a" if record["status"] == "n/a" else record["status"]


def tables(records: list[dict], series: str, sizes: list[int], methods: list[str]) -> str:
    """Markdown tables of fit seconds and fit MB per method and size, with exponents."""
    out = []
    for key, title in (
        ("wall", "fit seconds (wall)"),
        ("cpu", "fit CPU seconds"),
        ("fit_mb", "fit MB (peak RSS growth)"),
    ):
        out.append(f"\n{title}, series `{series}`:\n")
        out.append(
            "| method | "
            + " | ".join(str(s) for s in sizes)
            + " | exponent | exponent, largest 3 |"
        )
        out.append("|---|" + "---|" * (len(sizes) + 2))
        for method in methods:
            rows = [r for r in records if r["method"] == method and r["series"] == series]
            by_size = {r["size"]: r for r in rows}
            cells = [cell(by_size.get(s), key) for s in sizes]
            slopes = f"{exponent(rows, key):.2f} | {exponent(rows, key, last=3):.2f}"
            out.append(f"| {method} | " + " | ".join(cells) + f" | {slopes} |")
    refusals = {r["message"] for r in records if r["series"] == series and r["status"] == "n/a"}
    out += [f"\nn/a: {message}" for message in sorted(refusals)]
    return "\n".join(out)


def plot(records: list[dict], series: str, methods: list[str], path: Path) -> None:
    """Log-log plot of fit seconds and fit MB against size, one line per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6))
    colours = plt.get_cmap("tab20")
    for index, method in enumerate(methods):
        rows = sorted(
            (
                r
                for r in records
                if r["method"] == method and r["series"] == series and r["status"] == "ok"
            ),
            key=lambda r: r["size"],
        )
        if not rows:
            continue
        look = {
            "linestyle": "--" if method == PLAIN else "-",
            "marker": "osd^vP*X<>"[index % 10],
            "color": colours(index % 20),
            "label": method,
        }
        sizes = [r["size"] for r in rows]
        axes[0].plot(sizes, [r["wall"] for r in rows], **look)
        axes[1].plot(sizes, [max(r["fit_mb"], 1.0) for r in rows], **look)
    label = "training instances n (corel16k001)" if series == "n" else "labels q (delicious)"
    for ax, ylabel in zip(axes, ("fit seconds (wall)", "fit MB (peak RSS growth)"), strict=True):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(label)
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
    axes[1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.tight_layout()
    fig.savefig(path.with_suffix(".svg"))
    fig.savefig(path.with_suffix(".png"), dpi=100)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", nargs="+", choices=("n", "labels"), default=["n", "labels"])
    parser.add_argument(
        "--methods",
        nargs="+",
        help=f"default: every built-in method and {PLAIN}; name:key=value,... sets parameters",
    )
    parser.add_argument("--n-sizes", nargs="+", type=int, default=list(N_SIZES))
    parser.add_argument("--label-sizes", nargs="+", type=int, default=list(LABEL_SIZES))
    parser.add_argument("--label-rows", type=int, default=3000, help="0: all of delicious")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per fit")
    parser.add_argument("--json", type=Path, help="records: read (resume) and append")
    parser.add_argument("--out", type=Path, help="write the Markdown tables here")
    parser.add_argument("--img", type=Path, help="write scaling_<series>.svg and .png here")
    parser.add_argument("--unit", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.unit:
        method, series, size, label_rows = args.unit
        print(json.dumps(fit_once(method, series, int(size), int(label_rows))), flush=True)
        return 0
    methods = args.methods or [*builtin_methods(), PLAIN]
    records = []
    if args.json and args.json.exists():
        records = [json.loads(line) for line in args.json.read_text().splitlines() if line]
    done = {(r["method"], r["series"], r["size"]) for r in records}
    report = [f"load average at start: {os.getloadavg()}"]
    for series in args.series:
        sizes = args.n_sizes if series == "n" else args.label_sizes
        for size in sizes:
            for method in methods:
                if (method, series, size) in done:
                    continue
                if any(  # a method that timed out at a smaller size is not tried again
                    r["method"] == method and r["series"] == series and r["status"] == "timeout"
                    for r in records
                ):
                    record = {"method": method, "series": series, "size": size}
                    record["status"] = "skipped"
                else:
                    record = measure(method, series, size, args.label_rows, args.timeout)
                records.append(record)
                if args.json:
                    with args.json.open("a") as handle:
                        handle.write(json.dumps(record) + "\n")
                shown = f"{record['wall']:.1f} s" if "wall" in record else ""
                print(f"{series} {size} {method}: {record['status']} {shown}", flush=True)
        report.append(tables(records, series, sizes, methods))
        if args.img:
            args.img.mkdir(parents=True, exist_ok=True)
            plot(records, series, methods, args.img / f"scaling_{series}")
    report.append(f"\nload average at end: {os.getloadavg()}")
    text = "\n".join(report)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
