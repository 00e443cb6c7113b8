"""What each scripted fault kind the witness records means to the checks: which replies no client can use, which
replies issued none of their tool calls, and the words a record may name each fault by."""

from __future__ import annotations

__all__ = ["NOT_ISSUED", "UNUSABLE", "fault_terms"]

# Replies that ended `complete` with a 200 yet delivered nothing a client can take as a turn (a stream whose event is
# not JSON, an error event inside the stream, an HTML page): failed attempts, joined as `interrupted`.
UNUSABLE = frozenset({"sse_malformed", "error_event", "not_json"})
# Faults that played the due step's reply without issuing its calls: the step is played again, with fresh ids.
NOT_ISSUED = frozenset({"cut", "length_cut", "args_truncated", "sse_malformed", "error_event"})

# Words by which a harness's own final result names how its last attempt failed, beyond the status and the error
# the reply carried (matched case-blind, as parts of the text).
_WORDS: dict[str, tuple[str, ...]] = {
    "overloaded": ("overload",),
    "quota": ("rate limit", "rate_limit", "ratelimit", "quota", "too many requests"),
    "length_cut": ("length", "max_tokens", "max tokens", "max_output_tokens", "token limit", "truncat", "incomplete"),
    "args_truncated": ("json", "argument", "parse", "malformed", "invalid"),
    "sse_malformed": ("json", "parse", "malformed", "invalid", "decode", "unexpected"),
    "not_json": ("json", "html", "parse", "invalid", "decode", "unexpected", "doctype"),
    "error_event": ("error event", "stream"),
    "withhold": ("timeout", "timed out", "time out", "deadline"),
    "cut": ("stream", "connection", "closed", "terminated", "aborted", "disconnect", "reset", "cut", "eof"),
    "reset": ("connection", "closed", "reset", "terminated", "aborted", "disconnect", "socket", "eof"),
}


def _reply_terms(response: object) -> list[str]:
    """The error's own type, code and message in a reply body (each protocol's error shape)."""
    if not isinstance(response, dict):
        return []
    error = response.get("error")
    terms = []
    if isinstance(error, dict):
        terms += [str(error[k]) for k in ("type", "code", "message") if isinstance(error.get(k), str) and error[k]]
    return terms


def fault_terms(attempt: dict[str, object]) -> list[str]:
    """What may name the fault an attempt ended in: its status (not a 200), the error it carried, its kind's words,
    and the finish reason of a reply cut at the token limit."""
    terms: list[str] = []
    status = attempt.get("status")
    if isinstance(status, int) and status != 200:
        terms += [str(status)]
    terms += _reply_terms(attempt.get("response"))
    played = attempt.get("played")
    if isinstance(played, dict):
        terms += _reply_terms(played.get("error"))
    fault = attempt.get("fault")
    if isinstance(fault, str):
        terms += _WORDS.get(fault, ())
    finish = attempt.get("finish_reason")
    if isinstance(finish, str) and fault == "length_cut":
        terms.append(finish)
    return [t for t in dict.fromkeys(terms) if t]
