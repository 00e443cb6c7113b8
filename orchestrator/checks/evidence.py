"""What checks read: the rollout (self-reported), the witness (what crossed the wire), markers and scope."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.evidence import Fault, FormatError, faults

__all__ = ["Evidence", "Witness", "read_witness", "scope_of"]


def _arrival(attempt_id: str) -> tuple[int, str]:
    number = attempt_id.rpartition("-")[2]
    return (int(number), attempt_id) if number.isdigit() else (1 << 62, attempt_id)


def scope_of(scenario: dict[str, Any]) -> dict[str, bool]:
    """The declared scope, plus `terminal_error` for scenarios whose expected outcome is an error."""
    scope = dict(scenario["scope"])
    scope["terminal_error"] = scenario.get("expected", {}).get("outcome") == "error"
    return scope


@dataclass
class Witness:
    events: list[dict[str, Any]]

    def of(self, kind: str) -> Iterator[dict[str, Any]]:
        return (e for e in self.events if e["event"] == kind)

    def attempts(self, kind: str | None = "model") -> list[dict[str, Any]]:
        """Attempts in arrival order (an attempt is written when it ends, so a withheld one can come late)."""
        found = [e for e in self.of("attempt") if kind is None or e["kind"] == kind]
        return sorted(found, key=lambda e: _arrival(e["attempt_id"]))

    def tool_calls(self) -> list[dict[str, Any]]:
        """Tool calls the harness really received: those of replies that were delivered whole."""
        delivered = {a["attempt_id"] for a in self.of("attempt") if a.get("ended") == "complete"}
        return [c for c in self.of("tool_call") if c["attempt_id"] in delivered]

    def results_seen(self, call_id: str) -> list[dict[str, Any]]:
        return [e for e in self.of("tool_result_seen") if e["tool_call_id"] == call_id]

    def markers(self, call_id: str) -> list[dict[str, Any]]:
        return [e for e in self.of("marker") if e["tool_call_id"] == call_id]

    def final_reply(self) -> dict[str, Any] | None:
        """The scripted reply that carried the final answer and reached the harness whole."""
        for a in reversed(self.attempts()):
            if a.get("reply_kind") == "final_answer" and a.get("ended") == "complete":
                return a
        return None

    @staticmethod
    def answer_of(reply: dict[str, Any]) -> str | None:
        answer = reply.get("answer")
        return answer if isinstance(answer, str) else None


def read_witness(path: Path) -> Witness:
    """Parse and validate witness.jsonl line by line; every fault is named `line N: $.path`."""
    if not path.is_file():
        raise FormatError(str(path), [Fault("$", "file does not exist")])
    events: list[dict[str, Any]] = []
    found: list[Fault] = []
    for n, line in enumerate(path.read_text(errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError as exc:
            found.append(Fault(f"line {n}: $", f"not JSON: {exc}"))
            continue
        found.extend(Fault(f"line {n}: {f.path}", f.message) for f in faults(event, "probe-witness/v1"))
        if isinstance(event, dict):
            if event.get("seq") != len(events):
                found.append(Fault(f"line {n}: $.seq", f"expected {len(events)}, got {event.get('seq')!r}"))
            events.append(event)
    if events and events[0].get("event") != "start":
        found.append(Fault("line 1: $.event", "the first event must be `start`"))
    if found:
        raise FormatError(str(path), found)
    return Witness(events)


@dataclass
class Evidence:
    """One episode's inputs; an input that could not be read is None with the reason kept."""

    scenario: dict[str, Any]
    rollout: dict[str, Any] | None = None
    witness: Witness | None = None
    markers: dict[str, str] = field(default_factory=dict)  # marker file name -> content, as collected
    errors: dict[str, str] = field(default_factory=dict)  # input name -> why it is unavailable

    def unavailable(self, name: str) -> str | None:
        if getattr(self, name) is None:
            return self.errors.get(name, f"no {name}")
        return None

    @property
    def r(self) -> dict[str, Any]:
        assert self.rollout is not None
        return self.rollout

    @property
    def w(self) -> Witness:
        assert self.witness is not None
        return self.witness
