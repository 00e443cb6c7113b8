"""Where the data the tool ships lives (scenarios/, images/, proxy_addons/, schemas), installed or in a checkout.

The one module that knows. In a wheel the top-level `scenarios/` and `images/` folders are installed as
`orchestrator/_data/`; in a checkout (and an editable install of one) they sit beside the package. Either way
the bytes are the same, so image content hashes, and with them image tags, are the same too.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from pathlib import Path

import orchestrator

__all__ = [
    "BuildInfo",
    "DataMissing",
    "build_info",
    "checkout_root",
    "data_root",
    "images_dir",
    "input_key",
    "proxy_addons_dir",
    "scenario_schema_path",
    "scenarios_dir",
    "schemas_dir",
]


class DataMissing(RuntimeError):
    """The package is installed without its data folders (a broken or hand-made install)."""


def _package_dir(package: str) -> Path:
    # Regular packages on a file system resolve to a real Path; a zipped install cannot feed `docker build`.
    found = files(package)
    if not isinstance(found, Path):
        raise DataMissing(f"{package} is not installed as plain files ({found!r}); install the wheel unzipped")
    return found


@cache
def data_root() -> Path:
    """The folder holding `scenarios/` and `images/`: the wheel's `orchestrator/_data`, else the checkout."""
    package = _package_dir("orchestrator")
    for root in (package / "_data", package.parent):
        if (root / "scenarios").is_dir() and (root / "images").is_dir():
            return root
    raise DataMissing(
        f"no scenarios/ and images/ beside {package} nor in {package / '_data'}: "
        "reinstall harness-probe from its wheel or a checkout"
    )


def scenarios_dir() -> Path:
    return data_root() / "scenarios"


def scenario_schema_path() -> Path:
    return scenarios_dir() / "scenario.schema.json"


def images_dir() -> Path:
    return data_root() / "images"


def proxy_addons_dir() -> Path:
    """The addon package the proxy image carries; an importable top-level package in every install."""
    return _package_dir("proxy_addons")


def schemas_dir() -> Path:
    return _package_dir("orchestrator") / "evidence" / "schemas"


@cache
def checkout_root() -> Path | None:
    """The repository root when running from a source checkout (editable or not); None for an installed wheel."""
    root = data_root()
    return root if root == _package_dir("orchestrator").parent and (root / "pyproject.toml").is_file() else None


def input_key(path: Path) -> str:
    """A file's name in recorded inputs, the same in every install: `scenarios/x.yaml`, `orchestrator/...`.

    A file from elsewhere (a user's own scenario) keeps its absolute path.
    """
    resolved = path.resolve()
    for base in (data_root(), _package_dir("orchestrator").parent):
        if resolved.is_relative_to(base.resolve()):
            return resolved.relative_to(base.resolve()).as_posix()
    return str(resolved)


@dataclass(frozen=True)
class BuildInfo:
    version: str  # from orchestrator.__version__, the one place it is set
    git_commit: str | None  # HEAD of the checkout the tool runs from; None when installed
    git_dirty: bool | None  # tracked files differ from HEAD

    def __str__(self) -> str:
        if self.git_commit is None:
            return self.version
        return f"{self.version} (git {self.git_commit[:12]}{', modified' if self.git_dirty else ''})"

    def as_json(self) -> dict[str, str | bool | None]:
        return {"version": self.version, "git_commit": self.git_commit, "git_dirty": self.git_dirty}


def _git(root: Path, *args: str) -> str | None:
    try:
        proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


@cache
def build_info() -> BuildInfo:
    root = checkout_root()
    if root is None or not (root / ".git").exists():
        return BuildInfo(orchestrator.__version__, None, None)
    commit = _git(root, "rev-parse", "HEAD")
    status = _git(root, "status", "--porcelain", "--untracked-files=no") if commit else None
    return BuildInfo(orchestrator.__version__, commit, None if status is None else bool(status))
