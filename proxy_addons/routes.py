"""Route table: which method and path is a model call, an auxiliary call, or unknown."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from urllib.parse import parse_qs, unquote


class RouteKind(Enum):
    MODEL = "model"
    MODEL_LIST = "model_list"
    MODEL_GET = "model_get"
    # Messages token counting: a side request Claude Code may make, answered with an estimate.
    COUNT_TOKENS = "count_tokens"
    # Metadata probes of other provider dialects (Hermes tries OpenRouter's and Ollama's): answered 404.
    PROBE = "probe"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Route:
    kind: RouteKind
    # Provider protocol for MODEL routes: `chat`, `responses`, `messages` or `gemini`; for other routes, the dialect
    # whose shapes the reply takes when the path says (None: told by the headers).
    protocol: str | None = None
    # Requested id for MODEL_GET.
    model_id: str | None = None
    # Whether the path asks for a stream (Gemini says so in the path, the others in the body: None).
    stream: bool | None = None


MODEL_PATHS: dict[str, str] = {
    "/v1/chat/completions": "chat",
    "/v1/responses": "responses",
    "/v1/messages": "messages",
}
MODELS_PATH = "/v1/models"
COUNT_TOKENS_PATH = "/v1/messages/count_tokens"
PROBE_ROUTES = frozenset(
    {
        # Ollama- and OpenRouter-style model metadata (Hermes probes these before its first chat request).
        ("GET", "/api/v1/models"),
        ("POST", "/api/show"),
        ("GET", "/api/tags"),
        # llama.cpp / vLLM-style server-type probes (Hermes 0.19.0 tries them after /api/tags answers 404).
        ("GET", "/v1/props"),
        ("GET", "/props"),
        ("GET", "/version"),
    }
)


# The Gemini API's methods on a model (`/v1beta/models/gemini-2.5-pro:generateContent`) and its model list.
GEMINI_METHOD = re.compile(r"/(v1|v1beta|v1alpha)/models/([^/:]+):([A-Za-z]+)")
GEMINI_MODELS = re.compile(r"/(v1beta|v1alpha)/models(?:/([^/:]+))?")


def bare_path(path: str) -> str:
    """The path without query string or fragment; a trailing slash is not significant."""
    for separator in ("?", "#"):
        path = path.split(separator, 1)[0]
    return path.rstrip("/") or "/"


def _gemini_route(method: str, bare: str, path: str) -> Route | None:
    """A Gemini API route: `generateContent`, `streamGenerateContent` with `alt=sse` (the JSON-array stream without it
    is not served), `countTokens`, or the `v1beta` model list and model."""
    called = GEMINI_METHOD.fullmatch(bare)
    if called is not None and method == "POST":
        model_id, verb = unquote(called.group(2)), called.group(3)
        if verb == "generateContent":
            return Route(RouteKind.MODEL, protocol="gemini", model_id=model_id, stream=False)
        query = parse_qs(path.split("?", 1)[1].split("#", 1)[0]) if "?" in path else {}
        if verb == "streamGenerateContent" and query.get("alt") == ["sse"]:
            return Route(RouteKind.MODEL, protocol="gemini", model_id=model_id, stream=True)
        if verb == "countTokens":
            return Route(RouteKind.COUNT_TOKENS, protocol="gemini", model_id=model_id)
        return Route(RouteKind.UNKNOWN)
    listed = GEMINI_MODELS.fullmatch(bare)
    if listed is not None and method == "GET":
        if listed.group(2) is None:
            return Route(RouteKind.MODEL_LIST, protocol="gemini")
        return Route(RouteKind.MODEL_GET, protocol="gemini", model_id=unquote(listed.group(2)))
    return None


def match_route(method: str, path: str) -> Route:
    """Classify a request by method and path (the query string is ignored, but for Gemini's `alt=sse`)."""
    method = method.upper()
    bare = bare_path(path)
    gemini = _gemini_route(method, bare, path)
    if gemini is not None:
        return gemini
    if method == "POST" and bare in MODEL_PATHS:
        return Route(RouteKind.MODEL, protocol=MODEL_PATHS[bare])
    if method == "POST" and bare == COUNT_TOKENS_PATH:
        return Route(RouteKind.COUNT_TOKENS, protocol="messages")
    if method == "GET" and bare == MODELS_PATH:
        return Route(RouteKind.MODEL_LIST)
    if method == "GET" and bare.startswith(MODELS_PATH + "/"):
        model_id = unquote(bare[len(MODELS_PATH) + 1 :])
        if model_id:
            return Route(RouteKind.MODEL_GET, model_id=model_id)
    if (method, bare) in PROBE_ROUTES or (method == "GET" and bare.startswith("/api/v1/models/")):
        return Route(RouteKind.PROBE)
    return Route(RouteKind.UNKNOWN)
