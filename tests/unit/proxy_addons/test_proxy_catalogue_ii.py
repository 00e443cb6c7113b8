"""Each scenario of catalogue II, as shipped, played in-process by an honest harness over the official SDKs: the
fault is played as scripted, the step it altered is served again, and the witness says how it went (over google-genai:
test_proxy_catalogue_ii_gemini.py)."""

from __future__ import annotations

import json
import time
from typing import Any

import anthropic
import openai
import pytest
import yaml
from conftest import REPO
from google.genai import errors as genai_errors
from test_proxy_sdks import PROTOCOLS, Driver, drive, execute

__all__ = ["drive"]  # the fixture, shared with test_proxy_sdks

CATALOGUE_II = [
    "overloaded_529",
    "retry_after",
    "quota_window",
    "length_cut",
    "tool_args_truncated",
    "sse_malformed",
    "stream_error_event",
    "body_not_json",
]
# A quota's window shortened for a unit test: the shipped 20 s would be slept through for real.
SHORT_WINDOW = 0.6
LIMIT_FINISHES = {"length", "incomplete", "max_tokens", "MAX_TOKENS"}
RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"


def _scenario(name: str) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((REPO / "scenarios" / f"{name}.yaml").read_text())
    for fault in document["faults"]:
        if fault["kind"] == "quota":
            fault["window_seconds"] = SHORT_WINDOW
    return document


def retry_info_wait(error: genai_errors.APIError) -> float | None:
    """The wait a Google error asks for in its `google.rpc.RetryInfo` detail (a Duration: `3s`, `0.601s`)."""
    body = error.details if isinstance(error.details, dict) else {}
    for detail in body.get("error", {}).get("details", []):
        if detail.get("@type") == RETRY_INFO:
            return float(detail["retryDelay"].removesuffix("s"))
    return None


def _wait(error: Exception) -> float:
    """The wait a 429 or 5xx asks for (retry-after-ms first, as the SDKs read it; Google's RetryInfo), capped for a
    unit test."""
    if isinstance(error, genai_errors.APIError):
        return min(retry_info_wait(error) or 0.0, 1.0)
    headers = getattr(getattr(error, "response", None), "headers", {}) or {}
    if "retry-after-ms" in headers:
        return min(float(headers["retry-after-ms"]) / 1000, 1.0)
    return min(float(headers.get("retry-after", 0)), 1.0)


def _parsable(turn: Any) -> bool:
    try:
        return all(isinstance(c["arguments"], dict) for c in turn.calls)
    except (TypeError, KeyError):
        return False


def play(driver: Driver, stream: bool) -> tuple[list[Any], list[str]]:
    """An honest harness: waits as asked and retries, asks again after a reply it cannot use or one cut at the limit,
    runs only calls whose arguments parse, stops at a whole text answer."""
    turns: list[Any] = []
    failures: list[str] = []
    while len(turns) + len(failures) < 14:
        try:
            turn = driver.turn(stream)
        except (openai.APIStatusError, anthropic.APIStatusError) as error:
            failures.append(str(error.status_code))
            time.sleep(_wait(error))
            continue
        except genai_errors.APIError as error:  # an error status, or an error event inside a 200 stream
            failures.append(str(error.code))
            time.sleep(_wait(error))
            continue
        except Exception as error:  # a 200 no SDK can read: asked again
            failures.append(type(error).__name__)
            continue
        if not isinstance(turn.finish, str) or (not turn.calls and turn.text is None):
            failures.append("unusable")
            continue
        turns.append(turn)
        if turn.finish in LIMIT_FINISHES and not turn.calls:
            continue  # cut at the token limit: asked again
        if not turn.calls:
            break
        if _parsable(turn):
            driver.feed(turn, execute(turn))
    return turns, failures


@pytest.mark.parametrize(
    ("name", "protocol", "stream"),
    [(name, PROTOCOLS[n % 3], n % 2 == 0) for n, name in enumerate(CATALOGUE_II)],
)
def test_each_scenario_of_catalogue_ii_is_played_as_scripted(
    drive: Any, name: str, protocol: str, stream: bool
) -> None:
    document = _scenario(name)
    driver: Driver = drive(protocol, **document)
    turns, failures = play(driver, stream)
    assert failures or any(t.finish in LIMIT_FINISHES for t in turns) or name == "tool_args_truncated", name
    assert turns[-1].text == "PROBE_DONE", (name, failures)
    attempts = driver.provider.events("attempt")
    faulted = [a for a in attempts if a["fault"]]
    kinds = {f["kind"] for f in document["faults"]}
    assert faulted and {a["fault"] for a in faulted} == kinds
    # The step a fault altered (or answered in place of) is served again whole: every step once, in order.
    served = [a["step"] for a in attempts if a["status"] == 200 and not a["fault"]]
    assert served == list(range(len(document["script"])))
    assert driver.provider.events("violation") == []
    malformed = [c for c in driver.provider.events("tool_call") if c.get("malformed")]
    driver.provider.addon.done()
    if name == "tool_args_truncated":
        (call,) = malformed
        with pytest.raises(ValueError):
            json.loads(call["arguments_text"])
        markers = [m for m in driver.provider.events("marker") if m["tool_call_id"] == call["tool_call_id"]]
        assert markers and not any(m["present"] for m in markers)  # an honest harness never ran it
    else:
        assert malformed == []
    if name in ("retry_after", "quota_window"):
        asked = faulted[0]["played"]["retry_after_seconds"]
        retry = attempts[attempts.index(faulted[0]) + 1]
        assert retry["started_at"] >= faulted[0]["completed_at"] and asked > 0
