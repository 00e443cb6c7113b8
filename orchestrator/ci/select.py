"""Which harnesses a change affects: changed repository paths -> the harnesses a CI run must probe, with reasons."""

from __future__ import annotations

import fnmatch
import posixpath
import re
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["GitError", "Selection", "changed_paths", "image_parents", "select"]

# A harness's own files. `{h}` is its registered name, `{m}` the same as a Python module name.
_OWN = (
    "orchestrator/harnesses/{m}/*",
    "orchestrator/harnesses/{m}.py",
    "orchestrator/harnesses/{m}_*.py",
    "images/{h}/*",
    "tests/fixtures/native/{h}/*",
    "tests/golden/{h}/*",
    "tests/harnesses/test_{m}_*.py",  # a variant of its golden run (test_codex_podman.py); the table is shared
    "tests/unit/harnesses/test_{m}_*.py",
    "tests/unit/orchestrator/test_{m}_*.py",
    "docs/results/{h}.md",
    "docs/results/runs/{h}/*",
)
# The control harness also owns its agent's unit tests and the integration tests that drive it. OpenCode and its
# fork Kilo own the one reader of the store they share.
_OPENCODE_FAMILY = ("orchestrator/harnesses/opencode_family/*",)
_OWN_EXTRA = {
    "reference": ("tests/unit/reference_agent/*", "tests/integration/*"),
    "opencode": _OPENCODE_FAMILY,
    "kilo": _OPENCODE_FAMILY,
}
# Changes that can move no verdict. Everything not matched here or above selects every harness: an
# unknown path is shared code until shown otherwise, so nothing is skipped by omission.
_DOCS = ("docs/*", "*.md", "LICENSE", "LICENSE.*", ".gitignore", ".gitattributes", "*.png", "*.svg")
# The commit the last passing CI run tested (tests/phases.py diffs against it): a record, no input of a verdict.
_RECORDS = (".ci/last-landed",)
# Named only so `--explain` can say why a path selects everything; the default is "all" anyway.
_SHARED = (
    ("proxy_addons/*", "the scripted provider (proxy addon)"),
    ("orchestrator/checks/*", "the checks"),
    ("scenarios/*", "the scenario catalogue"),
    ("orchestrator/runtime/*", "the container runtime"),
    ("images/base/*", "the base image"),
    ("images/proxy/*", "the proxy image"),
    ("*.lock", "a lock file"),
    ("*package-lock.json", "a lock file"),
    ("pyproject.toml", "packaging"),
    ("Makefile", "packaging"),
    (".ci/*", "CI entry point"),
    (".github/*", "CI workflow"),
)


class GitError(RuntimeError):
    """git could not list the changed paths (unknown base ref, not a repository)."""


@dataclass
class Selection:
    harnesses: list[str]
    all: bool
    reasons: dict[str, str] = field(default_factory=dict)  # path -> why it selected what it did

    def to_json(self) -> dict[str, object]:
        return {"harnesses": self.harnesses, "all": self.all, "reasons": dict(sorted(self.reasons.items()))}


def _module(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", name)


def _matches(path: str, pattern: str) -> bool:
    # fnmatch's `*` crosses `/`, which is what a folder pattern `dir/*` wants here.
    return fnmatch.fnmatchcase(path, pattern)


def image_parents(root: Path) -> dict[str, str]:
    """image folder -> the parent folder its PARENT file names (images without one build on `base`)."""
    out = {}
    for parent_file in sorted((root / "images").glob("*/PARENT")):
        out[parent_file.parent.name] = parent_file.read_text().strip()
    return out


def _owners(path: str, harnesses: Iterable[str], images: Mapping[str, str], parents: Mapping[str, str]) -> set[str]:
    owners = set()
    for h in harnesses:
        m = _module(h)
        patterns = [p.format(h=h, m=m) for p in _OWN] + list(_OWN_EXTRA.get(h, ()))
        if any(_matches(path, p) for p in patterns):
            owners.add(h)
    # An intermediate image (images/node) belongs to every harness built on it.
    for h in harnesses:
        chain, image = [], images.get(h, h)
        while image in parents and image not in chain:
            image = parents[image]
            chain.append(image)
        if any(_matches(path, f"images/{c}/*") for c in chain if c not in ("base", "proxy")):
            owners.add(h)
    return owners


def normalise(raw: str) -> str | None:
    """A changed path as the patterns name it: `./`, `//` and `..` resolved lexically (`docs/../orchestrator/x`
    is `orchestrator/x`, not documentation); None for an empty line. A path leading out of the repository is
    kept as given, so it selects all, as an unknown path does."""
    text = raw.strip()
    if not text:
        return None
    path = posixpath.normpath(text)
    return text if path.startswith("../") or path == ".." or path.startswith("/") else path


def select(
    paths: Iterable[str],
    harnesses: Iterable[str],
    *,
    images: Mapping[str, str] | None = None,
    parents: Mapping[str, str] | None = None,
) -> Selection:
    """The harnesses the changed `paths` (repository-relative, `/`-separated) affect, sorted by name.

    `images` maps a harness to its image folder (default: the same name); `parents` an image folder to its parent.
    """
    names = sorted(harnesses)
    images, parents = images or {}, parents or {}
    chosen: set[str] = set()
    everything = False
    reasons: dict[str, str] = {}
    for raw in paths:
        path = normalise(raw)
        if path is None:
            continue
        owners = _owners(path, names, images, parents)
        if owners:
            chosen |= owners
            reasons[path] = "harness files: " + ", ".join(sorted(owners))
        elif any(_matches(path, p) for p in _DOCS):
            reasons[path] = "documentation: selects none"
        elif path in _RECORDS:
            reasons[path] = "CI record of the last passing commit: selects none"
        else:
            everything = True
            why = next((w for p, w in _SHARED if _matches(path, p)), "shared code")
            reasons[path] = f"{why}: selects all"
    selected = names if everything else sorted(chosen)
    return Selection(selected, everything, reasons)


def changed_paths(base: str, repo: Path) -> list[str]:
    """Paths changed between the merge base of `base` and HEAD; a rename counts as both its old and new path."""
    # A base is a revision, never an option (`--base=--output=F` would make git write a file): checked as one by
    # git itself, after `--end-of-options`, and only then used.
    if not base or base.startswith("-"):
        raise GitError(f"--base {base!r} is not a revision")
    verify = ["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", "--end-of-options", f"{base}^{{commit}}"]
    try:
        if subprocess.run(verify, capture_output=True, timeout=60, check=False).returncode != 0:
            raise GitError(f"--base {base!r} is not a revision of {repo}")
    except FileNotFoundError as exc:
        raise GitError("git is not installed") from exc
    cmd = ["git", "-C", str(repo), "diff", "--name-only", "--no-renames", "--end-of-options", f"{base}...HEAD", "--"]
    try:
        out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=60)
    except FileNotFoundError as exc:
        raise GitError("git is not installed") from exc
    except subprocess.CalledProcessError as exc:
        raise GitError(f"git diff against {base!r} failed: {exc.stderr.strip()}") from exc
    return [ln for ln in out.stdout.splitlines() if ln.strip()]


def read_change_list(data: bytes, where: str) -> list[str]:
    """A change list's lines; one that is not UTF-8 is a named GitError, not an internal error."""
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise GitError(f"{where}: line {line} is not UTF-8 (byte {exc.object[exc.start]:#04x})") from None
