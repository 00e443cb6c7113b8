"""Route table: which method and path is a model call, an auxiliary call, or unknown."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from urllib.parse import unquote


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
    # Provider protocol for MODEL routes: `chat`, `responses` or `messages`.
    protocol: str | None = None
    # Requested id for MODEL_GET.
    model_id: str | None = None


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


def bare_path(path: str) -> str:
    """The path without query string or fragment; a trailing slash is not significant."""
    for separator in ("?", "#"):
        path = path.split(separator, 1)[0]
    return path.rstrip("/") or "/"


def match_route(method: str, path: str) -> Route:
    """Classify a request by method and path (the query string is ignored)."""
    method = method.upper()
    bare = bare_path(path)
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
