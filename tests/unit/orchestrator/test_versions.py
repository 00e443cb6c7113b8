"""Version probes are remembered per image content, and only clean answers are."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator.images import BuiltImage
from orchestrator.runtime import ContainerSpec
from orchestrator.versions import MAX_VERSION_CHARS, image_version, shown_version, version_cache_dir


class FakeEngine:
    name = "docker"

    def __init__(self, answers: list[tuple[int | None, bytes]]) -> None:
        self.answers = answers
        self.specs: list[ContainerSpec] = []

    def run_once(self, spec: ContainerSpec, timeout: float) -> tuple[int | None, bytes]:
        self.specs.append(spec)
        return self.answers.pop(0)


def _image(image_id: str = "sha256:aaa") -> BuiltImage:
    return BuiltImage("reference", "harness-probe/reference:1", image_id, "x", {}, False, 0.0)


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HARNESS_PROBE_VERSION_CACHE", str(tmp_path / "versions"))
    return tmp_path / "versions"


def _ask(engine: Any, image: BuiltImage, command: tuple[str, ...] = ("probe", "--version")) -> str | None:
    return image_version(engine, image, command, "run", {"/tmp": "64m"}, 5.0)


def test_a_clean_answer_is_asked_once_per_image_and_command() -> None:
    engine = FakeEngine([(0, b"probe 1.0\n"), (0, b"probe 2.0\n"), (0, b"other\n")])
    assert _ask(engine, _image()) == "probe 1.0"
    assert _ask(engine, _image()) == "probe 1.0"
    assert len(engine.specs) == 1
    spec = engine.specs[0]
    assert spec.network == "none" and spec.read_only and spec.entrypoint == []
    assert _ask(engine, _image("sha256:bbb")) == "probe 2.0"  # another image content is asked anew
    assert _ask(engine, _image(), ("probe", "-V")) == "other"  # so is another command
    assert len(engine.specs) == 3


@pytest.mark.parametrize("answer", [(1, b"error: no such flag"), (None, b"hung"), (0, b"  \n")])
def test_a_failed_killed_or_empty_answer_is_not_remembered(answer: tuple[int | None, bytes]) -> None:
    engine = FakeEngine([answer, (0, b"probe 1.0")])
    _ask(engine, _image())
    assert _ask(engine, _image()) == "probe 1.0"
    assert len(engine.specs) == 2


def test_what_a_failed_command_printed_is_not_a_version() -> None:
    engine = FakeEngine([(1, b"Traceback ...\n  File /opt/mitmproxy/bin/mitmdump\nPermissionError")])
    assert _ask(engine, _image()) is None


@pytest.mark.parametrize("content", ["{", "[]", '{"schema": "version-cache/v1"}', "WRONG"])
def test_a_cache_entry_not_exactly_ours_is_ignored(content: str, _cache: Path) -> None:
    engine = FakeEngine([(0, b"probe 1.0"), (0, b"probe 1.0")])
    _ask(engine, _image())
    (entry,) = _cache.iterdir()
    if content == "WRONG":  # valid format, but for another image: never taken for this one
        doc = json.loads(entry.read_text())
        entry.write_text(json.dumps({**doc, "image_id": "sha256:other", "text": "forged"}))
    else:
        entry.write_text(content)
    assert _ask(engine, _image()) == "probe 1.0"
    assert len(engine.specs) == 2


def test_the_cache_lives_under_xdg_cache_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("HARNESS_PROBE_VERSION_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert version_cache_dir() == tmp_path / "harness-probe" / "versions"


@pytest.mark.parametrize(
    ("printed", "shown"),
    [
        ("codex-cli 0.63.0", "codex-cli 0.63.0"),
        ("1.0 \x1b]0;PWNED\x07\x1b[2J\x1b[31mred\r\x1b[K", "1.0 ]0;PWNED[2J[31mred[K"),
        ("v" * 8_000_000, "v" * MAX_VERSION_CHARS),
        ("\x1b\x07", None),
        ("", None),
        (None, None),
    ],
    ids=["plain", "terminal escapes", "eight megabytes", "nothing printable", "empty", "none"],
)
def test_a_version_is_carried_printable_and_bounded(printed: str | None, shown: str | None) -> None:
    assert shown_version(printed) == shown
