"""What one policy call yields, whatever the protocol, and the interface each protocol's dialog meets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from probe_reference.rollout import ProtocolName, TokenStats

# The SDKs build reply objects without validation, so a field the provider left out is missing rather
# than None; every read of a reply goes through getattr with a default for that reason.


class MalformedReply(Exception):
    """The provider answered 2xx but the reply has nothing usable in it (no choices, no events)."""


# Finish reasons that say the reply stopped at the token limit: Chat, Responses, Messages, Gemini.
TOKEN_LIMIT = frozenset({"length", "incomplete", "max_tokens", "MAX_TOKENS"})
# Finish reasons of a whole reply that holds no turn to act on, asked again in the next step: Gemini's for a call the
# model wrote that did not parse (the API sends an empty candidate, the call dropped whole; Gemini CLI retries it).
ASK_AGAIN = frozenset({"MALFORMED_FUNCTION_CALL"})
INVALID_PREFIX = "invalid reply (not the protocol's JSON): "


class ErrorReply(Exception):
    """A 2xx reply that carried an error instead of a turn (a stream's error event, a failed response).

    `payload` is the error as received; `category` names the failure in the rollout.
    """

    def __init__(self, message: str, payload: object, category: str = "stream_error") -> None:
        super().__init__(message)
        self.payload = payload
        self.category = category


class ReplyFailed(Exception):
    """The SDK gave up on this turn (its retries spent, or a 2xx without a usable reply): the run ends.

    `category` and `payload` describe the 2xx attempt that yielded no reply, if there was one; failed
    HTTP attempts were already recorded by the attempt observer as they happened. `broken_stream` is
    True when a streamed body broke off after its status line (cut, or silent past the timeout): the
    SDKs never retry that, a harness may. `unusable` is True for a 2xx that delivered no usable turn (an error
    event in the stream, a body that is not the protocol's JSON): asked again the same way.
    """

    def __init__(
        self, reason: str, category: str, payload: object, *, broken_stream: bool = False, unusable: bool = False
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.category = category
        self.payload = payload
        self.broken_stream = broken_stream
        self.unusable = unusable

    @property
    def ask_again(self) -> bool:
        """Whether the agent itself asks again (the SDK never retries a reply that arrived with a 2xx)."""
        return self.broken_stream or self.unusable


@dataclass(frozen=True)
class RequestedToolCall:
    tool_call_id: str
    tool_name: str
    raw_arguments: str


@dataclass(frozen=True)
class ModelReply:
    response_id: str | None
    # Chat: finish_reason; Responses: the response `status`; Messages: `stop_reason`.
    finish_reason: str | None
    content: str | None
    tool_calls: tuple[RequestedToolCall, ...]
    tokens: TokenStats


class Dialog(Protocol):
    """One protocol's view of the conversation: the SDK client, and the history in that SDK's shape."""

    @property
    def protocol(self) -> ProtocolName: ...

    def request(self, *, stream: bool) -> ModelReply:
        """Ask for the next turn (the SDK's retry policy applies); raises ReplyFailed when none came."""
        ...

    def add_reply(self, reply: ModelReply) -> None:
        """Append the model's turn to the history sent next time."""
        ...

    def add_tool_result(self, call: RequestedToolCall, output: str) -> None:
        """Append a tool's output, answering `call`, to the history sent next time."""
        ...

    def add_own_turn(self, content: str) -> None:
        """Append an assistant turn the agent wrote itself (not a model reply) to the history sent next time."""
        ...

    def close(self) -> None: ...


def count(value: object) -> int | None:
    """A token count as reported, or None; bool is an int subclass, and a provider's `true` is not a count."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def optional_text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def text(value: object) -> str:
    return value if isinstance(value, str) else ""
