"""episode.html links a native file only when a browser shows it as text; an odd file name does not lose the page."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from orchestrator.paths import EpisodePaths
from orchestrator.report.episode_page import write_episode_page

EPISODES = Path(__file__).resolve().parents[2] / "fixtures" / "episodes"
SCRIPT = "<script>document.title='ran'</script>\n"
# Linked: shown as text (or downloaded) by a browser. Case does not matter.
INERT = ["a.json", "b.jsonl", "c.ndjson", "d.txt", "e.log", "f.md", "g.yaml", "h.yml", "i.toml", "j.csv", "k.db"]
INERT += ["l.sqlite", "m.sqlite3", "noext", "UPPER.JSON", "Mixed.Log"]
# Not linked: a browser renders these, or nobody measured what it does with them.
ACTIVE = ["log.html", "log.HTM", "x.svg", "x.xml", "x.xhtml", "x.xht", "x.shtml", "x.mhtml", "x.svgz", "x.pdf"]
ACTIVE += ["x.js", ".json", "trailing.", "x.json.html", "x.html.", ".hidden"]


def _episode(tmp_path: Path, names: list[str]) -> EpisodePaths:
    shutil.copytree(EPISODES / "tool_success", tmp_path / "tool_success")
    paths = EpisodePaths(tmp_path / "tool_success")
    (paths.native / "sub").mkdir(parents=True)
    for name in names:
        (paths.native / "sub" / name).write_text(SCRIPT)
    return paths


def _page(paths: EpisodePaths) -> str:
    result = {"harness": "reference", "scenario": "tool_success", "verdict": "pass", "checks": []}
    page = write_episode_page(paths, result)
    assert page is not None, "episode.html not written"
    return page.read_text(encoding="utf-8")


def _hrefs(page: str) -> set[str]:
    return set(re.findall(r'<a href="(native/[^"]*)"', page))


def test_only_files_a_browser_shows_as_text_are_linked_the_rest_are_named(tmp_path: Path) -> None:
    page = _page(_episode(tmp_path, INERT + ACTIVE))
    assert _hrefs(page) == {f"native/sub/{n}" for n in INERT}
    for name in ACTIVE:
        assert f"<code>native/sub/{name}</code> <i>not linked: a browser could run it as a page" in page, name


def test_a_file_name_that_is_not_utf8_is_linked_by_its_bytes_and_shown_escaped(tmp_path: Path) -> None:
    paths = _episode(tmp_path, [])
    (paths.native / os.fsdecode(b"log-\xff.txt")).write_text("x")
    (paths.native / os.fsdecode(b"page-\xfe.html")).write_text(SCRIPT)
    page = _page(paths)
    assert '<a href="native/log-%FF.txt">native/log-\\udcff.txt</a>' in page
    assert "<code>native/page-\\udcfe.html</code>" in page
    assert "\udcff" not in page and "native/page-%FE" not in page
    json.dumps(page, ensure_ascii=False).encode()  # no lone surrogate left anywhere in it
