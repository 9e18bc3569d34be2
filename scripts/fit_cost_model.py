r"""Fit the dry run's cost model per method to the recorded CPU times of result stores.

    python scripts/fit_cost_model.py outputs/store docs/leaderboard-results.tar.xz \
        --docs docs/sweeps.md

Each source is a result store's directory (here the tuned suite's, ``+experiment=suite``)
or a tar archive of one; each method is fitted to the first source that holds it on enough
datasets (pmlbench.runner.costmodel.MIN_DATASETS), so a tuned store given first wins over an
older archive given after it. Writes pmlbench/runner/costmodel/cost_model.json (the same
sources give the same file, byte for byte) and prints how far off the model is on its records, per
method: the median, 10th and 90th percentiles of estimated / recorded CPU seconds per unit
and the ratio of the sums, for a unit of a dataset the model was fitted on (its factor from
the dataset's other units: leave-one-unit-out) and of a new dataset (each dataset's units
estimated by a model fitted to the other datasets: leave-one-dataset-out), and the same for
the fallback rule of a method without a model. ``--docs`` also rewrites that table, with the
command and the sources, in a Markdown file between its two marker comments.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pmlbench.core.atomic import atomic_write_text
from pmlbench.runner.costmodel import MODEL_FILE, accuracy_table, fit_model, load_source

ROOT = Path(__file__).resolve().parents[1]
TABLE_START = "<!-- cost-model-accuracy: start (scripts/fit_cost_model.py --docs) -->"
TABLE_END = "<!-- cost-model-accuracy: end -->"


def source_name(path: Path) -> str:
    """A source as the docs name it: relative to the repository when inside it, else as
    given."""
    try:
        return path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return path.as_posix()


def replace_table(text: str, table: str) -> str:
    """``text`` with the part between the marker comments replaced by ``table``."""
    start, end = text.index(TABLE_START) + len(TABLE_START), text.index(TABLE_END)
    return text[:start] + "\n\n" + table + "\n\n" + text[end:]


def docs_block(model: dict[str, Any]) -> str:
    """The command, its sources and the accuracy table, as the docs show them."""
    sources = "; ".join(
        f"`{s['name']}` ({s['records']:,} finished units, sha256 {s['sha256'][:12]}, "
        f"computed at {', '.join(c[:7] for c in s['git_commits']) or 'unknown commits'})"
        for s in model["sources"]
    )
    return f"Fitted by `{model['command']}` to {sources}:\n\n{accuracy_table(model)}"


def json_text(model: dict[str, Any]) -> str:
    """The model file's text: indented, key order kept, one trailing newline."""
    return json.dumps(model, indent=1) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Fit, write the model file, print the accuracy table (and put it into the docs)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "sources", type=Path, nargs="+", help="result store directories or tar archives of them"
    )
    parser.add_argument("--output", type=Path, default=MODEL_FILE, help="model file to write")
    parser.add_argument("--docs", type=Path, help="Markdown file whose table to rewrite")
    args = parser.parse_args(argv)
    for path in args.sources:
        if not path.exists():
            parser.error(f"no store or archive at {path}")
    names = [source_name(path) for path in args.sources]
    command = "python scripts/fit_cost_model.py " + " ".join(names)
    if args.docs is not None:
        command += f" --docs {source_name(args.docs)}"
    sources = [load_source(path, name) for path, name in zip(args.sources, names, strict=True)]
    model = fit_model(sources, command)
    atomic_write_text(args.output, json_text(model))
    print(f"written to {args.output}; accuracy on the records ({model['validation']}):")
    print(docs_block(model))
    if args.docs is not None:
        text = args.docs.read_text(encoding="utf-8")
        atomic_write_text(args.docs, replace_table(text, docs_block(model)))
        print(f"table rewritten in {args.docs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
