"""The generic ATIF harness: any image and command that writes an ATIF trajectory, probed without an adapter.

`-H atif -a image=IMAGE -a command=TEMPLATE -a trajectory=PATH`: the command runs under `sh -c` in the image with
the episode's values filled in (each shell-quoted), and the trajectory it leaves at PATH is read with the ATIF
import (`orchestrator/atif/`). What ATIF cannot express (failed attempts, HTTP status, exit codes, ...) is a named
gap there; a trajectory that is missing or not ATIF is a normalize finding, so the episode fails, never errors.
"""

from __future__ import annotations

import shlex
import string
from pathlib import Path, PurePosixPath
from typing import Any

from orchestrator.atif import atif_to_rollout, load_atif
from orchestrator.atif.validate import validate_extension
from orchestrator.errors import BadOption
from orchestrator.evidence import FormatError
from orchestrator.harnesses.base import Harness, Launch, LaunchContext, NormalizeError
from orchestrator.harnesses.options import Choice, Option, Text
from orchestrator.records import Rollout
from orchestrator.scenarios import Scenario

__all__ = ["OPTIONS", "PLACEHOLDERS", "AtifHarness"]

# Every option of this harness in one place (declared data, parsed by harnesses/options.py); the first three are
# required, checked in __init__ (a declared default of None is "unset").
OPTIONS: tuple[Option, ...] = (
    Text(
        "image",
        None,
        "required: an image of harness-probe's images/ (built as usual), or an image the engine already holds (used "
        "as is; it needs a user `probe` with HOME /home/probe, as images FROM our base have)",
    ),
    Text(
        "command",
        None,
        "required: shell command template run with `sh -c`; placeholders {task} {model} {base_url} {api_key} "
        "{task_id} {workdir} {home} {trajectory}, each filled in shell-quoted",
    ),
    Text("trajectory", None, "required: absolute path below /home/probe, /tmp or a writable path: the ATIF file"),
    Text("version", None, "shell command printing the harness's version (unset: none recorded)"),
    Choice("delivery", ("tools", "keystrokes", "python_blocks"), "tools", "how a scripted step reaches the harness"),
    Text("name", None, "the harness name the rollout carries (unset: the trajectory's agent.name)"),
    Text(
        "writable", None, "comma-separated absolute paths the harness writes besides /home/probe and /tmp (256m each)"
    ),
)
REQUIRED = ("image", "command", "trajectory")
PLACEHOLDERS = ("task", "model", "base_url", "api_key", "task_id", "workdir", "home", "trajectory")


def _placeholders(template: str) -> list[str]:
    try:
        return [field for _, field, _, _ in string.Formatter().parse(template) if field is not None]
    except ValueError as exc:
        raise BadOption(f"harness 'atif': option command is not a valid template: {exc}") from None


_KERNELS_AND_OURS = frozenset({"proc", "sys", "dev", "probe"})


class AtifHarness(Harness):
    name = "atif"
    image = "base"  # replaced per instance by the `image` option
    description = "any harness that writes an ATIF trajectory: image, command template and trajectory path as options"
    protocols = ("chat", "responses", "messages")
    options_declared = OPTIONS

    def __init__(self, options: dict[str, str] | None = None) -> None:
        super().__init__(options)
        if options is None:  # listed (`harnesses list`), not run: nothing to check yet
            self.delivery, self.trajectory = "tools", ""
            return
        missing = [k for k in REQUIRED if not self.options.get(k)]
        if missing:
            raise BadOption(f"harness 'atif' needs option(s) {', '.join(missing)} (-a KEY=VALUE; see harnesses list)")
        unknown = sorted(set(_placeholders(self.options["command"])) - set(PLACEHOLDERS))
        if unknown:
            raise BadOption(f"harness 'atif': command has unknown placeholder(s) {unknown} (known: {PLACEHOLDERS})")
        try:
            # Filled once now as launch() fills it: `{task:d}`, `{task!z}` or a nested `{task:{home}}` fail only
            # when filled, which was after the images were built, as every episode's error.
            self.options["command"].format_map(dict.fromkeys(PLACEHOLDERS, "''"))
        except (ValueError, KeyError, IndexError, AttributeError, TypeError) as exc:
            raise BadOption(f"harness 'atif': command is not a valid template: {exc}") from None
        extra = [p.strip() for p in self.options.get("writable", "").split(",") if p.strip()]
        for p in extra:
            if not PurePosixPath(p).is_absolute() or ".." in PurePosixPath(p).parts or p == "/":
                raise BadOption(f"harness 'atif': writable path {p!r} is not an absolute path below /")
            if PurePosixPath(p).parts[1] in _KERNELS_AND_OURS:
                # A fresh tmpfs over /proc, /sys or /dev fails the container's start (an engine error, not the
                # harness's); over /probe it would hide the markers folder the pod mounts there.
                raise BadOption(f"harness 'atif': writable path {p!r} is below /{PurePosixPath(p).parts[1]}")
        self.writable_paths = {**Harness.writable_paths, **dict.fromkeys(extra, "256m")}  # type: ignore[misc]
        path = PurePosixPath(self.options["trajectory"])
        writable = [PurePosixPath(w) for w in self.writable_paths]
        if not path.is_absolute() or ".." in path.parts or not any(w in path.parents for w in writable):
            where = ", ".join(self.writable_paths)
            raise BadOption(f"harness 'atif': trajectory {str(path)!r} is not an absolute path below {where}")
        self.delivery = self.settings.text("delivery")
        self.trajectory = str(path)
        # Instance attributes over the class's: the image and what is copied out are the options'.
        self.image = self.options["image"]  # type: ignore[misc]
        self.native_paths = (self.trajectory,)  # type: ignore[misc]
        version = self.options.get("version")
        self.version_command = ("sh", "-c", version) if version else ()  # type: ignore[misc]

    def launch(self, scenario: Scenario, ctx: LaunchContext) -> Launch:
        values = {
            "task": scenario.task,
            "model": scenario.model,
            "base_url": ctx.base_url,
            "api_key": ctx.api_key,
            "task_id": ctx.task_id or scenario.name,
            "workdir": ctx.workdir,
            "home": ctx.home,
            "trajectory": self.trajectory,
        }
        command = self.options["command"].format_map({k: shlex.quote(v) for k, v in values.items()})
        env = {"OPENAI_BASE_URL": ctx.base_url, "OPENAI_API_KEY": ctx.api_key, "PROBE_TRAJECTORY": self.trajectory}
        return Launch(command=["sh", "-c", f"{command} </dev/null"], environment=env)

    def harness_profile(self) -> dict[str, Any] | None:
        return None if self.delivery == "tools" else {"delivery": self.delivery}

    def prebuilt_image(self) -> str | None:
        """The image the engine already holds, when the `image` option names no image folder of ours."""
        from orchestrator.images import BuildError, image_folder

        try:
            image_folder(self.image)
        except BuildError:
            return self.image
        return None

    def normalize(self, native_dir: Path) -> Rollout:
        path = native_dir / PurePosixPath(self.trajectory).name
        if not path.is_file():
            raise NormalizeError(f"the harness wrote no ATIF trajectory at {self.trajectory} (nothing was collected)")
        try:
            doc = load_atif(path)
            validate_extension(doc, path.name)
        except FormatError as exc:
            why = " ".join(str(exc).split())[:800]
            raise NormalizeError(f"{self.trajectory} is not an ATIF trajectory: {why}") from None
        try:
            return atif_to_rollout(doc, self.options.get("name"))
        except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
            raise NormalizeError(f"{self.trajectory} does not read as a rollout: {type(exc).__name__}: {exc}") from None
