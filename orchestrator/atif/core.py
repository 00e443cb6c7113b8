"""What ATIF's core fields say for the facts of a probe rollout: one definition the writer writes by and the reader
holds a trajectory to, so a core field a Harbor reader sees cannot quietly disagree with `extra.harness_probe`."""

from __future__ import annotations

from typing import Any

from orchestrator.evidence.jsonread import JsonFault, loads, strings

__all__ = [
    "ANSWER_PLACES",
    "answer_held",
    "answer_place",
    "as_object",
    "last_agent_step",
    "ok",
    "step_metrics",
    "text",
    "totals",
]

TOKEN_KEYS = (("prompt_tokens", "prompt"), ("completion_tokens", "completion"), ("cached_tokens", "cached"))
TOTAL_KEYS = (
    ("total_prompt_tokens", "prompt"),
    ("total_completion_tokens", "completion"),
    ("total_cached_tokens", "cached"),
)
# Where the core shows the outcome's final answer: the last agent step's message is it (the default, never written),
# holds it within its text (Terminus's keystroke JSON), or a tool call of that step carries it as an argument's
# value (NOOA's return_result, Stirrup's finish) or within one (mini-SWE-agent's submitting shell command); "nowhere"
# says no core field holds it.
ANSWER_PLACES = ("message", "message_text", "tool_arguments", "tool_arguments_text", "nowhere")


def ok(call: dict[str, Any]) -> bool:
    """A successful call: no error category, and a 2xx status or none (a trajectory's extension may hold anything)."""
    status = call.get("status_code")
    number = isinstance(status, int | float) and not isinstance(status, bool)
    return call.get("error_category") is None and (status is None or (number and 200 <= status < 300))


def _stats(call: dict[str, Any] | None) -> dict[str, Any]:
    stats = (call or {}).get("token_stats")
    return stats if isinstance(stats, dict) else {}


def text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # multimodal parts: the text parts, in order; media are not model text here
        return "".join(p.get("text") or "" for p in content if isinstance(p, dict) and p.get("type") == "text")
    return None


def step_metrics(call: dict[str, Any] | None) -> dict[str, Any] | None:
    """An agent step's `metrics`: the token counts of the call it stands for, unknown counts left out."""
    stats = _stats(call)
    metrics = {core: stats.get(ours) for core, ours in TOKEN_KEYS if stats.get(ours) is not None}
    return metrics or None


def totals(calls: list[dict[str, Any]]) -> dict[str, int | None]:
    """A trajectory's `final_metrics` token totals over its successful calls; null where no call knows the count."""
    out: dict[str, int | None] = {}
    for core, ours in TOTAL_KEYS:
        known = [v for c in calls if isinstance(v := _stats(c).get(ours), int) and not isinstance(v, bool)]
        out[core] = sum(known) if known else None
    return out


def as_object(arguments: Any) -> dict[str, Any]:
    """A tool call's arguments as ATIF's object: an object as it is, JSON text of an object parsed, else empty."""
    if isinstance(arguments, dict):
        return arguments
    if isinstance(arguments, str):
        try:
            # The strict reader, as the trajectory is read back with: json.loads would take NaN, 1e400 or a 60-digit
            # integer into the core arguments, and the export then write a file its own reader refuses.
            parsed = loads(arguments)
        except JsonFault:  # not strict JSON (or nested past its depth): no object, as any other text
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return {}


def last_agent_step(steps: list[Any]) -> dict[str, Any] | None:
    return next((s for s in reversed(steps) if isinstance(s, dict) and s.get("source") == "agent"), None)


def answer_held(step: dict[str, Any] | None, answer: str, place: str) -> bool:
    """Whether the last agent step shows `answer` at `place` (one of ANSWER_PLACES). No answer ("") is shown at
    "message" where no last agent message reads as one (a Harbor reader takes one without tool calls for it)."""
    if place == "nowhere":
        return True
    if step is None:
        return not answer
    message = text(step.get("message")) or ""
    calls = step.get("tool_calls") or []
    if not answer:
        return place == "message" and (bool(calls) or not message)
    if place == "message":
        return not calls and message == answer
    if place == "message_text":
        return answer in message
    values = (v for tc in calls if isinstance(tc, dict) for v in strings(tc.get("arguments")))
    if place == "tool_arguments":
        return any(v == answer for v in values)
    return any(answer in v for v in values)


def answer_place(step: dict[str, Any] | None, answer: str) -> str:
    """The first of ANSWER_PLACES at which the last agent step shows the answer."""
    return next(p for p in ANSWER_PLACES if answer_held(step, answer, p))
