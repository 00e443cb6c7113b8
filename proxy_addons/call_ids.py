"""Tool-call ids of letters and digits only, for a harness whose profile says it replays no other character.

OpenClaw replays every tool-call id through a sanitizer that drops all but [A-Za-z0-9] for a custom Chat Completions
or Anthropic Messages provider (`call_ab12` returns as `callab12`): with the usual ids no result would ever join the
call it answers. Under `harness_profile.tool_call_ids: alphanumeric` the calls the script issues carry ids the
sanitizer leaves as they are; everything else about the codec stays the protocol's own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from proxy_addons.protocol import Codec, ModelRequest, RenderedReply, ScriptedReply

__all__ = ["ALPHANUMERIC", "AlphanumericIds", "id_codec"]

ALPHANUMERIC = "alphanumeric"  # one of scenario.TOOL_CALL_ID_STYLES
_OTHER = re.compile(r"[^A-Za-z0-9]")


class AlphanumericIds:
    """A codec whose new tool-call ids keep only [A-Za-z0-9] (`call_<hex>` -> `call<hex>`)."""

    def __init__(self, codec: Codec) -> None:
        self._codec = codec
        self.protocol = codec.protocol

    def parse_request(self, body: Mapping[str, Any]) -> ModelRequest:
        return self._codec.parse_request(body)

    def new_response_id(self) -> str:
        return self._codec.new_response_id()

    def new_tool_call_id(self) -> str:
        return _OTHER.sub("", self._codec.new_tool_call_id())

    def render_reply(self, reply: ScriptedReply, request: ModelRequest, model: str, created: int) -> RenderedReply:
        return self._codec.render_reply(reply, request, model, created)

    def error_body(self, status: int, message: str, error_type: str, code: str) -> dict[str, Any]:
        return self._codec.error_body(status, message, error_type, code)


def id_codec(codec: Codec, style: str | None) -> Codec:
    """The codec that issues the script's tool calls under the profile's id style (None: the protocol's own ids)."""
    return AlphanumericIds(codec) if style == ALPHANUMERIC else codec
