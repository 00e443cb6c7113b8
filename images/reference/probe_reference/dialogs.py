"""Opening the dialog for a protocol: its SDK client, over an httpx client that records every attempt."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from probe_reference.replies import Dialog
from probe_reference.rollout import ProtocolName

if TYPE_CHECKING:
    import anthropic
    import openai

    from probe_reference.attempts import AttemptLog


class ConfigError(Exception):
    """The dialog cannot start (no API key, bad base URL): nothing was sent."""


def open_dialog(
    protocol: ProtocolName,
    log: AttemptLog,
    *,
    model: str,
    system_prompt: str,
    task: str,
    base_url: str | None,
    api_key: str | None,
    timeout_s: float | None,
    max_retries: int | None = None,
) -> Dialog:
    """The SDK's own retry count applies unless `max_retries` is given; `timeout_s` bounds each HTTP request (None:
    the SDK's default). The wait the SDK plans before each retry is kept on the attempt that failed (`log`).

    Each protocol's module (and so its SDK) is imported here, when it is used: an episode never loads the other SDKs.
    """
    if protocol == "gemini":
        # The google-genai SDK notices a missing key only when it sends; say so before anything is sent.
        if not api_key:
            raise ConfigError("no API key: pass --api-key or set GEMINI_API_KEY")
        from probe_reference.gemini import GeminiDialog, gemini_client

        gemini = gemini_client(log, base_url=base_url, api_key=api_key, timeout_s=timeout_s)
        return GeminiDialog(
            gemini, model=model, system_prompt=system_prompt, task=task, log=log, max_retries=max_retries
        )
    if protocol == "messages":
        from probe_reference.messages import MessagesDialog

        messages_client = _anthropic_client(log, base_url=base_url, api_key=api_key, timeout_s=timeout_s)
        _observe_waits(messages_client, log, max_retries)
        return MessagesDialog(messages_client, model=model, system_prompt=system_prompt, task=task)
    client = _openai_client(log, base_url=base_url, api_key=api_key, timeout_s=timeout_s)
    _observe_waits(client, log, max_retries)
    if protocol == "responses":
        from probe_reference.responses import ResponsesDialog

        return ResponsesDialog(client, model=model, system_prompt=system_prompt, task=task)
    from probe_reference.chat import ChatDialog

    return ChatDialog(client, model=model, system_prompt=system_prompt, task=task)


def _observe_waits(client: openai.OpenAI | anthropic.Anthropic, log: AttemptLog, max_retries: int | None) -> None:
    """Both SDKs compute each retry's wait in `_calculate_retry_timeout` (Retry-After and retry-after-ms honoured up to
    60 s, else backoff) and then sleep it: the planned wait is recorded as it is computed."""
    if max_retries is not None:
        client.max_retries = max_retries
    planned = client._calculate_retry_timeout

    def calculate(*args: Any, **kwargs: Any) -> float:
        seconds = float(planned(*args, **kwargs))
        log.note_retry_wait(seconds)
        return seconds

    client._calculate_retry_timeout = calculate  # type: ignore[method-assign]


def _openai_client(
    log: AttemptLog, *, base_url: str | None, api_key: str | None, timeout_s: float | None
) -> openai.OpenAI:
    import openai

    from probe_reference.chat import ObservingHttpClient

    http_client = ObservingHttpClient(log)
    try:
        return openai.OpenAI(
            api_key=api_key,
            base_url=base_url,
            http_client=http_client,
            timeout=openai.NOT_GIVEN if timeout_s is None else timeout_s,
        )
    except openai.OpenAIError as exc:  # e.g. no API key anywhere
        http_client.close()
        raise ConfigError(str(exc)) from exc


def _anthropic_client(
    log: AttemptLog, *, base_url: str | None, api_key: str | None, timeout_s: float | None
) -> anthropic.Anthropic:
    # The anthropic SDK only notices a missing key when it sends; say so before anything is sent.
    if not api_key:
        raise ConfigError("no API key: pass --api-key or set ANTHROPIC_API_KEY")
    import anthropic

    from probe_reference.messages import ObservingAnthropicHttpClient

    http_client = ObservingAnthropicHttpClient(log)
    try:
        return anthropic.Anthropic(
            api_key=api_key,
            base_url=base_url,
            http_client=http_client,
            timeout=anthropic.NOT_GIVEN if timeout_s is None else timeout_s,
        )
    except anthropic.AnthropicError as exc:
        http_client.close()
        raise ConfigError(str(exc)) from exc
