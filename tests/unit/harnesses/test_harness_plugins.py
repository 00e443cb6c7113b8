"""Harness plugins: entry points are found, checked and loaded lazily; a broken one is reported and skipped."""

from __future__ import annotations

import textwrap
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestrator import harnesses, images
from orchestrator.cli import app
from orchestrator.harnesses import PluginError, get_harness, load_entry, plugin_image_folders, refused_plugins, registry
from orchestrator.harnesses.reference import ReferenceHarness

_MODULES = {
    "good_plugin": """
        from pathlib import Path
        from orchestrator.harnesses.reference import ReferenceHarness

        class Good(ReferenceHarness):
            name = "good"
            image = "good-image"
            image_dir = Path(__file__).parent / "good_image"
            description = "a plugin with an image of its own"

        class Reuses(ReferenceHarness):
            name = "reuses"
            description = "a plugin on the built-in reference image"

        class Misnamed(ReferenceHarness):
            name = "something-else"

        class NoImage(ReferenceHarness):
            name = "noimage"
            image = "no-such-image"

        class StealsImage(ReferenceHarness):
            name = "steals"
            image = "proxy"
            image_dir = Path(__file__).parent / "good_image"

        class NotAHarness:
            name = "plain"
    """,
    "raising_plugin": "raise RuntimeError('plugin exploded at import')",
    "exiting_plugin": "import sys\nsys.exit(3)",
    "base_exception_plugin": "class Boom(BaseException): pass\nraise Boom('not an Exception')",
    "os_exit_plugin": "import os\nos._exit(0)",
    "hanging_plugin": "import time\nwhile True: time.sleep(1)",
}


@pytest.fixture
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[EntryPoint]:
    for module, text in _MODULES.items():
        (tmp_path / f"{module}.py").write_text(textwrap.dedent(text))
    (tmp_path / "good_image").mkdir()
    (tmp_path / "good_image" / "Dockerfile").write_text("ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\n")
    (tmp_path / "good_image" / "PARENT").write_text("reference\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    group = harnesses.ENTRY_POINT_GROUP
    eps = [
        EntryPoint("good", "good_plugin:Good", group),
        EntryPoint("reuses", "good_plugin:Reuses", group),
        EntryPoint("misnamed", "good_plugin:Misnamed", group),
        EntryPoint("noimage", "good_plugin:NoImage", group),
        EntryPoint("steals", "good_plugin:StealsImage", group),
        EntryPoint("plain", "good_plugin:NotAHarness", group),
        EntryPoint("raising", "raising_plugin:Anything", group),
        EntryPoint("exiting", "exiting_plugin:Anything", group),
        EntryPoint("baseexc", "base_exception_plugin:Anything", group),
        EntryPoint("osexit", "os_exit_plugin:Anything", group),
        EntryPoint("reference", "good_plugin:Good", group),
        EntryPoint("../escapes", "good_plugin:Good", group),
    ]
    monkeypatch.setattr(harnesses, "entry_points", lambda group: [e for e in eps if e.group == group])
    monkeypatch.setattr(harnesses, "_TRIED", {})  # each test's modules are tried afresh
    return eps


def test_plugins_are_registered_without_being_imported(plugins: list[EntryPoint]) -> None:
    found = registry()
    assert found["good"].origin == "plugin" and found["good"].target == "good_plugin:Good"
    assert found["reference"].origin == "built-in"
    assert found["reference"].target == harnesses.HARNESSES["reference"]
    assert [(r.name, r.reason) for r in refused_plugins()] == [
        ("../escapes", "name is not a plain folder name ([A-Za-z0-9._-]); skipped"),  # <run>/<harness>/ stays inside
        ("reference", "name already taken by built-in; skipped"),
    ]
    assert "../escapes" not in found


def test_a_good_plugin_is_probed_with_its_own_image(plugins: list[EntryPoint], tmp_path: Path) -> None:
    h = get_harness("good")
    assert isinstance(h, ReferenceHarness) and h.name == "good"
    assert get_harness("reuses").image == "reference"
    assert plugin_image_folders() == {"good-image": tmp_path / "good_image"}
    assert images.image_folder("good-image") == tmp_path / "good_image"
    assert images.parent_of("good-image") == "reference"
    assert "Dockerfile" in images.context_digests("good-image")


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("misnamed", "differs from the entry point"),
        ("noimage", "is no built-in image"),
        ("steals", "is a built-in image"),
        ("plain", "not a subclass"),
        ("raising", "plugin exploded at import"),
        ("exiting", r"did not complete \(exit 3\)"),
    ],
)
def test_a_broken_plugin_is_reported_and_skipped(plugins: list[EntryPoint], name: str, reason: str) -> None:
    with pytest.raises(PluginError, match=reason):
        load_entry(registry()[name])
    with pytest.raises(KeyError, match=reason):
        get_harness(name)
    assert isinstance(get_harness("reference"), ReferenceHarness)  # the others still work
    assert set(plugin_image_folders()) == {"good-image"}


def test_unknown_harness_names_a_refused_plugin(plugins: list[EntryPoint]) -> None:
    with pytest.raises(KeyError, match="unknown harness 'nope'"):
        get_harness("nope")


def test_harnesses_list_shows_origins_and_reports_broken_plugins(plugins: list[EntryPoint]) -> None:
    res = CliRunner().invoke(app, ["harnesses", "list"], env={"COLUMNS": "250"})
    assert res.exit_code == 0, res.output
    rows = {line.split("│")[1].strip(): line for line in res.stdout.splitlines() if line.startswith("│")}
    assert "built-in" in rows["reference"] and "images/reference" in rows["reference"]
    assert "plugin" in rows["good"] and "good-image" in rows["good"]
    assert not {"misnamed", "noimage", "steals", "plain", "raising", "exiting"} & set(rows)
    for name in ("misnamed", "noimage", "steals", "plain", "raising", "exiting", "reference"):
        assert f"skipped broken harness plugin: {name}" in res.stderr or f"harness {name!r}" in res.stderr, name


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("baseexc", r"did not complete \(exit 1\): .*Boom: not an Exception"),
        ("osexit", r"did not complete \(exit 0\)"),  # exit 0 without finishing its import
        ("hangs", r"did not finish in 3s"),
    ],
)
def test_an_import_that_escapes_or_hangs_is_refused_in_a_child(
    plugins: list[EntryPoint], monkeypatch: pytest.MonkeyPatch, name: str, reason: str
) -> None:
    # Only here: every other test would wait out its deadline.
    plugins.append(EntryPoint("hangs", "hanging_plugin:Anything", harnesses.ENTRY_POINT_GROUP))
    monkeypatch.setattr(harnesses, "PLUGIN_IMPORT_SECONDS", 3.0)
    with pytest.raises(KeyError, match=reason):
        get_harness(name)
    # `run -H` of such a plugin: a named usage error, never exit 0.
    res = CliRunner().invoke(app, ["run", "-H", name, "-s", "tool_success", "-o", "/nonexistent/out"])
    assert res.exit_code != 0 and reason.split(" ")[0].replace("\\", "") in res.output, res.output
