"""Gemini `generateContent` through Google's google-genai SDK: one policy call turned into a uniform reply, streamed
or not."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Literal

import httpx
from google.genai import Client, errors, types

from probe_reference.attempts import ObservingClient
from probe_reference.replies import (
    ErrorReply,
    MalformedReply,
    ModelReply,
    ReplyFailed,
    RequestedToolCall,
    count,
    optional_text,
)
from probe_reference.rollout import TokenStats
from probe_reference.tools import BASH_DESCRIPTION, BASH_PARAMETERS, TOOL_NAME, parse_arguments

BASH_TOOL = types.Tool(
    function_declarations=[
        types.FunctionDeclaration(name=TOOL_NAME, description=BASH_DESCRIPTION, parameters_json_schema=BASH_PARAMETERS)
    ]
)
# The SDK retries nothing unless told to; these are the openai and anthropic SDKs' defaults (2 retries, about half a
# second apart), on Google's default retryable statuses (408, 429, 5xx) and on timeouts and refused connections.
RETRIES = types.HttpRetryOptions(attempts=3, initial_delay=0.5, max_delay=8.0, exp_base=2.0, jitter=0.25)

GEMINI_FAILURES = (errors.APIError, httpx.HTTPError, MalformedReply, ErrorReply)


class ObservingGeminiHttpClient(ObservingClient):
    """The httpx client google-genai sends through (it takes one in `HttpOptions.httpx_client`), every attempt
    recorded."""


def gemini_client(log: Any, *, base_url: str | None, api_key: str, timeout_s: float | None) -> Client:
    """google-genai over an observing httpx client; `timeout_s` bounds each HTTP request (None: the SDK's)."""
    options = types.HttpOptions(
        base_url=base_url,
        httpx_client=ObservingGeminiHttpClient(log),
        retry_options=RETRIES,
        timeout=None if timeout_s is None else int(timeout_s * 1000),
    )
    return Client(api_key=api_key, http_options=options)


def gemini_failure(exc: BaseException) -> ReplyFailed:
    """Name how the turn failed, with the payload retained for a 2xx attempt that yielded no reply."""
    reason = str(exc) or type(exc).__name__
    if isinstance(exc, ErrorReply):
        return ReplyFailed(reason, exc.category, exc.payload)
    if isinstance(exc, errors.UnknownApiResponseError | MalformedReply):
        return ReplyFailed(reason, "invalid_response", str(exc))
    # Transport errors reach here only from a body being streamed (before the status line the SDK retries them);
    # an HTTP error's attempts are already recorded by the observing client.
    broken = isinstance(exc, httpx.TransportError)
    return ReplyFailed(reason, "stream_cut", f"{type(exc).__name__}: {exc}", broken_stream=broken)


class GeminiDialog:
    """Stateless use of `models/{model}:generateContent`: the system instruction apart, the whole history each time."""

    protocol: Literal["gemini"] = "gemini"

    def __init__(self, client: Client, *, model: str, system_prompt: str, task: str) -> None:
        self._client = client
        self._model = model
        self._config = types.GenerateContentConfig(
            system_instruction=system_prompt,
            tools=[BASH_TOOL],
            # The SDK would otherwise run Python callables itself; the agent runs its own tool.
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )
        self.contents: list[types.Content] = [types.Content(role="user", parts=[types.Part(text=task)])]
        # The function responses answering the latest model turn all go in one user content (the last one).
        self._results: list[types.Part] | None = None

    def request(self, *, stream: bool) -> ModelReply:
        try:
            if stream:
                chunks = self._client.models.generate_content_stream(
                    model=self._model, contents=list(self.contents), config=self._config
                )
                return assemble_stream(chunks)
            response = self._client.models.generate_content(
                model=self._model, contents=list(self.contents), config=self._config
            )
            return assemble_stream([response])
        except GEMINI_FAILURES as exc:
            raise gemini_failure(exc) from exc

    def add_reply(self, reply: ModelReply) -> None:
        parts: list[types.Part] = []
        if reply.content:
            parts.append(types.Part(text=reply.content))
        for call in reply.tool_calls:
            arguments = parse_arguments(call.raw_arguments)
            # The API takes an object only; arguments that were not one are sent back empty.
            args = arguments if isinstance(arguments, dict) else {}
            parts.append(
                types.Part(function_call=types.FunctionCall(id=call.tool_call_id, name=call.tool_name, args=args))
            )
        self.contents.append(types.Content(role="model", parts=parts))
        self._results = None

    def add_tool_result(self, call: RequestedToolCall, output: str) -> None:
        # `output` is the API's key for a function's output: the model reads exactly this text.
        response = types.FunctionResponse(id=call.tool_call_id, name=call.tool_name, response={"output": output})
        if self._results is None:
            self._results = []
            self.contents.append(types.Content(role="user", parts=[]))
        self._results.append(types.Part(function_response=response))
        # A Content keeps a copy of the list it was made with (pydantic): it is made again with every result.
        self.contents[-1] = types.Content(role="user", parts=list(self._results))

    def close(self) -> None:
        self._client.close()


def assemble_stream(chunks: Iterable[types.GenerateContentResponse]) -> ModelReply:
    """Fold the responses of a stream (one for a JSON reply): every part in order, the response id, the last finish
    reason and the last usage the stream carried (the earlier ones count the prompt only)."""
    seen = False
    response_id: str | None = None
    finish: str | None = None
    usage: types.GenerateContentResponseUsageMetadata | None = None
    texts: list[str] = []
    calls: list[RequestedToolCall] = []
    for chunk in chunks:
        seen = True
        response_id = optional_text(getattr(chunk, "response_id", None)) or response_id
        usage = getattr(chunk, "usage_metadata", None) or usage
        candidates = getattr(chunk, "candidates", None) or []
        if not candidates:
            continue
        candidate = candidates[0]
        reason = getattr(candidate, "finish_reason", None)
        if reason is not None:
            finish = optional_text(getattr(reason, "value", reason))
        content = getattr(candidate, "content", None)
        for part in getattr(content, "parts", None) or []:
            call = getattr(part, "function_call", None)
            if call is not None:
                raw = json.dumps(getattr(call, "args", None) or {}, ensure_ascii=False)
                calls.append(RequestedToolCall(getattr(call, "id", None) or "", getattr(call, "name", None) or "", raw))
            elif isinstance(getattr(part, "text", None), str) and not getattr(part, "thought", False):
                texts.append(part.text)
    if not seen:
        raise MalformedReply("the reply carried no response")
    text = "".join(texts)
    return ModelReply(
        response_id=response_id,
        finish_reason=finish,
        content=text if text or not calls else None,
        tool_calls=tuple(calls),
        tokens=token_stats(usage),
    )


def token_stats(usage: types.GenerateContentResponseUsageMetadata | None) -> TokenStats:
    """Google's usage in the rollout's convention: the thoughts are part of the completion (Google counts them apart
    from the candidates), and a count the usage leaves out is 0 (proto3's default); no usage at all is unknown."""
    if usage is None:
        return {"prompt": None, "completion": None, "reasoning": None, "total": None, "cached": None}
    candidates = count(usage.candidates_token_count) or 0
    thoughts = count(usage.thoughts_token_count) or 0
    return {
        "prompt": count(usage.prompt_token_count) or 0,
        "completion": candidates + thoughts,
        "reasoning": thoughts,
        "total": count(usage.total_token_count) or 0,
        "cached": count(usage.cached_content_token_count) or 0,
    }
