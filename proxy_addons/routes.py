"""Route table: which method and path is a model call, an auxiliary call, or unknown."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from urllib.parse import unquote


class RouteKind(Enum):
    MODEL = "model"
    MODEL_LIST = "model_list"
    MODEL_GET = "model_get"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Route:
    kind: RouteKind
    # Provider protocol for MODEL routes (`chat`, later `responses` and `messages`).
    protocol: str | None = None
    # Requested id for MODEL_GET.
    model_id: str | None = None


# Model routes by path; later protocols add their paths here next to their codec.
MODEL_PATHS: dict[str, str] = {"/v1/chat/completions": "chat"}
MODELS_PATH = "/v1/models"


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
    if method == "GET" and bare == MODELS_PATH:
        return Route(RouteKind.MODEL_LIST)
    if method == "GET" and bare.startswith(MODELS_PATH + "/"):
        model_id = unquote(bare[len(MODELS_PATH) + 1 :])
        if model_id:
            return Route(RouteKind.MODEL_GET, model_id=model_id)
    return Route(RouteKind.UNKNOWN)
