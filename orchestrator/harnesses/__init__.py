"""The harness registry: built-in adapters and plugins, imported lazily so one broken adapter cannot break the rest.

A plugin is a distribution that registers `NAME = "module:Class"` in the entry-point group
`harness_probe.harnesses`; the class subclasses `Harness` and either reuses a built-in image (`image`) or ships
its own image folder (`image_dir`, holding a Dockerfile and optionally a PARENT file naming the image it builds
FROM). A plugin that cannot be imported or breaks the contract is reported and skipped.
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

import structlog

from orchestrator.errors import UnknownHarness
from orchestrator.harnesses.base import Harness, Launch, LaunchContext, NormalizeError
from orchestrator.resources import images_dir

log = structlog.get_logger(__name__)

__all__ = [
    "ENTRY_POINT_GROUP",
    "HARNESSES",
    "IMAGE_FROM_OPTIONS",
    "BrokenPlugin",
    "Harness",
    "HarnessEntry",
    "Launch",
    "LaunchContext",
    "NormalizeError",
    "PluginError",
    "UnknownHarness",
    "get_harness",
    "load_entry",
    "plugin_image_folders",
    "refused_plugins",
    "registry",
]

ENTRY_POINT_GROUP = "harness_probe.harnesses"
_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
BUILTIN = "built-in"

HARNESSES: dict[str, str] = {
    "reference": "orchestrator.harnesses.reference:ReferenceHarness",
    "mini-swe-agent": "orchestrator.harnesses.mini_swe_agent:MiniSweAgentHarness",
    "hermes": "orchestrator.harnesses.hermes:HermesHarness",
    "pi": "orchestrator.harnesses.pi:PiHarness",
    "opencode": "orchestrator.harnesses.opencode:OpenCodeHarness",
    "codex": "orchestrator.harnesses.codex:CodexHarness",
    "claude-code": "orchestrator.harnesses.claude_code:ClaudeCodeHarness",
    "stirrup": "orchestrator.harnesses.stirrup:StirrupHarness",
    "terminus-2": "orchestrator.harnesses.terminus_2:Terminus2Harness",
    "nooa": "orchestrator.harnesses.nooa:NooaHarness",
    "scicode": "orchestrator.harnesses.scicode:SciCodeHarness",
    "copilot": "orchestrator.harnesses.copilot:CopilotHarness",
    "qwen-code": "orchestrator.harnesses.qwen_code:QwenCodeHarness",
    "crewai": "orchestrator.harnesses.crewai:CrewAIHarness",
    "gemini-cli": "orchestrator.harnesses.gemini_cli:GeminiCliHarness",
    "atif": "orchestrator.harnesses.atif:AtifHarness",
    "cline": "orchestrator.harnesses.cline:ClineHarness",
    "openclaw": "orchestrator.harnesses.openclaw:OpenClawHarness",
    "kilo": "orchestrator.harnesses.kilo:KiloHarness",
}
# Harnesses whose image is a run's option (-a image=...), not images/<name>: CI cannot probe them unconfigured.
IMAGE_FROM_OPTIONS = frozenset({"atif"})


class PluginError(RuntimeError):
    """A harness plugin cannot be used; the message says which and why."""


@dataclass(frozen=True)
class HarnessEntry:
    name: str
    target: str  # "module:Class"
    origin: str  # "built-in", or "plugin DIST VERSION"

    @property
    def builtin(self) -> bool:
        return self.origin == BUILTIN


@dataclass(frozen=True)
class BrokenPlugin:
    name: str
    origin: str
    reason: str


def _origin(ep: EntryPoint) -> str:
    dist = ep.dist
    return f"plugin {dist.name} {dist.version}" if dist is not None else "plugin"


def _discover() -> tuple[dict[str, HarnessEntry], list[BrokenPlugin]]:
    """Built-ins plus the plugins' entry points, none imported yet; a clashing name is refused, not merged."""
    found = {name: HarnessEntry(name, target, BUILTIN) for name, target in HARNESSES.items()}
    refused: list[BrokenPlugin] = []
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: (e.name, e.value)):
        origin = _origin(ep)
        if not _PLAIN_NAME.fullmatch(ep.name):
            # The name is a folder of every run directory (<run>/<harness>/<scenario>) and of images/.
            refused.append(BrokenPlugin(ep.name, origin, "name is not a plain folder name ([A-Za-z0-9._-]); skipped"))
            continue
        if ep.name in found:
            clash = found[ep.name].origin
            refused.append(BrokenPlugin(ep.name, origin, f"name already taken by {clash}; skipped"))
            continue
        found[ep.name] = HarnessEntry(ep.name, ep.value, origin)
    return found, refused


def registry() -> dict[str, HarnessEntry]:
    """Every usable harness name (built-in or plugin), without importing any adapter."""
    return _discover()[0]


def refused_plugins() -> list[BrokenPlugin]:
    """Plugins skipped at discovery (their name clashes); import failures show up in `load_entry`."""
    return _discover()[1]


def _check_image(cls: type[Harness]) -> None:
    builtin = images_dir() / cls.image
    if cls.image_dir is None:
        if not (builtin / "Dockerfile").is_file():
            raise PluginError(f"image {cls.image!r} is no built-in image and the class sets no image_dir")
        return
    folder = Path(cls.image_dir)
    if not (folder / "Dockerfile").is_file():
        raise PluginError(f"image_dir {folder} has no Dockerfile")
    if builtin.exists():
        raise PluginError(f"image name {cls.image!r} is a built-in image; name the plugin's image differently")


PLUGIN_IMPORT_SECONDS = 30.0
_PLUGIN_OK = "harness-probe: plugin imported"
# Run in a child: the import, the attribute, then the marker; only a child that prints it imported cleanly.
_TRIAL = (
    "import importlib, sys\n"
    "getattr(importlib.import_module(sys.argv[1]), sys.argv[2])\n"
    "print(sys.argv[3], flush=True)\n"
)
_TRIED: dict[str, str | None] = {}  # target -> why its trial import failed (None: it imported cleanly)


def _trial_import(entry: HarnessEntry, module: str, attr: str) -> None:
    """Import a plugin first in a child bound by a deadline: an import that raises BaseException, calls
    os._exit(0) or never returns is refused by name, and never runs in this process."""
    if entry.target not in _TRIED:
        _TRIED[entry.target] = _trial(entry, module, attr)
    why = _TRIED[entry.target]
    if why is not None:
        raise PluginError(why)


def _trial(entry: HarnessEntry, module: str, attr: str) -> str | None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    argv = [sys.executable, "-c", _TRIAL, module, attr, _PLUGIN_OK]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=PLUGIN_IMPORT_SECONDS, env=env, check=False)
    except subprocess.TimeoutExpired:
        return f"cannot load {entry.target}: its import did not finish in {PLUGIN_IMPORT_SECONDS:g}s"
    if proc.returncode != 0 or proc.stdout.strip().splitlines()[-1:] != [_PLUGIN_OK]:
        last = (proc.stderr.strip().splitlines() or ["no error output"])[-1][:300]
        return f"cannot load {entry.target}: its import did not complete (exit {proc.returncode}): {last}"
    return None


def load_entry(entry: HarnessEntry) -> type[Harness]:
    """Import an adapter class and check the contract; PluginError says what is wrong (never a traceback)."""
    module, _, attr = entry.target.partition(":")
    if not entry.builtin:
        try:
            _trial_import(entry, module, attr)
        except PluginError as exc:
            raise PluginError(f"harness {entry.name!r} ({entry.origin}): {exc}") from None
    try:
        cls = getattr(importlib.import_module(module), attr)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # a plugin's import may fail in any way; it must not take us down
        raise PluginError(f"harness {entry.name!r} ({entry.origin}): cannot load {entry.target}: {exc!r}") from None
    if entry.builtin:
        return cls  # type: ignore[no-any-return]
    try:
        if not (isinstance(cls, type) and issubclass(cls, Harness)):
            raise PluginError(f"{entry.target} is not a subclass of orchestrator.harnesses.Harness")
        if getattr(cls, "name", None) != entry.name:
            raise PluginError(f"class name attribute {getattr(cls, 'name', None)!r} differs from the entry point")
        _check_image(cls)
    except PluginError as exc:
        raise PluginError(f"harness {entry.name!r} ({entry.origin}): {exc}") from None
    return cls


def get_harness(name: str, options: dict[str, str] | None = None) -> Harness:
    entries, refused = _discover()
    try:
        entry = entries[name]
    except KeyError:
        why = next((f": {r.origin}: {r.reason}" for r in refused if r.name == name), "")
        raise UnknownHarness(f"unknown harness {name!r}{why} (known: {', '.join(sorted(entries))})") from None
    try:
        cls = load_entry(entry)
    except PluginError as exc:
        raise UnknownHarness(str(exc)) from None
    return cls(options)  # BadOption for an option it does not declare or a value it does not allow


def plugin_image_folders() -> dict[str, Path]:
    """Image name -> folder for the images plugins ship; a plugin that does not load is logged and skipped."""
    folders: dict[str, Path] = {}
    for entry in registry().values():
        if entry.builtin:
            continue
        try:
            cls = load_entry(entry)
        except PluginError as exc:
            log.warning("harness plugin skipped", reason=str(exc))
            continue
        if cls.image_dir is not None:
            folders[cls.image] = Path(cls.image_dir)
    return folders
