"""Command line of `probe-reference` (`python -m probe_reference`)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from probe_reference import __version__
from probe_reference.agent import STREAM_RETRIES, Config, run
from probe_reference.hostile_sandbox import version_forever
from probe_reference.interrupts import sigterm_raises
from probe_reference.modes import MODES
from probe_reference.rollout import PROTOCOLS

DEFAULT_ROLLOUT = "~/.probe-reference/rollout.json"
# The base URL and API key variables each protocol's own SDK reads (the openai SDK's for chat and responses).
ENVIRONMENT = {
    "messages": ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"),
    "gemini": ("GOOGLE_GEMINI_BASE_URL", "GEMINI_API_KEY"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="probe-reference",
        description=(
            "harness-probe's reference agent: Chat Completions, Responses, Anthropic Messages or Gemini "
            "generateContent, one bash tool, and a probe-rollout/v1 about its own run."
        ),
    )
    parser.add_argument("--version", action="version", version=f"probe-reference {__version__}")
    parser.add_argument("--task", required=True, help="the instruction given to the model")
    parser.add_argument("--model", default="probe-model")
    parser.add_argument("--protocol", choices=PROTOCOLS, default="chat", help="provider protocol (default chat)")
    parser.add_argument(
        "--base-url",
        default=None,
        help="provider base URL (default: env OPENAI_BASE_URL; ANTHROPIC_BASE_URL for messages, "
        "GOOGLE_GEMINI_BASE_URL for gemini)",
    )
    parser.add_argument(
        "--api-key",
        default=None,
        help="API key (default: env OPENAI_API_KEY; ANTHROPIC_API_KEY for messages, GEMINI_API_KEY for gemini)",
    )
    parser.add_argument("--stream", action="store_true", help="request SSE streams (with usage, for chat)")
    parser.add_argument("--rollout", default=DEFAULT_ROLLOUT, help=f"rollout file ({DEFAULT_ROLLOUT})")
    parser.add_argument("--max-steps", type=_positive_int, default=20)
    parser.add_argument("--task-id", default=None)
    parser.add_argument("--mode", choices=sorted(MODES), default="honest", help="honest or a misbehaviour")
    parser.add_argument(
        "--timeout", type=_positive_float, default=None, help="per-HTTP-request timeout in seconds (default: the SDK's)"
    )
    parser.add_argument(
        "--stream-retries",
        type=_non_negative_int,
        default=STREAM_RETRIES,
        help=f"times to ask again when a streamed reply breaks off after its status line ({STREAM_RETRIES})",
    )
    return parser


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be at least 0")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError("must be more than 0")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    version_forever(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    url_env, key_env = ENVIRONMENT.get(args.protocol, ("OPENAI_BASE_URL", "OPENAI_API_KEY"))
    config = Config(
        task=args.task,
        rollout_path=Path(args.rollout).expanduser(),
        model=args.model,
        # Resolved here rather than left to the SDK so the documented defaults are visible in one place.
        base_url=args.base_url or os.environ.get(url_env) or None,
        api_key=args.api_key or os.environ.get(key_env) or None,
        stream=args.stream,
        max_steps=args.max_steps,
        task_id=args.task_id,
        mode=args.mode,
        timeout_s=args.timeout,
        protocol=args.protocol,
        stream_retries=args.stream_retries,
    )
    with sigterm_raises():
        return run(config)
