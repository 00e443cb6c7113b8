"""The tool as a user gets it: the built wheel in a fresh venv, used from outside the checkout, and a harness plugin.

One wheel build and one venv serve the whole module; the images built from the checkout (the `images` fixture)
are the ones the installed tool must find by their content hashes, so nothing is rebuilt.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from orchestrator import __version__
from orchestrator.evidence import load_json
from orchestrator.images import context_digests, image_names
from tests.integration.conftest import Images, labelled

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]
UV = str(Path(sys.executable).with_name("uv"))
_DIGESTS = (
    "import json; from orchestrator import images, resources; "
    "print(json.dumps({'root': str(resources.data_root()), "
    "'digests': {n: images.context_digests(n) for n in images.image_names()}}))"
)


@dataclass
class Installed:
    venv: Path
    work: Path  # a directory outside the checkout, where the user runs the tool

    @property
    def python(self) -> str:
        return str(self.venv / "bin" / "python")

    def hp(self, *args: str, cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return _run([str(self.venv / "bin" / "harness-probe"), *args], cwd or self.work, timeout=timeout)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, "COLUMNS": "200", "UV_NATIVE_TLS": "1", **extra}


def _run(cmd: list[str], cwd: Path, timeout: float = 600, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=_env(**env), capture_output=True, text=True, timeout=timeout, check=False)


def _ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, f"{proc.args}: exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _ok(_run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(ROOT)], ROOT, timeout=300))
    (whl,) = out.glob("harness_probe-*.whl")
    return whl


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    base = tmp_path_factory.mktemp("user")
    assert not base.resolve().is_relative_to(ROOT)
    venv = base / "venv"
    _ok(_run([UV, "venv", "--quiet", "--python", sys.executable, str(venv)], base))
    _ok(_run([UV, "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), str(wheel)], base))
    (base / "work").mkdir()
    return Installed(venv, base / "work")


def test_wheel_carries_the_data_folders(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder, inside in (("scenarios", "orchestrator/_data/scenarios"), ("images", "orchestrator/_data/images")):
        tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files", folder], capture_output=True, text=True)
        files = [f for f in tracked.stdout.split() if (ROOT / f).is_file()]
        assert files, folder
        missing = [f for f in files if f"{inside}/{f.partition('/')[2]}" not in names]
        assert missing == [], f"not in the wheel: {missing}"
    assert "proxy_addons/interpreter.py" in names
    assert "orchestrator/_data/images/reference/probe_reference/__init__.py" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def test_image_hashes_are_the_same_in_every_install(installed: Installed) -> None:
    """Image tags are made of these digests (and the parent's id): equal digests, shared image caches."""
    editable = {n: context_digests(n) for n in image_names()}
    from_wheel = json.loads(_ok(_run([installed.python, "-c", _DIGESTS], installed.work)))
    checkout = json.loads(_ok(_run([installed.python, "-c", _DIGESTS], installed.work, PYTHONPATH=str(ROOT))))
    assert Path(from_wheel["root"]).is_relative_to(installed.venv), from_wheel["root"]
    assert Path(checkout["root"]) == ROOT
    assert len(editable) >= 9 and {"base", "proxy", "reference"} <= set(editable)
    assert from_wheel["digests"] == editable
    assert checkout["digests"] == editable


def _user_scenario(work: Path, name: str, **changes: object) -> Path:
    data = yaml.safe_load((ROOT / "scenarios" / "tool_success.yaml").read_text())
    data.update(name=name, **changes)
    path = work / "mine" / f"{name}.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump(data))
    return path


def test_installed_tool_works_from_any_directory(installed: Installed, images: Images) -> None:
    assert _ok(installed.hp("--version")) == f"harness-probe {__version__}\n"  # no checkout, no git commit

    listed = _ok(installed.hp("scenarios", "list"))
    catalogue = sorted(p.stem for p in (ROOT / "scenarios").glob("*.yaml"))
    assert len(catalogue) >= 11
    assert [n for n in catalogue if n not in listed] == []

    schema = json.loads(_ok(installed.hp("scenarios", "schema")))
    assert schema["title"] == "probe-scenario/v1"

    harnesses = _ok(installed.hp("harnesses", "list"))
    assert "reference" in harnesses and "built-in" in harnesses

    # A user's own scenario file: a schema fault is named by JSONPath; a valid file is probed.
    bad = _user_scenario(installed.work, "broken_one", scope={"tools": "yes"})
    res = installed.hp("scenarios", "validate", str(bad.relative_to(installed.work)))
    assert res.returncode == 2 and "$.scope.tools" in res.stderr, res.stderr
    mine = _user_scenario(installed.work, "my_probe")

    res = installed.hp("run", "-H", "reference", "--scenario", "mine/my_probe.yaml", "-o", "out")
    _ok(res)
    out = installed.work / "out"
    suite = load_json(out / "suite.json", "suite/v1")
    # The same content hashes as the checkout's build: the installed tool reused the images, built nothing.
    assert suite["images"]["reference"]["tag"] == images.reference.tag
    assert suite["images"]["proxy"]["tag"] == images.proxy.tag
    assert suite["inputs"][str(mine.resolve())]
    assert "scenarios/scenario.schema.json" in suite["inputs"]
    assert "orchestrator/evidence/schemas/runtime.v1.json" in suite["inputs"]
    assert "images/reference/probe_reference/__init__.py" in suite["inputs"]
    result = load_json(out / "reference" / "my_probe" / "scenario_result.json", "scenario-result/v1")
    assert result["verdict"] == "pass", result
    runtime = load_json(out / "reference" / "my_probe" / "runtime.json", "runtime/v1")
    assert runtime["tool"] == {"version": __version__, "git_commit": None, "git_dirty": None}
    for kind in ("ps", "network", "volume"):
        assert labelled(kind, suite["run_id"]) == []


_PLUGIN_PYPROJECT = """\
[build-system]
requires = ["hatchling==1.29.0"]
build-backend = "hatchling.build"

[project]
name = "tiny-probe"
version = "0.0.1"

[project.entry-points."harness_probe.harnesses"]
tiny = "tiny_probe:TinyHarness"
broken = "tiny_probe.missing:Nope"
reference = "tiny_probe:TinyHarness"
"""

_PLUGIN_MODULE = '''\
"""A third-party harness: the reference agent, in an image of the plugin's own built FROM the reference image."""

from pathlib import Path

from orchestrator.harnesses.reference import ReferenceHarness


class TinyHarness(ReferenceHarness):
    name = "tiny"
    image = "tiny-reference"
    image_dir = Path(__file__).parent / "image"
    description = "test plugin"
'''


def test_plugin_harness_is_listed_and_probed(installed: Installed, images: Images, tmp_path: Path) -> None:
    plugin = tmp_path / "tiny-probe"
    (plugin / "tiny_probe" / "image").mkdir(parents=True)
    (plugin / "pyproject.toml").write_text(_PLUGIN_PYPROJECT)
    (plugin / "tiny_probe" / "__init__.py").write_text(_PLUGIN_MODULE)
    (plugin / "tiny_probe" / "image" / "PARENT").write_text("reference\n")
    (plugin / "tiny_probe" / "image" / "Dockerfile").write_text(
        'ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nLABEL org.opencontainers.image.title="tiny-probe test plugin"\n'
    )
    _ok(_run([UV, "pip", "install", "--quiet", "--python", installed.python, str(plugin)], tmp_path))

    res = installed.hp("harnesses", "list")
    listed = _ok(res)
    assert "plugin tiny-probe 0.0.1" in listed and "tiny-reference" in listed
    assert "reference" in listed and "built-in" in listed  # the built-in keeps its name
    assert "cannot load tiny_probe.missing:Nope" in res.stderr
    assert "name already taken by built-in" in res.stderr

    res = installed.hp("run", "-H", "broken", "-s", "tool_success", "-o", "out-broken")
    assert res.returncode == 2 and "cannot load" in res.stderr, res.stderr
    assert not (installed.work / "out-broken").exists()

    _ok(installed.hp("run", "-H", "tiny", "-s", "tool_success", "-o", "out-tiny"))
    out = installed.work / "out-tiny"
    suite = load_json(out / "suite.json", "suite/v1")
    assert suite["images"]["tiny-reference"]["tag"].startswith("harness-probe/tiny-reference:")
    assert suite["images"]["proxy"]["tag"] == images.proxy.tag
    result = load_json(out / "tiny" / "tool_success" / "scenario_result.json", "scenario-result/v1")
    assert result["verdict"] == "pass", result
    for kind in ("ps", "network", "volume"):
        assert labelled(kind, suite["run_id"]) == []
