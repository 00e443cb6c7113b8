"""Runs one CrewAI crew (one agent, one task, one shell tool) against the probe's provider and saves what CrewAI
itself reported: every event its event bus emitted, and what `crew.kickoff()` returned (or the exception it raised).

CrewAI is a library with no CLI; this driver plays the part of the user's script. It builds CrewAI's own `LLM`
for the chosen protocol (its native OpenAI provider for Chat Completions and Responses, its native Anthropic
provider for Messages), one agent holding a `bash` tool, one task, and kicks the crew off once. Its self-report is
what CrewAI hands out: the events of its event bus, received through its listener API and written one JSON line
each, as CrewAI's own serializer writes them, in the order the bus delivered them; and the returned
`CrewOutput` (raw answer, task outputs with their messages, token usage) through pydantic's own serializer. Nothing
here sees or writes the HTTP traffic. Configuration comes from the environment (PROBE_*), the task from argv[1].
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

RECORD_FORMAT = "probe-crewai-run/v1"
EVENTS_FORMAT = "probe-crewai-events/v1"
# What one shell command may take: far beyond any scripted command, short of the episode.
COMMAND_SECONDS = 120


def _write(path: Path, record: dict[str, Any]) -> None:
    # Written once, at the end, through a temporary file: a run killed mid-way leaves no half record.
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp", encoding="utf-8") as tmp:
        json.dump(record, tmp, indent=1, ensure_ascii=False, default=repr)
        tmp.flush()
        os.fsync(tmp.fileno())
    os.replace(tmp.name, path)


class EventLog:
    """CrewAI's events, one JSON line each, appended and flushed as they arrive (a killed run keeps what came)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = path.open("w", encoding="utf-8")
        self._lock = threading.Lock()
        self._file.write(json.dumps({"format": EVENTS_FORMAT}) + "\n")
        self._file.flush()

    def listen(self) -> int:
        """Register one handler for every event type CrewAI defines; returns how many types it listens to."""
        import crewai.events.event_types  # noqa: F401  (defines the event classes)
        from crewai.events.base_events import BaseEvent
        from crewai.events.event_bus import crewai_event_bus

        # An async handler: the bus runs those on one event loop in the order it received the events (its sync
        # handlers run in a thread pool, whose order is not the emission order).
        async def record(source: Any, event: Any) -> None:
            self.write(event)

        types: set[type[BaseEvent]] = set()
        todo = [BaseEvent]
        while todo:
            for sub in todo.pop().__subclasses__():
                if sub not in types:
                    types.add(sub)
                    todo.append(sub)
        for cls in sorted(types, key=lambda c: f"{c.__module__}.{c.__qualname__}"):
            crewai_event_bus.on(cls)(record)
        return len(types)

    def write(self, event: Any) -> None:
        from crewai.utilities.serialization import to_serializable

        try:
            # CrewAI's own serializer (the one BaseEvent.to_json() calls) without its five-level depth cap, past
            # which it writes values as Python reprs: the tool calls inside a response sit deeper than that.
            data = to_serializable(event, max_depth=0)
        except Exception as exc:  # an event CrewAI cannot serialize stays visible, never dropped
            data = {"type": getattr(event, "type", None), "unserializable": repr(exc)}
        line = json.dumps(data, ensure_ascii=False, default=repr)
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()


def _bash_tool() -> Any:
    from crewai.tools import BaseTool
    from pydantic import BaseModel, Field

    class BashArgs(BaseModel):
        command: str = Field(description="The bash command to run")

    class BashTool(BaseTool):
        name: str = "bash"
        description: str = "Run a bash command; returns its exit code and its output (stdout and stderr)."
        args_schema: type[BaseModel] = BashArgs

        def _run(self, command: str) -> str:
            try:
                done = subprocess.run(
                    ["bash", "-c", command],
                    capture_output=True,
                    text=True,
                    timeout=COMMAND_SECONDS,
                    stdin=subprocess.DEVNULL,
                )
            except subprocess.TimeoutExpired:
                return f"Exit code: timeout\nOutput:\ncommand did not finish in {COMMAND_SECONDS} s"
            return f"Exit code: {done.returncode}\nOutput:\n{done.stdout}{done.stderr}"

    return BashTool()


def _llm() -> Any:
    from crewai import LLM

    protocol = os.environ["PROBE_PROTOCOL"]
    common: dict[str, Any] = {
        "api_key": os.environ["PROBE_API_KEY"],
        "timeout": float(os.environ["PROBE_REQUEST_TIMEOUT"]),
        "max_retries": int(os.environ["PROBE_MAX_RETRIES"]),
    }
    if protocol == "messages":
        # The Anthropic SDK appends /v1/messages to its base URL itself.
        base = os.environ["PROBE_BASE_URL"].rstrip("/").removesuffix("/v1")
        return LLM(model=os.environ["PROBE_MODEL"], provider="anthropic", base_url=base, **common)
    # `openai/<model>` with a custom base URL routes to CrewAI's native OpenAI provider (not LiteLLM).
    api = "responses" if protocol == "responses" else "completions"
    return LLM(model=f"openai/{os.environ['PROBE_MODEL']}", base_url=os.environ["PROBE_BASE_URL"], api=api, **common)


def _kickoff(task: str) -> Any:
    from crewai import Agent, Crew, Process, Task

    agent = Agent(
        role="Shell operator",
        goal="Carry out the task you are given, running shell commands when asked to",
        backstory="You run the commands you are asked to run and report the answer you are given.",
        llm=_llm(),
        tools=[_bash_tool()],
        verbose=False,
    )
    work = Task(description=task, expected_output="The final answer you were given.", agent=agent)
    crew = Crew(agents=[agent], tasks=[work], process=Process.sequential, verbose=False)
    return crew.kickoff()


def main() -> int:
    from importlib.metadata import version

    if len(sys.argv) != 2:
        print("usage: probe-crewai TASK", file=sys.stderr)
        return 2
    events = EventLog(Path(os.environ["PROBE_EVENTS"]))
    listened = events.listen()
    record: dict[str, Any] = {
        "format": RECORD_FORMAT,
        "crewai_version": version("crewai"),
        "protocol": os.environ["PROBE_PROTOCOL"],
        "event_types": listened,
        "returned": None,
        "raised": None,
    }
    code = 0
    try:
        output = _kickoff(sys.argv[1])
    # Whatever escaped CrewAI is the record, Ctrl-C included.
    except BaseException as exc:
        record["raised"] = {"type": f"{type(exc).__module__}.{type(exc).__qualname__}", "message": str(exc)}
        status, body = getattr(exc, "status_code", None), getattr(exc, "body", None)
        if isinstance(status, int):
            record["raised"]["status_code"] = status
            record["raised"]["body"] = body
        code = 1
    else:
        record["returned"] = output.model_dump(mode="json")
    from crewai.events.event_bus import crewai_event_bus

    # Every event handed to the listener is written before the record that says the run is over.
    record["events_flushed"] = crewai_event_bus.flush(timeout=30)
    _write(Path(os.environ["PROBE_RECORD"]), record)
    return code


if __name__ == "__main__":
    sys.exit(main())
