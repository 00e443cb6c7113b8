"""The harness registry: name -> adapter class, imported lazily so one broken adapter cannot break the rest."""

from __future__ import annotations

import importlib

from orchestrator.harnesses.base import Harness, Launch, LaunchContext, NormalizeError

__all__ = ["HARNESSES", "Harness", "Launch", "LaunchContext", "NormalizeError", "get_harness"]

HARNESSES: dict[str, str] = {
    "reference": "orchestrator.harnesses.reference:ReferenceHarness",
    "mini-swe-agent": "orchestrator.harnesses.mini_swe_agent:MiniSweAgentHarness",
    "hermes": "orchestrator.harnesses.hermes:HermesHarness",
    "pi": "orchestrator.harnesses.pi:PiHarness",
    "opencode": "orchestrator.harnesses.opencode:OpenCodeHarness",
    "codex": "orchestrator.harnesses.codex:CodexHarness",
    "claude-code": "orchestrator.harnesses.claude_code:ClaudeCodeHarness",
    "terminus-2": "orchestrator.harnesses.terminus_2:Terminus2Harness",
}


def get_harness(name: str, options: dict[str, str] | None = None) -> Harness:
    try:
        target = HARNESSES[name]
    except KeyError:
        raise KeyError(f"unknown harness {name!r} (known: {', '.join(sorted(HARNESSES))})") from None
    module, _, cls_name = target.partition(":")
    cls = getattr(importlib.import_module(module), cls_name)
    harness: Harness = cls(options)
    return harness
