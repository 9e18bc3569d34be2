"""PML-LRS: CPU of one tuned unit against a baseline source tree, same run, and how far the
numbers moved.

Each unit is the first split of ``python -m pmlbench method=pml_lrs dataset=<d>
noise.rate=1.0`` as the tuned suite (``+experiment=suite``) runs it: the declared grid
(λ_E in {0.0625, 0.125, 0.25, 0.5}) under the default selection procedure (holdout:
``fit_grid`` on 80% of the training half, the winner refitted on all of it), then predict
and the seven metrics; result store and cache off, one BLAS thread. Every unit runs in a
fresh subprocess, the baseline tree's (``--baseline``, put first on ``PYTHONPATH``) and this
tree's in turn, ``--pairs`` times per dataset (the order alternating from pair to pair).
Printed per dataset:
the CPU seconds of the unit in each tree (process and any workers; the medians over the
pairs), their ratio (this tree / baseline), the λ_E each selected, and the largest absolute
difference of any metric value between the two trees.

    mkdir -p /tmp/base-lrs && git archive 3e96480 | tar -x -C /tmp/base-lrs
    python benchmarks/bench_pml_lrs.py --baseline /tmp/base-lrs
    python benchmarks/bench_pml_lrs.py --baseline /tmp/base-lrs --datasets bibtex --pairs 3

Without ``--baseline`` only this tree is measured. A delicious unit takes about 4 to 6 CPU
minutes per tree.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

# benchmarks/ is on sys.path: scripts run from it
from source_trees import TreeRunFailed, exit_on_sigterm, largest_difference, run_in_tree

HERE = Path(__file__).resolve().parents[1]
DATASETS = ("delicious", "bibtex")

_UNIT = """
import json, resource, sys, time
from pmlbench.api import run
import pmlbench
before = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = time.process_time()
result = run(sys.argv[2:], sys.argv[1], quiet=True)
cpu = time.process_time() - cpu
after = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu += (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
(split,) = result.splits
print(json.dumps({"cpu": cpu, "values": split.values, "tuned": split.tuned,
                  "source": pmlbench.__file__}))
"""


def run_unit(tree: Path, dataset: str, rate: float) -> dict:
    """One tuned unit (split 0) with ``tree``'s pmlbench, in a fresh process."""
    overrides = [
        "method=pml_lrs",
        f"dataset={dataset}",
        f"noise.rate={rate}",
        "protocol.n_splits=1",
        "results_store=null",
        "cache_dir=null",
    ]
    try:
        return run_in_tree(tree, _UNIT, overrides)
    except TreeRunFailed as failure:
        raise SystemExit(f"{dataset} with {tree}: {failure}") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, help="source tree to compare against")
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--pairs", type=int, default=1)
    parser.add_argument("--rate", type=float, default=1.0, help="uniform noise rate")
    parser.add_argument("--json", type=Path, help="also write every record here")
    args = parser.parse_args(argv)
    exit_on_sigterm()

    trees = {"this": HERE} if args.baseline is None else {"baseline": args.baseline, "this": HERE}
    print(
        "| dataset | tree | CPU s (median) | each pair | selected | ratio this / baseline "
        "| largest metric difference |"
    )
    print("|---|---|---|---|---|---|---|")
    records = []
    for dataset in args.datasets:
        runs: dict[str, list[dict]] = {name: [] for name in trees}
        for pair in range(args.pairs):
            order = list(trees) if pair % 2 == 0 else list(reversed(trees))
            for name in order:
                runs[name].append(run_unit(trees[name], dataset, args.rate))
        medians = {name: statistics.median(r["cpu"] for r in rs) for name, rs in runs.items()}
        ratio, gap = "", ""
        if "baseline" in runs:
            ratio = f"{medians['this'] / medians['baseline']:.3f}"
            worst, where = largest_difference(
                runs["baseline"][0]["values"], runs["this"][0]["values"]
            )
            gap = f"{worst:.3g} ({where})"
        for name, rs in runs.items():
            each = ", ".join(f"{r['cpu']:.1f}" for r in rs)
            chosen = ";".join(f"{k}={v}" for k, v in rs[0]["tuned"].items())
            print(
                f"| {dataset} | {name} | {medians[name]:.1f} | {each} | {chosen} "
                f"| {ratio if name == 'this' else ''} | {gap if name == 'this' else ''} |",
                flush=True,
            )
        records.append({"dataset": dataset, "runs": runs, "median_cpu": medians})
    if args.json:
        args.json.write_text(json.dumps(records, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
