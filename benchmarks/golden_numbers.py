"""Check that a change to pmlbench's structure changes no number.

Runs a fixed set of experiments (every built-in method on genbase and medical, two splits,
no result store, no cache) and their report, and writes a canonical dump of every number
(results.csv of every job without its timing columns, and the report's CSV tables) into a
directory. Run it before and after a change and compare:

    python benchmarks/golden_numbers.py record /tmp/before      # on the old code
    python benchmarks/golden_numbers.py record /tmp/after       # on the new code
    python benchmarks/golden_numbers.py compare /tmp/before /tmp/after

``compare`` exits 1 and lists the files that differ (but for the values
:data:`KERNEL_DEPENDENT` names, which follow the BLAS kernel). ``--methods`` narrows the set (with a
single method there is no report to compare it with others: only its run_* files are written).
"""

from __future__ import annotations

import argparse
import csv
import filecmp
import io
import subprocess
import sys
import tempfile
from pathlib import Path

METHODS = (
    "mlknn",
    "pml3er",
    "ridge",
    "particle_map",
    "particle_vls",
    "pml_ni",
    "pml_lrs",
    "lift",
    "pmndp",
    "pml_lenfn",
    "schirn",
    "pml_plr",
    "pml_lrig",
    "ext_ridge",
)
DATASETS = ("genbase", "medical")
TIMING_COLUMNS = {"fit_seconds", "predict_seconds", "wall_seconds", "cpu_seconds", "seconds"}


def _canonical_csv(path: Path) -> str:
    """The CSV without timing columns, rows sorted, so job order does not matter."""
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    if not rows:
        return ""
    columns = [c for c in rows[0] if c not in TIMING_COLUMNS]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(sorted([row[c] for c in columns] for row in rows))
    return out.getvalue()


def _record_report(sweep: Path, reference: str, report: Path, out: Path) -> None:
    """The report on the sweep, with ``reference`` compared with the other methods, as
    report_* files in ``out``."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pmlbench",
            "report",
            str(sweep),
            "--reference",
            reference,
            "--out",
            str(report),
            "--no-plots",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    for table in sorted(report.glob("*.csv")):
        (out / f"report_{table.name}").write_text(_canonical_csv(table))


def record(out: Path, methods: list[str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        sweep = Path(tmp) / "sweep"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pmlbench",
                "-m",
                f"method={','.join(methods)}",
                f"dataset={','.join(DATASETS)}",
                "protocol.n_splits=2",
                "results_store=null",
                "cache_dir=null",
                "quiet=true",
                f"hydra.sweep.dir={sweep}",
            ],
            check=True,
        )
        for results in sorted(sweep.glob("*/results.csv")):
            name = results.parent.name.split("_", 1)[1]  # without the job number
            (out / f"run_{name}.csv").write_text(_canonical_csv(results))
        if len(set(methods)) > 1:
            _record_report(sweep, methods[0], Path(tmp) / "report", out)
        else:
            print(f"no report_* files: the report compares {methods[0]} with other methods")
    print(f"{len(list(out.iterdir()))} files in {out}")


# Values known to follow the BLAS kernel, measured (docs/benchmark-log.md, 2026-11-29): PML-LENFN's
# disambiguation AUC on medical (golden files: SkylakeX; Haswell moves split 0's value from
# 0.94612 to 0.94492; the test metrics do not move). file -> (columns, {column: value} of the
# rows they are masked in; empty: every row).
KERNEL_DEPENDENT = {
    "run_pml_lenfn_medical_uniform_rate1.csv": (("disambiguation_auc",), {}),
    "report_disambiguation.csv": (
        ("mean", "std"),
        {"measure": "disambiguation_auc", "dataset": "medical", "method": "pml_lenfn"},
    ),
}


def _masked(path: Path, columns: tuple[str, ...], rows: dict[str, str]) -> list[dict[str, str]]:
    """A CSV's rows with ``columns`` blanked where a row matches ``rows`` (all rows if empty)."""
    table = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))
    for row in table:
        if all(row.get(k) == v for k, v in rows.items()):
            row.update(dict.fromkeys(columns, "<kernel-dependent>"))
    return table


def same_file(before: Path, after: Path) -> bool:
    """Byte for byte, but for the values :data:`KERNEL_DEPENDENT` names."""
    if filecmp.cmp(before, after, shallow=False):
        return True
    if before.name not in KERNEL_DEPENDENT:
        return False
    columns, rows = KERNEL_DEPENDENT[before.name]
    return _masked(before, columns, rows) == _masked(after, columns, rows)


def compare(before: Path, after: Path) -> int:
    names = sorted({p.name for p in before.iterdir()} | {p.name for p in after.iterdir()})
    differ = [
        n
        for n in names
        if not (before / n).is_file()
        or not (after / n).is_file()
        or not same_file(before / n, after / n)
    ]
    for name in differ:
        print(f"differs: {name}")
    print(f"{len(names) - len(differ)} of {len(names)} files identical")
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="run the fixed set and dump its numbers")
    rec.add_argument("out", type=Path)
    rec.add_argument("--methods", nargs="+", default=list(METHODS))
    cmp_ = sub.add_parser("compare", help="compare two dumps byte by byte")
    cmp_.add_argument("before", type=Path)
    cmp_.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "record":
        record(args.out, args.methods)
        return 0
    return compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
