"""The documentation site's generated pages say what the plugins say (docs/_ext/pmlbench_docs).

The site's method and dataset reference, its archive counts, its citations and its link
check are built by modules that need no Sphinx; these tests hold them to the plugins, the
archive and CITATION.cff, so a site built from this checkout cannot state other numbers. The
site itself is built (examples run, warnings are errors, links checked) by .ci/run.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

from pmlbench.core.parameters import declared_constraints
from pmlbench.plugins import registry
from pmlbench.plugins.parameters import plugin_parameters

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

from pmlbench_docs import archive, citation, facts, link_check, probe, render  # noqa: E402
from pmlbench_docs.registry_pages import insert_before_first_section  # noqa: E402
from pmlbench_docs.repo_paths import escape_bars, repository_paths  # noqa: E402

BUILT_IN = [n for n, i in registry.plugins("method").items() if i.distribution == "pmlbench"]


@pytest.fixture(scope="module")
def methods() -> dict[str, facts.MethodFacts]:
    return {m.name: m for m in facts.methods()}


def test_every_built_in_method_has_its_facts_from_the_plugin(methods):
    assert sorted(methods) == sorted(BUILT_IN)
    for name, method in methods.items():
        cls = registry.load("method", name)
        assert [(p.name, p.default) for p in method.parameters] == list(
            plugin_parameters("method", cls).items()
        )
        constraints = declared_constraints(cls)
        for parameter in method.parameters:
            expected = " or ".join(
                "null" if c is None else c.describe() for c in constraints.get(parameter.name, [])
            )
            assert parameter.allowed == expected, (name, parameter.name)
        assert method.grid == {
            k: list(v) for k, v in getattr(cls, "default_tuning_grid", {}).items()
        }
        assert method.machine_dependent == getattr(cls, "machine_dependent", None)


def test_every_parameter_of_a_built_in_method_has_its_docstring_text(methods):
    undocumented = [
        f"{name}.{p.name}" for name, m in methods.items() for p in m.parameters if not p.doc
    ]
    assert not undocumented, (
        f"parameters without an Args: entry in their class docstring: {undocumented}"
    )


def test_the_grid_source_is_the_comment_above_the_grid(methods):
    mlknn = methods["mlknn"]
    assert mlknn.grid == {"k": [5, 10, 15, 20]}
    assert mlknn.grid_source.startswith("half to twice the paper's k = 10")
    assert mlknn.grid_owner == "pmlbench.methods.mlknn:MLkNN"


def test_google_args_sections_are_read_entry_by_entry():
    doc = """Summary.

    Args:
        k: neighbours, an integer >= 1
            (paper: 10).
        max_iter, tol: stop after max_iter steps
            or below tol.
        a, b, c,
            d: four at once.

    Returns:
        nothing.
    """
    entries = facts.args_section(doc)
    assert entries["k"] == "neighbours, an integer >= 1 (paper: 10)."
    assert entries["max_iter"] == entries["tol"] == "stop after max_iter steps or below tol."
    assert entries["d"] == "four at once."
    assert "Returns" not in entries and "nothing." not in entries.values()


def test_a_dataset_page_states_the_data_it_loads():
    data = registry.load("dataset", "yeastbp")()
    found = facts.dataset_facts("yeastbp", 0.5)
    stats = found.stats
    assert (stats["n"], stats["d"], stats["l"]) == (*data.X.shape, data.Y.shape[1])
    assert stats["label_cardinality"] == pytest.approx(data.Y.sum(axis=1).mean())
    assert stats["avg_candidates"] == pytest.approx(data.Y_candidates.sum(axis=1).mean())
    assert stats["no_label"] == int(np.sum(data.Y.sum(axis=1) == 0))
    assert stats["n_train"] + stats["n_test"] == stats["n"]
    assert found.meta["citation"] == data.meta["citation"]
    page = render.dataset_page(found, {}, {}, "generated/datasets/yeastbp.md", 0.5)
    assert "| instances | 6,139 |" in page and "| labels | 217 |" in page


class _Refuses:
    def fit(self, X, Y):
        from pmlbench.errors import NotApplicable

        raise NotApplicable(f"refuses {X.shape[0]} rows; set method.cap=null")


class _Works:
    def fit(self, X, Y):
        while X.shape[0] > probe.WARM_UP_ROWS:  # stands for work: the CPU budget stops it
            pass


_imported = []


class _ImportsSlowlyThenRefuses:
    """Its first fit in a process spends longer than the budget before its check, as a first
    ``import torch`` does; the check itself is instant."""

    def fit(self, X, Y):
        import time

        from pmlbench.errors import NotApplicable

        if not _imported:
            start = time.process_time()
            while time.process_time() - start < probe.CPU_BUDGET + 0.5:
                pass
            _imported.append(True)
        raise NotApplicable(f"refuses {X.shape[0]} rows; set method.cap=null")


def _part(name: str, rows: int) -> probe.TrainingPart:
    return probe.TrainingPart(name, np.zeros((rows, 2)), np.zeros((rows, 2), dtype=np.uint8))


def test_the_probe_asks_the_method_and_stops_a_method_that_works():
    small, large = _part("small", 50), _part("large", 60)
    found = probe.probe({"refuses": _Refuses, "works": _Works}, [small, large])
    assert found[("refuses", "large")] == probe.Outcome(
        probe.REFUSED, "refuses 60 rows; set method.cap=null"
    )
    assert found[("refuses", "small")].status == probe.REFUSED
    assert found[("works", "large")] == probe.Outcome(probe.RUNS, "")
    # no larger in any dimension than a dataset where the method runs: not probed
    assert found[("works", "small")] == probe.Outcome(probe.RUNS, "", inferred_from="large")


def test_a_slow_first_import_is_not_taken_for_work():
    """The warm-up fit pays for lazy imports, so the timed fit's refusal is still seen."""
    found = probe.probe({"slow": _ImportsSlowlyThenRefuses}, [_part("large", 60)])
    assert found[("slow", "large")] == probe.Outcome(
        probe.REFUSED, "refuses 60 rows; set method.cap=null"
    )


def test_a_refusal_the_page_shows_is_the_methods_own_message(methods):
    from pmlbench.errors import NotApplicable

    data = registry.load("dataset", "cal500")()
    part = probe.training_part("cal500", data, 0.5)
    found = probe.probe({"particle_vls": registry.load("method", "particle_vls")}, [part])
    outcome = found[("particle_vls", "cal500")]
    with pytest.raises(NotApplicable) as refusal:
        registry.load("method", "particle_vls")().fit(part.X, part.Y)
    assert outcome == probe.Outcome(probe.REFUSED, str(refusal.value))
    section = render.method_section(
        methods["particle_vls"],
        {"cal500": outcome},
        {"cal500": part.shape},
        "",
        "methods/particle.md",
    )
    assert render.text(str(refusal.value)) in section
    assert "max_label_pairs" in section


def test_the_archive_counts_add_up():
    found = archive.counts()
    assert found["units"] == sum(found["statuses"].values())
    assert found["units"] > 0 and found["methods"] >= 14
    assert 0 < found["declined_lines"] <= found["statuses"]["not_applicable"]


def test_citation_cff_cites_every_built_in_method_and_the_seed():
    cited = {m for r in citation.load()["references"] for m in citation.methods_of(r)}
    without_paper = {"external"}  # an adapter for other programs
    assert cited == set(BUILT_IN) - without_paper
    seed = citation.seed_reference()
    assert seed["year"] == 2020 and "pml3er" in citation.methods_of(seed)
    assert "Li" in citation.reference_text(seed) and "IJCAI 2020" in citation.reference_text(seed)
    for reference in citation.load()["references"]:
        for name in set(citation.methods_of(reference)) - {"ridge"}:  # ridge: PML3ER's W-step
            module = facts.method_module(registry.load("method", name))
            # the method's own module cites the paper's year too
            assert str(reference["year"]) in importlib.import_module(module).__doc__, name


def test_the_version_is_one_everywhere():
    import pmlbench

    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    project = pyproject.split("[project]", 1)[1].split("\n[", 1)[0]
    assert f'\nversion = "{pmlbench.__version__}"\n' in project
    assert str(citation.load()["version"]) == pmlbench.__version__
    assert metadata.version("pmlbench") == pmlbench.__version__  # what run.json records
    shown = subprocess.run(
        [sys.executable, "-m", "pmlbench", "--version"], capture_output=True, text=True, check=True
    ).stdout
    assert shown.startswith(f"pmlbench {pmlbench.__version__} ")


def test_a_link_out_of_docs_is_shown_as_its_path(tmp_path):
    docs = tmp_path / "docs"
    (docs / "methods").mkdir(parents=True)
    (tmp_path / "pmlbench" / "core").mkdir(parents=True)
    (tmp_path / "pmlbench" / "core" / "x.py").write_text("")
    (docs / "protocol.md").write_text("")
    page = docs / "methods" / "m.md"
    text = (
        "[pmlbench/core/x.py](../../pmlbench/core/x.py), [the core](../../pmlbench/core), "
        "[protocol](../protocol.md#budget), [web](https://example.org)\n"
        "```\n[x.py](../../pmlbench/core/x.py)\n```\n"
    )
    shown = repository_paths(text, page, docs, tmp_path)
    assert shown.splitlines()[0] == (
        "`pmlbench/core/x.py`, the core (`pmlbench/core/`), "
        "[protocol](../protocol.md#budget), [web](https://example.org)"
    )
    assert shown.splitlines()[2] == "[x.py](../../pmlbench/core/x.py)"  # code is left alone


def test_bars_in_docstrings_are_escaped_outside_literals():
    lines = ["rate * |y| wrong labels", "within ``atol + rtol * |scores|``", "a | b"]
    escape_bars(None, "function", "f", None, None, lines)
    assert lines == ["rate * \\|y\\| wrong labels", "within ``atol + rtol * |scores|``", "a | b"]


def test_the_generated_section_goes_before_the_first_section():
    source = "# T\n\nintro\n\n```\n## not a heading\n```\n\n## First\n\nbody\n"
    assert insert_before_first_section(source, "## Reference") == (
        "# T\n\nintro\n\n```\n## not a heading\n```\n\n## Reference\n\n## First\n\nbody\n"
    )
    assert insert_before_first_section("# T\n\nonly", "## R").endswith("only\n\n## R\n")


def test_the_link_check_finds_missing_pages_and_anchors(tmp_path):
    (tmp_path / "a.html").write_text(
        '<h1 id="top">A</h1><a href="b.html#there">ok</a><a href="b.html#gone">x</a>'
        '<a href="c.html">y</a><a href="#top">self</a><a href="https://example.org">web</a>'
        '<img src="img/missing.svg">'
    )
    (tmp_path / "b.html").write_text('<section id="there"></section>')
    problems = {(link, problem) for _, link, problem in link_check.broken_links(tmp_path)}
    assert problems == {
        ("b.html#gone", "b.html has no anchor #gone"),
        ("c.html", "c.html does not exist"),
        ("img/missing.svg", "img/missing.svg does not exist"),
    }
