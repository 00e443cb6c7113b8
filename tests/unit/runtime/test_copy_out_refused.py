"""A path the engine refuses to archive (a link loop, a parent that is a file, a FIFO the harness left) is a
collection finding, never the episode's error, and the engine's message keeps no host path."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from orchestrator.runtime.collect import Collection
from orchestrator.runtime.docker_container import RunningContainer

LOOP = "evalSymlinksInScope: too many links in /var/lib/docker/overlay2/3f2a9c/merged/home/probe/.probe-reference"


class _Response:
    def __init__(self, status: int, body: Any) -> None:
        self.status_code = status
        self._body = body
        self.closed = False

    def json(self) -> Any:
        if isinstance(self._body, Exception):
            raise self._body
        return self._body

    def close(self) -> None:
        self.closed = True


class _Api:
    def __init__(self, res: _Response) -> None:
        self.res = res

    def _url(self, template: str, *args: str) -> str:
        return template.format(*args)

    def _get(self, url: str, **_: Any) -> _Response:
        return self.res

    def _raise_for_status(self, res: _Response) -> None:
        raise AssertionError("an error status must not reach the engine's raise")


def _container(res: _Response) -> RunningContainer:
    return RunningContainer(SimpleNamespace(id="c1", name="c1", client=SimpleNamespace(api=_Api(res))))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("status", "body", "reason"),
    [
        (
            500,
            {"message": LOOP},
            "the engine could not archive it: evalSymlinksInScope: too many links in /home/probe/.probe-reference",
        ),
        (400, {"message": "not a directory"}, "the engine could not archive it: not a directory"),
        (500, ValueError("no JSON"), "the engine could not archive it: HTTP 500"),
    ],
)
def test_a_refused_archive_is_a_finding(tmp_path: Path, status: int, body: Any, reason: str) -> None:
    res = _Response(status, body)
    collection = Collection()
    assert _container(res).copy_out("/home/probe/.probe-reference", tmp_path, collection) is False
    (finding,) = collection.findings
    assert (finding.kind, finding.path, finding.reason) == ("unreadable", "/home/probe/.probe-reference", reason)
    assert "overlay2" not in collection.to_json()["findings"][0]["reason"]
    assert res.closed


def test_a_missing_path_is_no_finding(tmp_path: Path) -> None:
    collection = Collection()
    assert _container(_Response(404, {"message": "no such file"})).copy_out("/x", tmp_path, collection) is False
    assert collection.findings == []
