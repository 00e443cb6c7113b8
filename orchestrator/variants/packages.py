"""Which registry package each harness image pins, and where its Dockerfile installs it (for variant builds)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = ["FOLDER_IMAGES", "PACKAGES", "Package", "package_of", "pinned_version"]

Registry = Literal["npm", "pypi"]


@dataclass(frozen=True)
class Package:
    """The release an image pins: `registry` package `name`, installed by its Dockerfile under `prefix`
    (the npm project folder holding package.json, or the Python venv)."""

    registry: Registry
    name: str
    prefix: str


# One line per image, so a new adapter adds one line. The npm images install package.json + package-lock.json with
# `npm ci` in `prefix`; the Python images install requirements.lock into the venv `prefix`.
PACKAGES: dict[str, Package] = {
    "pi": Package("npm", "@mariozechner/pi-coding-agent", "/opt/pi"),
    "codex": Package("npm", "@openai/codex", "/opt/codex"),
    "opencode": Package("npm", "opencode-ai", "/opt/opencode"),
    "kilo": Package("npm", "@kilocode/cli", "/opt/kilo"),
    "claude-code": Package("npm", "@anthropic-ai/claude-code", "/opt/claude-code"),
    "cline": Package("npm", "cline", "/opt/cline"),
    "copilot": Package("npm", "@github/copilot", "/opt/copilot"),
    "openclaw": Package("npm", "openclaw", "/opt/openclaw"),
    "qwen-code": Package("npm", "@qwen-code/qwen-code", "/opt/qwen-code"),
    "gemini-cli": Package("npm", "@google/gemini-cli", "/opt/gemini-cli"),
    "hermes": Package("pypi", "hermes-agent", "/opt/hermes"),
    "mini-swe-agent": Package("pypi", "mini-swe-agent", "/opt/mini-swe-agent"),
    "nooa": Package("pypi", "nooa", "/opt/nooa"),
    "terminus-2": Package("pypi", "terminus-ai", "/opt/terminus"),
    "stirrup": Package("pypi", "stirrup", "/opt/stirrup"),
    "crewai": Package("pypi", "crewai", "/opt/crewai"),
    "scicode": Package("pypi", "nvidia-scicode", "/opt/scicode"),
}
# Images whose harness is code in the image folder itself (no registry release): a source is a whole image folder.
FOLDER_IMAGES = frozenset({"reference"})


def package_of(image: str) -> Package | None:
    return PACKAGES.get(image)


def _pin_line(name: str) -> re.Pattern[str]:
    # `NAME==V` or, with extras, `NAME[extra,...]==V` (crewai[anthropic]).
    return re.compile(rf"^\s*{re.escape(name)}(?:\[[^\]\n]*\])?\s*==\s*([^\s;#]+)", re.IGNORECASE | re.MULTILINE)


def pinned_version(folder: Path, pkg: Package) -> str | None:
    """The version the image folder pins for pkg: package.json's dependency, or requirements.in's `NAME==V`."""
    if pkg.registry == "npm":
        try:
            deps = json.loads((folder / "package.json").read_text()).get("dependencies", {})
        except (OSError, ValueError):
            return None
        value = deps.get(pkg.name) if isinstance(deps, dict) else None
        return value if isinstance(value, str) else None
    try:
        found = _pin_line(pkg.name).search((folder / "requirements.in").read_text())
    except OSError:
        return None
    return found.group(1) if found else None


def repin_requirements(text: str, pkg: Package, version: str) -> str:
    """requirements.in with pkg's `==` pin replaced by version (every other line as it was)."""
    return _pin_line(pkg.name).sub(lambda m: m.group(0).replace(m.group(1), version), text, count=1)
