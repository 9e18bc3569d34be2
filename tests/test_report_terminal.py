"""``pmlbench report`` in the terminal: tables wider than the console are split into several
that fit, each repeating its row labels, and no cell is cut short."""

from __future__ import annotations

import re
from itertools import product

import pytest
from rich.console import Console

from pmlbench.report import ReportOptions, build_report
from pmlbench.report import table2 as table2_module
from pmlbench.report.build import print_report
from pmlbench.report.render import column_groups
from tests.helpers import run_rows, write_run

METHODS = [f"method_number_{i}" for i in range(7)]


@pytest.mark.parametrize(
    "fixed, columns, width",
    [
        ([10, 8], [13] * 10, 80),
        ([10, 8], [13] * 10, 200),
        ([5], [3, 40, 3, 3, 90, 2], 60),
        ([], [1] * 30, 10),
        ([20], [], 40),
    ],
)
def test_column_groups_cover_every_column_once_in_order_and_fit(fixed, columns, width):
    groups = column_groups(fixed, columns, width)
    assert [i for g in groups for i in g] == list(range(len(columns)))
    assert all(len(g) for g in groups) or not columns
    frame = 1 + sum(w + 3 for w in fixed)
    for group in groups:
        needed = frame + sum(columns[i] + 3 for i in group)
        assert needed <= width or len(group) == 1  # a column too wide alone keeps its group
    # greedy: the next group's first column would not have fitted in the previous group
    for before, after in zip(groups, groups[1:], strict=False):
        used = frame + sum(columns[i] + 3 for i in before)
        assert used + columns[after[0]] + 3 > width


def test_column_groups_without_a_width_is_one_group():
    assert column_groups([5], [10, 20, 30], None) == [range(3)]


@pytest.fixture
def wide_report(tmp_path):
    """Seven methods with long names on two datasets: wider than 80 columns."""
    root = tmp_path / "runs"
    job = 0
    for dataset, (i, method) in product(["first", "second"], enumerate(METHODS)):
        values = [(0.5 + i / 100 + s / 1000, 0.1 + i / 100) for s in range(3)]
        write_run(root, f"{job}_{method}_{dataset}", run_rows(dataset, 1.0, method, values))
        job += 1
    options = ReportOptions(reference=METHODS[0], plots=False, html=False)
    return build_report([root], options)


@pytest.mark.parametrize("width", [60, 80, 120])
def test_wide_tables_are_split_to_fit_the_console_and_keep_every_cell(wide_report, width):
    console = Console(width=width, record=True, color_system=None)
    print_report(wide_report, console)
    text = console.export_text()
    table_lines = [ln for ln in text.splitlines() if ln[:1] in "┏┃┡│└"]
    assert table_lines and max(map(len, table_lines)) <= width
    assert "…" not in text, "a cell was cut short"
    for metric in ("average precision", "Hamming loss"):
        titles = re.findall(rf"^{metric} [↑↓].*$", text, flags=re.M)
        assert len(titles) >= (2 if width < 120 else 1)
    # every method's header once per metric table, every mean shown in full
    headers = [ln for ln in table_lines if ln.startswith("┃")]
    for method in METHODS:
        in_wtl = method != METHODS[0]  # the reference is no column of its win/tie/loss
        # two metrics in Table 2 (+ w/t/l) and in the pairwise matrices
        assert sum(method in ln for ln in headers) == 2 + in_wtl + 2
    for i, _ in enumerate(METHODS):
        assert f"{0.5 + i / 100 + 1 / 1000:.3f} ± 0.001" in text
    # the row labels are repeated in every part
    rows = [ln for ln in table_lines if ln.startswith("│ first ")]
    assert len(rows) == len(re.findall(r"^(average precision|Hamming loss) ", text, flags=re.M))


def test_a_declined_cell_shows_as_not_applicable(wide_report):
    tables = table2_module.to_rich(
        wide_report.prepared,
        wide_report.table2[
            ~(
                (wide_report.table2["method"] == METHODS[3])
                & (wide_report.table2["dataset"] == "first")
            )
        ],
        declined=frozenset({(METHODS[3], "first", "rate=1")}),
    )
    console = Console(width=400, record=True, color_system=None)
    for table in tables:
        console.print(table)
    first_rows = [ln for ln in console.export_text().splitlines() if ln.startswith("│ first ")]
    assert len(first_rows) == 2
    for row in first_rows:
        cells = [c.strip() for c in row.strip("│").split("│")]
        assert cells[2 + 3] == "n/a" and cells.count("n/a") == 1


def test_labels_are_printed_as_written_not_read_as_markup(tmp_path):
    """Two configurations of one method are labelled mlknn[k=5] and mlknn[k=12]: the brackets
    are part of the label, not console markup, in every terminal table."""
    root = tmp_path / "runs"
    for job, k in enumerate((5, 12)):
        for dataset in ("first", "second"):
            values = [(0.5 + k / 100 + s / 1000, 0.2 - k / 100) for s in range(3)]
            rows = run_rows(dataset, 1.0, "mlknn", values, params={"param_k": k})
            write_run(root, f"{job}_{k}_{dataset}", rows)
    options = ReportOptions(reference="mlknn[k=5]", plots=False, html=False, bayesian=True)
    report = build_report([root], options)
    assert report.prepared.methods == ["mlknn[k=5]", "mlknn[k=12]"]
    console = Console(width=120, record=True, color_system=None)
    print_report(report, console)
    headers = [ln for ln in console.export_text().splitlines() if ln.startswith("┃")]
    # Table 2 and the pairwise matrices, per metric
    assert sum("mlknn[k=5]" in ln and "mlknn[k=12]" in ln for ln in headers) == 2 + 2
    assert sum("mlknn[k=12]" in ln for ln in headers) == 2 + 2 + 2  # and both w/t/l grids
