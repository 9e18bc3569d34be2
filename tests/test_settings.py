"""The bipartition and tune settings: defaults, validation, unit-key normalisation, docs."""

from __future__ import annotations

from pathlib import Path

import pytest

from pmlbench.errors import PmlbenchError
from pmlbench.methods.mlknn import MLkNN
from pmlbench.methods.pml3er import PML3ER
from pmlbench.protocol import settings
from pmlbench.protocol.bipartition import RULES, Bipartition
from pmlbench.protocol.method_defaults import method_node

DOCS = Path(__file__).resolve().parents[1] / "docs"
DOC_TABLES = {"bipartition": DOCS / "bipartition.md", "tune": DOCS / "tuning.md"}

# Written out by hand: the defaults recorded in every config node and thus in unit keys.
BIPARTITION_DEFAULTS = {
    "rule": "method",
    "threshold": 0.5,
    "allow_empty": True,
    "objective": "hamming_loss",
    "training_scores": "cv",
    "cv": 5,
}
TUNE_DEFAULTS = {
    "cv": 5,
    "procedure": "holdout",
    "scoring": "average_precision",
    "oracle": False,
    "n_jobs": None,
}
FULL_NODE = {**BIPARTITION_DEFAULTS, "rule": None}


def test_defaults_are_the_recorded_ones_in_order():
    assert list(settings.defaults("bipartition").items()) == list(BIPARTITION_DEFAULTS.items())
    assert list(settings.defaults("tune").items()) == list(TUNE_DEFAULTS.items())
    assert Bipartition().options == BIPARTITION_DEFAULTS


@pytest.mark.parametrize("node", ["bipartition", "tune"])
def test_every_default_is_allowed(node):
    for name, value in settings.defaults(node).items():
        settings.check_option(node, name, value)


def test_the_rule_table_and_the_rule_setting_name_the_same_rules():
    assert tuple(RULES) == settings.RULE_NAMES
    assert all(rule.name == name for name, rule in RULES.items())
    for setting in settings.BIPARTITION.values():
        assert set(setting.read_by or ()) <= set(settings.RULE_NAMES), setting.name


def test_an_unknown_rule_is_refused():
    with pytest.raises(PmlbenchError, match="bipartition.rule must be one of 'method'"):
        Bipartition(rule="median")
    with pytest.raises(PmlbenchError, match="unknown bipartition rule 'median'"):
        settings.options_read_by("median")


@pytest.mark.parametrize(
    "node, config, message",
    [
        ("bipartition", {"cv": 1}, "bipartition.cv must be an integer in [2, inf), got 1"),
        ("bipartition", {"cv": True}, "bipartition.cv must be an integer in [2, inf), got True"),
        ("bipartition", {"threshold": None}, "bipartition.threshold must be a number, got None"),
        ("bipartition", {"objective": 1}, "bipartition.objective must be a string, got 1"),
        ("tune", {"cv": 0}, "tune.cv must be an integer in [2, inf), got 0"),
        ("tune", {"n_jobs": 1.5}, "tune.n_jobs must be an integer in [1, inf) or"),
        ("tune", {"oracle": 1}, "tune.oracle must be true or false, got 1"),
        ("tune", {"grid": {}, "colour": 1}, "unknown tune options ['colour']; known: ['cv', 'g"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_key(node, config, message):
    with pytest.raises(PmlbenchError) as info:
        settings.resolve(node, config)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_resolve_fills_defaults_and_keeps_given_values():
    assert settings.tune_options({"grid": {"k": [1]}, "cv": 3}) == {**TUNE_DEFAULTS, "cv": 3}
    assert settings.bipartition_options({"rule": "top_k"})["rule"] == "top_k"
    for n_jobs in (None, 1, 4, -1, -2):
        assert settings.tune_options({"n_jobs": n_jobs})["n_jobs"] == n_jobs


# Options each rule ignores, written out by hand (what units.py dropped before the settings
# table existed): the unit key must drop exactly these.
IGNORED = {
    "method": {"threshold", "objective", "training_scores", "cv"},
    "threshold": {"objective", "training_scores", "cv"},
    "global": set(),
    "per_label": set(),
    "top_k": {"threshold", "objective", "training_scores", "cv"},
}


@pytest.mark.parametrize("rule", settings.RULE_NAMES)
def test_key_drops_exactly_the_options_a_rule_does_not_read(rule):
    node = {**FULL_NODE, "rule": rule}
    assert set(node) - set(settings.bipartition_key(node)) == IGNORED[rule]
    assert set(settings.options_read_by(rule)) == set(node) - IGNORED[rule]
    assert set(RULES[rule].reads) == set(node) - IGNORED[rule]


@pytest.mark.parametrize("rule", ["global", "per_label"])
def test_key_drops_cv_only_for_in_sample_training_scores(rule):
    node = {**FULL_NODE, "rule": rule, "training_scores": "train"}
    assert set(node) - set(settings.bipartition_key(node)) == {"cv"}
    missing = {k: v for k, v in node.items() if k != "training_scores"}  # default: cv
    assert settings.bipartition_key(missing) == missing


def test_key_keeps_what_it_cannot_judge():
    unknown_option = {**FULL_NODE, "rule": "method", "colour": 1}
    assert settings.bipartition_key(unknown_option) == {
        "rule": "method",
        "allow_empty": True,
        "colour": 1,
    }
    for rule in ("median", None):
        node = {**FULL_NODE, "rule": rule}
        assert settings.bipartition_key(node) == node
    no_rule = {k: v for k, v in FULL_NODE.items() if k != "rule"}
    assert settings.bipartition_key(no_rule) == no_rule
    invalid = {**FULL_NODE, "rule": "global", "training_scores": "test"}
    assert settings.bipartition_key(invalid) == invalid


def test_tune_key_drops_execution_options_and_everything_without_a_grid():
    tuned = {"grid": {"k": [1, 2], "s": None}, **TUNE_DEFAULTS, "n_jobs": 4}
    assert settings.tune_key(tuned) == {
        "cv": 5,
        "procedure": "holdout",
        "scoring": "average_precision",
        "oracle": False,
        "grid": {"k": [1, 2]},
    }
    assert settings.tune_key({"grid": {"k": None}, **TUNE_DEFAULTS, "oracle": True}) == {}
    assert settings.tune_key({"grid": {"k": [1]}, "future": 1}) == {"future": 1, "grid": {"k": [1]}}


def test_config_node_defaults_come_from_the_settings():
    node = method_node("mlknn", MLkNN)
    assert node["bipartition"] == BIPARTITION_DEFAULTS
    declared = getattr(MLkNN, "default_tuning_grid", {})
    grid = {p: (list(declared[p]) if p in declared else None) for p in ("k", "s")}
    assert node["tune"] == {"grid": grid, **TUNE_DEFAULTS}
    node = method_node("pml3er", PML3ER)
    assert node["bipartition"] == {**BIPARTITION_DEFAULTS, **PML3ER.default_bipartition}
    assert node["tune"]["grid"]["lambda2"] == list(PML3ER.default_tuning_grid["lambda2"])


@pytest.mark.parametrize("node", sorted(DOC_TABLES))
def test_docs_option_table_is_the_generated_one(node):
    path = DOC_TABLES[node]
    tables = settings.tables_in(path.read_text(encoding="utf-8"))
    assert node in tables, f"{path} lacks its <!-- settings:{node} ... --> table markers"
    assert tables[node] == settings.markdown_table(node), (
        f"the {node} option table of {path.name} differs from pmlbench/protocol/settings.py; "
        f"regenerate it with: python -m pmlbench.protocol.settings docs/{path.name}"
    )


def test_a_drifted_docs_table_is_detected_and_regenerated(tmp_path):
    text = DOC_TABLES["bipartition"].read_text(encoding="utf-8")
    drifted = text.replace("| `cv` | `5` |", "| `cv` | `10` |")
    assert drifted != text
    assert settings.tables_in(drifted)["bipartition"] != settings.markdown_table("bipartition")
    page = tmp_path / "page.md"
    page.write_text(drifted, encoding="utf-8")
    assert settings.main([str(page)]) == 0
    assert page.read_text(encoding="utf-8") == text


def test_markdown_table_has_one_row_per_setting():
    for node, table in settings.NODES.items():
        rows = settings.markdown_table(node).splitlines()[2:]
        assert [r.split(" | ")[0] for r in rows] == [f"| `{name}`" for name in table]
