"""Where the shipped data is found from a checkout, how inputs are named, and the version the tool reports."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from typer.testing import CliRunner

from orchestrator import __version__, resources
from orchestrator.cli import app
from orchestrator.evidence import fragment_faults
from orchestrator.evidence.validate import SCHEMA_DIR

ROOT = Path(__file__).resolve().parents[3]


def test_a_checkout_finds_its_data_beside_the_package() -> None:
    assert resources.data_root() == ROOT
    assert resources.checkout_root() == ROOT
    assert resources.scenarios_dir() == ROOT / "scenarios"
    assert resources.images_dir() == ROOT / "images"
    assert resources.proxy_addons_dir() == ROOT / "proxy_addons"
    assert resources.schemas_dir() == SCHEMA_DIR == ROOT / "orchestrator" / "evidence" / "schemas"


def test_input_keys_are_install_independent(tmp_path: Path) -> None:
    assert resources.input_key(ROOT / "scenarios" / "tool_success.yaml") == "scenarios/tool_success.yaml"
    assert resources.input_key(SCHEMA_DIR / "runtime.v1.json") == "orchestrator/evidence/schemas/runtime.v1.json"
    mine = tmp_path / "mine.yaml"
    assert resources.input_key(mine) == str(mine.resolve())


def test_version_names_the_checkout_commit() -> None:
    info = resources.build_info()
    assert info.version == __version__
    assert info.git_commit is not None and re.fullmatch(r"[0-9a-f]{40}", info.git_commit)
    res = CliRunner().invoke(app, ["--version"])
    assert res.exit_code == 0
    assert res.stdout.startswith(f"harness-probe {__version__} (git {info.git_commit[:12]}")
    # What runtime.json records, valid against its schema.
    assert fragment_faults(info.as_json(), "runtime/v1", "/properties/tool", "$.tool") == []
    assert fragment_faults({**info.as_json(), "git_commit": "HEAD"}, "runtime/v1", "/properties/tool", "$.tool")


def test_pyproject_takes_the_version_from_the_package() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in text and 'path = "orchestrator/__init__.py"' in text
    assert not re.search(r"^version\s*=", text, re.MULTILINE)


def test_scenarios_schema_prints_the_published_schema() -> None:
    res = CliRunner().invoke(app, ["scenarios", "schema"])
    assert res.exit_code == 0
    assert json.loads(res.stdout) == json.loads((ROOT / "scenarios" / "scenario.schema.json").read_text())


def test_a_users_scenario_file_is_validated_with_jsonpath_faults(tmp_path: Path) -> None:
    data = yaml.safe_load((ROOT / "scenarios" / "tool_success.yaml").read_text())
    good = tmp_path / "mine.yaml"
    good.write_text(yaml.safe_dump({**data, "name": "mine"}))
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({**data, "name": "bad", "script": [{"tool_calls": "none"}]}))
    res = CliRunner().invoke(app, ["scenarios", "validate", str(good), str(bad)])
    assert res.exit_code == 2
    assert f"{good}: ok" in res.stdout
    assert "$.script[0].tool_calls" in res.stderr


def test_every_shipped_schema_is_a_valid_2020_12_schema() -> None:
    # The validator loads these without the meta-check (once here, not in every process): this test is that check.
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    from orchestrator.evidence.validate import SCENARIO_SCHEMA, schema_path

    shipped = sorted(SCHEMA_DIR.glob("*.json"))
    assert len(shipped) >= 7
    for path in [*shipped, SCENARIO_SCHEMA]:
        schema = json.loads(path.read_text())
        assert schema.get("$schema") == "https://json-schema.org/draft/2020-12/schema", path
        Draft202012Validator.check_schema(schema)
    assert schema_path("probe-scenario/v1") == SCENARIO_SCHEMA
    assert schema_path("probe-witness/v1") in shipped
    try:
        Draft202012Validator.check_schema({"type": "no-such-type"})
    except SchemaError:
        pass
    else:
        raise AssertionError("the meta-check refuses nothing")
