"""Markdown (MyST) for the generated reference: method sections, dataset pages, indexes."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from .facts import DatasetFacts, MethodFacts
from .probe import REFUSED, RUNS, Outcome

PROTOCOL_BUDGET = "protocol.md#budget-one-rule-for-every-method"
PROTOCOL_KERNELS = "protocol.md#reproducibility-the-same-numbers-on-every-machine"


def text(value: str) -> str:
    """Docstring prose as Markdown table-cell text: reST literals and roles as code, on
    one line, pipes escaped."""
    value = re.sub(r":[\w:.-]+:`~?([^`]+)`", lambda m: f"`{m.group(1).split('.')[-1]}`", value)
    value = re.sub(r"``([^`]+)``", r"`\1`", value)
    return " ".join(value.split()).replace("|", "\\|")


def config_value(value: Any) -> str:
    """A value as the command line and the YAML config spell it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(config_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {config_value(v)}" for k, v in value.items()) + "}"
    return str(value)


def code(value: str) -> str:
    """Inline code that survives a table cell (pipes escaped, backticks fenced)."""
    value = value.replace("|", "\\|")
    return f"`` {value} ``" if "`" in value else f"`{value}`"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def relative(page: str, target: str) -> str:
    """``target`` (docs-relative) as a link from the docs-relative ``page``."""
    depth = page.count("/")
    return "../" * depth + target


def method_link(method: MethodFacts) -> str:
    """The docs-relative page that holds a method's reference."""
    return method.page or f"generated/methods/{method.name}.md"


def dataset_link(name: str) -> str:
    return f"generated/datasets/{name}.md"


def _shape(shape: tuple[int, int, int]) -> str:
    return f"{shape[0]:,} x {shape[1]:,} x {shape[2]:,}"


def method_section(
    method: MethodFacts,
    outcomes: Mapping[str, Outcome],
    shapes: Mapping[str, tuple[int, int, int]],
    citation: str,
    page: str,
    heading: str = "##",
    page_headings: Sequence[str] = (),
) -> str:
    """The generated reference of one method, for its page (``page``, docs-relative)."""
    sub = heading + "#"
    name = method.name
    out = [
        f"{heading} Reference: `{name}`",
        "",
        "Generated from the plugin registry when this site was built: the class, its "
        "docstring and declarations, and what its `fit` does on each bundled dataset.",
        "",
        f"{text(method.summary)}",
        "",
    ]
    bipartition = ", ".join(
        f"`bipartition.{k}={config_value(v)}`" for k, v in method.bipartition.items()
    )
    rows = [
        ["plugin", f"`method={name}`, class `{method.target}`"],
        ["paper", text(method.paper) if citation else "none of its own"],
        ["default labels", bipartition],
        [
            "tuning",
            (
                ", ".join(f"`{p}` in {code(config_value(v))}" for p, v in method.grid.items())
                + f" by `tune.procedure={config_value(method.tune.get('procedure'))}`"
                + (", all points from one `fit_grid`" if method.fit_grid else ", point by point")
                if method.grid
                else "no grid declared: runs at its defaults"
            ),
        ],
    ]
    out += [table(["", f"`{name}`"], rows), ""]

    out += [f"{sub} Parameters of `{name}`", ""]
    out += [
        "Each is a config key (`method.<parameter>=<value>`); the allowed values are the "
        "declared `parameter_constraints`, checked before any work.",
        "",
    ]
    out += [
        table(
            ["parameter", "default", "allowed", "meaning (docstring)"],
            [
                [
                    f"`method.{p.name}`",
                    code(config_value(p.default)),
                    text(p.allowed) or "not declared",
                    text(p.doc) or "–",
                ]
                for p in method.parameters
            ],
        ),
        "",
    ]

    out += [f"{sub} Tuning grid of `{name}` and its source", ""]
    if method.grid:
        out += [
            table(
                ["parameter", "values", "as an override"],
                [
                    [
                        f"`{p}`",
                        ", ".join(code(config_value(x)) for x in v),
                        code(f"tune.grid.{p}={config_value(v)}"),
                    ]
                    for p, v in method.grid.items()
                ],
            ),
            "",
        ]
        source = (
            f"“{text(method.grid_source)}”"
            if method.grid_source
            else "no comment states it in the code"
        )
        out += [
            f"Source (the comment above `default_tuning_grid` in `{method.grid_owner}`): {source}."
        ]
        if "Tuning grid" in page_headings:
            out[-1] += " The choice is discussed under [Tuning grid](#tuning-grid) below."
        out += [""]
    else:
        out += [
            "No `default_tuning_grid`: the method runs at its defaults unless `tune.grid` is "
            "given.",
            "",
        ]

    out += [f"{sub} Datasets `{name}` refuses", ""]
    probed = {d: o for d, o in outcomes.items()}
    refused = {d: o for d, o in probed.items() if o.status == REFUSED}
    runs = sorted(d for d, o in probed.items() if o.status == RUNS)
    errors = {d: o for d, o in probed.items() if o.status not in (REFUSED, RUNS)}
    if not probed:
        required = ", ".join(f"`method.{p}`" for p in method.required)
        out += [f"Not probed: the method needs {required} before it can run.", ""]
    else:
        out += [
            "What `fit` does first, at the defaults, on the training part of the protocol's "
            "first split of each bundled dataset: a method refuses an input beyond its caps "
            "before any work, in one line that names the option lifting the cap "
            f"([Budget]({relative(page, PROTOCOL_BUDGET)})); a sweep records such a unit as n/a.",
            "",
        ]
        if refused:
            out += [
                table(
                    ["dataset", "training part (n x d x labels)", "the method's reason"],
                    [
                        [
                            f"[{d}]({relative(page, dataset_link(d))})",
                            _shape(shapes[d]),
                            text(o.message),
                        ]
                        for d, o in sorted(refused.items())
                    ],
                ),
                "",
            ]
        else:
            out += [f"None: it runs on all {len(probed)} bundled datasets.", ""]
        if refused and runs:
            out += [f"Runs on the other {len(runs)}: {', '.join(runs)}.", ""]
        for d, o in sorted(errors.items()):
            out += [f"On {d} `fit` stopped with an error: {code(text(o.message))}.", ""]

    out += [f"{sub} Cross-kernel status of `{name}`", ""]
    if method.required:
        out += [
            "Not measured: its numbers are those of the program it is given "
            f"({', '.join(f'`method.{p}`' for p in method.required)}).",
            "",
        ]
    elif method.machine_dependent:
        out += [
            "**Machine-dependent** (its `machine_dependent` hook): "
            f"{text(method.machine_dependent)} "
            f"([Reproducibility]({relative(page, PROTOCOL_KERNELS)}))",
            "",
        ]
    else:
        out += [
            "No `machine_dependent` hook: its numbers are the same under every BLAS kernel and "
            "thread count, as measured for every built-in method that declares none "
            f"([Reproducibility]({relative(page, PROTOCOL_KERNELS)})).",
            "",
        ]

    out += [f"{sub} Citation of `{name}`", "", citation or f"None: {text(method.summary)}", ""]
    return "\n".join(out)


def method_page(method: MethodFacts, section: str) -> str:
    """A page of its own, for a method without a hand-written one."""
    return "\n".join([f"# `{method.name}`", "", section])


def dataset_page(
    dataset: DatasetFacts,
    refusals: Mapping[str, Outcome],
    links: Mapping[str, str],
    page: str,
    test_size: float,
) -> str:
    """The page of one dataset; ``refusals`` by method, ``links`` each method's page."""
    s = dataset.stats
    name = dataset.name
    out = [f"# {name}", "", text(dataset.summary), ""]
    if not s:
        out += [
            f"A loader with parameters: `dataset={name}` needs them on the command line "
            f"([datasets.md]({relative(page, 'datasets.md')})).",
            "",
            table(
                ["parameter", "default", "meaning (docstring)"],
                [
                    [f"`dataset.{p.name}`", code(config_value(p.default)), text(p.doc) or "–"]
                    for p in dataset.parameters
                ],
            ),
            "",
        ]
        return "\n".join(out)
    sparse = "sparse (CSR)" if s["sparse_features"] else "dense"
    rows = [
        ["plugin", f"`dataset={name}`, loader `{dataset.target}`"],
        ["instances", f"{s['n']:,}"],
        ["features", f"{s['d']:,}, stored {sparse}, {s['feature_density']:.1%} non-zero"],
        ["labels", f"{s['l']:,}"],
        [
            "label cardinality",
            f"{s['label_cardinality']:.3f} true labels per instance (at most {s['max_labels']})",
        ],
        ["label density", f"{s['label_density']:.4f}"],
        ["distinct label sets", f"{s['label_sets']:,}"],
        ["instances without a true label", f"{s['no_label']:,}"],
        ["labels never positive", f"{s['never_positive']:,}"],
    ]
    if "avg_candidates" in s:
        rows.append(
            [
                "candidate labels",
                f"natural: {s['avg_candidates']:.3f} per instance ({s['false_candidates']:.3f} "
                f"false, at most {s['max_candidates']}); no noise model is applied",
            ]
        )
    else:
        rows.append(["candidate labels", "drawn by a noise model (`noise=uniform` by default)"])
    rows.append(
        [
            "protocol split",
            f"{s['n_train']:,} training and {s['n_test']:,} test instances "
            f"(`protocol.test_size={test_size:g}`)",
        ]
    )
    for key in ("source", "citation"):
        if key in dataset.meta:
            rows.append([key, text(str(dataset.meta[key]))])
    out += [table(["", name], rows), ""]
    out += [f"## Methods that refuse {name}", ""]
    refused = {m: o for m, o in refusals.items() if o.status == REFUSED}
    if refused:
        out += [
            table(
                ["method", "its reason"],
                [
                    [f"[`{m}`]({relative(page, links[m])})", text(o.message)]
                    for m, o in sorted(refused.items())
                ],
            ),
            "",
        ]
    else:
        out += [f"None: every built-in method runs on {name} at its defaults.", ""]
    out += [
        "Provenance and quirks of the bundled data: "
        f"[datasets.md]({relative(page, 'datasets.md')}).",
        "",
    ]
    return "\n".join(out)


def methods_index(
    methods: Sequence[MethodFacts],
    outcomes: Mapping[tuple[str, str], Outcome],
    links: Mapping[str, str],
) -> str:
    """The index of method references for docs/methods.md, with its toctree."""
    rows = []
    for m in methods:
        own = [o for (name, _), o in outcomes.items() if name == m.name]
        refused = sum(o.status == REFUSED for o in own)
        anchor = f"#reference-{m.name}" if m.page else ""
        rows.append(
            [
                f"[`{m.name}`]({links[m.name]}{anchor})",
                f"`{m.target}`",
                ", ".join(f"`{p}`" for p in m.grid) or "–",
                f"{refused} of {len(own)}" if own else "not probed",
                "not measured"
                if m.required
                else "machine-dependent"
                if m.machine_dependent
                else "identical",
            ]
        )
    return "\n".join(
        [
            "## Reference of every built-in method",
            "",
            "Generated from the plugin registry when this site was built; each method's page "
            "has its parameters, tuning grid, refusals, cross-kernel status and citation.",
            "",
            table(
                ["method", "class", "tuned", "bundled datasets refused", "across BLAS kernels"],
                rows,
            ),
            "",
            "```{toctree}",
            ":hidden:",
            ":glob:",
            "",
            "methods/*",
            "generated/methods/*",
            "```",
            "",
        ]
    )


def datasets_index(
    datasets: Sequence[DatasetFacts], outcomes: Mapping[tuple[str, str], Outcome]
) -> str:
    """The index of dataset pages for docs/datasets.md, with its toctree."""
    rows = []
    for d in datasets:
        s = d.stats
        link = f"[{d.name}]({dataset_link(d.name)})"
        if not s:
            rows.append([link, "–", "–", "–", "–", "its own file (parameters)", "–"])
            continue
        refused = sorted(
            m for (m, name), o in outcomes.items() if name == d.name and o.status == REFUSED
        )
        candidates = (
            f"natural, {s['avg_candidates']:.2f}" if "avg_candidates" in s else "noise model"
        )
        rows.append(
            [
                link,
                f"{s['n']:,}",
                f"{s['d']:,}",
                f"{s['l']:,}",
                f"{s['label_cardinality']:.3f}",
                candidates,
                ", ".join(f"`{m}`" for m in refused) or "none",
            ]
        )
    return "\n".join(
        [
            "## One page per dataset",
            "",
            "Generated from the bundled data when this site was built.",
            "",
            table(
                ["dataset", "n", "d", "l", "label cardinality", "candidates", "refused by"], rows
            ),
            "",
            "```{toctree}",
            ":hidden:",
            ":glob:",
            "",
            "generated/datasets/*",
            "```",
            "",
        ]
    )
