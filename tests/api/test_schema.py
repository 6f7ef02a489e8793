"""The scenario JSON Schema (`qoelab schema`, crates/core/src/schema.rs) agrees with the parser,
and docs/scenarios.md is the page generated from it.

The schema is generated from the config types, so these tests check the generation (units,
registries, bare-name forms, keys refused), not a hand copy: every bundled scenario and every
accepted value of the bad-input corpus validates; every mistyped value of the corpus and a set
of mutations the parser refuses are refused by the schema too."""

from __future__ import annotations

import copy
import json
import tomllib
from pathlib import Path

import jsonschema
import pytest

from qoelab.paths import root
from qoelab.scenario import Scenario, ScenarioError
from qoelab.schema import reference_markdown, scenario_schema

REPO = root()
CORPUS = tomllib.loads((REPO / "tests" / "corpus" / "cases.toml").read_text())


@pytest.fixture(scope="module")
def validator():
    s = scenario_schema()
    jsonschema.Draft7Validator.check_schema(s)
    return jsonschema.Draft7Validator(s)


def _bundled():
    files = sorted((REPO / "scenarios").rglob("*.toml"))
    assert len(files) >= 10
    return files


@pytest.mark.parametrize("path", _bundled(), ids=lambda p: str(p.relative_to(REPO / "scenarios")))
def test_every_bundled_scenario_validates(validator, path: Path):
    errors = [f"{list(e.absolute_path)}: {e.message[:120]}" for e in validator.iter_errors(tomllib.loads(path.read_text()))]
    assert not errors, errors


def _with(template: str, key: str, value_toml: str) -> dict:
    sc = Scenario.from_dict(tomllib.loads(CORPUS["template"][template]), "t.toml")
    sc.set(key, tomllib.loads(f"v = {value_toml}")["v"])
    return sc.data


@pytest.mark.parametrize("template, key, value", CORPUS["good_value"])
def test_values_the_parser_accepts_validate(validator, template, key, value):
    data = _with(template, key, value)
    Scenario.from_dict(copy.deepcopy(data), "t.toml").validate()
    assert not list(validator.iter_errors(data))


def _wrong_types():
    for template, spec in CORPUS["wrong_type"].items():
        for key in spec["keys"]:
            for value in spec["values"]:
                yield template, key, value


@pytest.mark.parametrize("template, key, value", list(_wrong_types()))
def test_values_of_the_wrong_type_are_refused(validator, template, key, value):
    data = _with(template, key, value)
    with pytest.raises(ScenarioError):
        Scenario.from_dict(copy.deepcopy(data), "t.toml").validate()
    assert list(validator.iter_errors(data)), f"{key} = {value} passes the schema"


MUTATIONS = [
    ("links[0].rate", '"10Mbit"'),          # unit the parser does not know
    ("links[0].delay", '"-1ms"'),           # negative time
    ("links[0].colour", "3"),               # unknown key
    ("links[0].queue", '{ kind = "blue" }'),  # unknown kind
    ("links[0].queue", '{ kind = "fifo", quantum = "1500B" }'),  # key of another kind
    ("flows[0].transport", '{ kind = "udp", mss = 1000 }'),  # a unit kind takes no keys
    ("flows[0].transport", '{ kind = "tcp", cc = "vegas" }'),  # unknown bare name
    ("output", '{ probes = ["cwnd", "nope"] }'),
]


@pytest.mark.parametrize("key, value", MUTATIONS)
def test_mutations_the_parser_refuses_are_refused(validator, key, value):
    data = _with("udp", key, value)
    with pytest.raises(ScenarioError):
        Scenario.from_dict(copy.deepcopy(data), "t.toml").validate()
    assert list(validator.iter_errors(data))


def test_a_misspelt_cc_parameter_is_refused(validator):
    data = _with("tcp", "flows[0].transport.cc", '{ kind = "cubic", betta = 0.7 }')
    with pytest.raises(ScenarioError):
        Scenario.from_dict(copy.deepcopy(data), "t.toml").validate()
    assert list(validator.iter_errors(data))


@pytest.mark.parametrize("template, key, value", [
    ("tcp", "flows[0].transport.cc", '"newreno"'),
    ("tcp", "flows[0].transport.cc", '{ kind = "cubic", beta = 0.7 }'),
    ("udp", "links[0].queue", '{ kind = "fifo", limit = "64KiB" }'),
    ("udp", "links[0].delay", '"1.5e3us"'),
])
def test_forms_the_parser_accepts_validate(validator, template, key, value):
    data = _with(template, key, value)
    Scenario.from_dict(copy.deepcopy(data), "t.toml").validate()
    assert not list(validator.iter_errors(data))


def test_docs_scenarios_md_is_the_generated_page():
    page = (REPO / "docs" / "scenarios.md").read_text()
    assert page == reference_markdown(), "docs/scenarios.md is stale: regenerate with `qoelab schema --markdown -o docs/scenarios.md`"


def test_the_page_lists_every_kind_of_every_registry():
    page = reference_markdown()
    s = scenario_schema()
    for name, d in s["definitions"].items():
        for alt in d.get("oneOf", []):
            kind = alt.get("properties", {}).get("kind", {}).get("const")
            if kind is not None:
                assert f'#### `kind = "{kind}"`' in page, f"{name}: kind {kind} missing from the page"
                for key in alt["properties"]:
                    assert f"| `{key}` |" in page or key == "kind"


def test_cli_prints_and_writes_the_schema(tmp_path, capsys):
    from qoelab.cli import main

    assert main(["schema"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == scenario_schema() and printed["$schema"].startswith("http://json-schema.org/draft-07")
    assert main(["schema", "-o", str(tmp_path / "s.json")]) == 0
    assert json.loads((tmp_path / "s.json").read_text()) == printed
    assert main(["schema", "-o", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err
    assert main(["schema", "-o", str(tmp_path / "no" / "s.json")]) == 2
    assert not (tmp_path / "no").exists()
