"""Runs one Stirrup session against the probe's provider and saves what `session.run` returned, untouched.

Stirrup is a library and persists no trajectory of its own; its only self-report is the return value of
`session.run`: `(finish_params, history, metadata)`. This driver plays the part NeMo Gym's wrapper plays: it
builds Stirrup's default client and tools, runs the task once, and writes those three values as JSON through
pydantic's own serializer (no field added, dropped or renamed). When `session.run` raises instead of
returning, nothing was returned: the record then holds the exception Stirrup let escape (type and message)
and `returned` is null. Configuration comes from the environment (PROBE_*), the task from argv[1].
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

RECORD_FORMAT = "probe-stirrup-run/v1"


def _write(path: Path, record: dict[str, Any]) -> None:
    # Written once, at the end, through a temporary file: a run killed mid-way leaves no half record.
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp", encoding="utf-8") as tmp:
        json.dump(record, tmp, indent=1, ensure_ascii=False)
        tmp.flush()
        os.fsync(tmp.fileno())
    os.replace(tmp.name, path)


async def _run(task: str) -> tuple[Any, Any, Any]:
    from stirrup import Agent
    from stirrup.clients.chat_completions_client import ChatCompletionsClient
    from stirrup.tools import default_tools

    client = ChatCompletionsClient(
        model=os.environ["PROBE_MODEL"],
        base_url=os.environ["PROBE_BASE_URL"],
        api_key=os.environ["PROBE_API_KEY"],
        max_tokens=int(os.environ.get("PROBE_MAX_TOKENS", "4096")),
        context_window_tokens=int(os.environ.get("PROBE_CONTEXT_WINDOW", "128000")),
        timeout=float(os.environ["PROBE_REQUEST_TIMEOUT"]),
        max_retries=int(os.environ["PROBE_MAX_RETRIES"]),
    )
    agent = Agent(client=client, name="probe", max_turns=int(os.environ["PROBE_MAX_TURNS"]), tools=default_tools())
    async with agent.session(output_dir=os.environ["PROBE_OUTPUT_DIR"]) as session:
        return await session.run(task)


def main() -> int:
    from importlib.metadata import version

    from pydantic_core import to_jsonable_python

    if len(sys.argv) != 2:
        print("usage: probe-stirrup TASK", file=sys.stderr)
        return 2
    record: dict[str, Any] = {
        "format": RECORD_FORMAT,
        "stirrup_version": version("stirrup"),
        "returned": None,
        "raised": None,
    }
    code = 0
    try:
        finish_params, history, metadata = asyncio.run(_run(sys.argv[1]))
    # Whatever escaped Stirrup is the record, Ctrl-C included.
    except BaseException as exc:
        record["raised"] = {"type": f"{type(exc).__module__}.{type(exc).__qualname__}", "message": str(exc)}
        # An openai SDK status error carries the HTTP status and the error body of the reply that ended the run.
        status, body = getattr(exc, "status_code", None), getattr(exc, "body", None)
        if isinstance(status, int):
            record["raised"]["status_code"] = status
            record["raised"]["body"] = to_jsonable_python(body, fallback=repr)
        code = 1
    else:
        # `fallback=repr` only for values pydantic cannot encode (none are expected): kept visible, never dropped.
        record["returned"] = {
            "finish_params": to_jsonable_python(finish_params, fallback=repr),
            "history": to_jsonable_python(history, fallback=repr),
            "metadata": to_jsonable_python(metadata, fallback=repr),
        }
        code = 0 if finish_params is not None else 1
    _write(Path(os.environ["PROBE_RECORD"]), record)
    return code


if __name__ == "__main__":
    sys.exit(main())
