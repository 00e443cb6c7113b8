"""Command line of `probe-reference` (`python -m probe_reference`)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

from probe_reference import __version__
from probe_reference.agent import Config, run
from probe_reference.interrupts import sigterm_raises
from probe_reference.modes import MODES

DEFAULT_ROLLOUT = "~/.probe-reference/rollout.json"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="probe-reference",
        description="harness-probe's reference agent: Chat Completions, one bash tool, a probe-rollout/v1.",
    )
    parser.add_argument("--version", action="version", version=f"probe-reference {__version__}")
    parser.add_argument("--task", required=True, help="the instruction given to the model")
    parser.add_argument("--model", default="probe-model")
    parser.add_argument("--base-url", default=None, help="provider base URL (default: env OPENAI_BASE_URL)")
    parser.add_argument("--api-key", default=None, help="API key (default: env OPENAI_API_KEY)")
    parser.add_argument("--stream", action="store_true", help="request SSE streams with usage")
    parser.add_argument("--rollout", default=DEFAULT_ROLLOUT, help=f"rollout file ({DEFAULT_ROLLOUT})")
    parser.add_argument("--max-steps", type=_positive_int, default=20)
    parser.add_argument("--task-id", default=None)
    parser.add_argument("--mode", choices=sorted(MODES), default="honest", help="honest or a misbehaviour")
    parser.add_argument(
        "--timeout", type=float, default=None, help="per-request timeout in seconds (default: the SDK's own)"
    )
    return parser


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    config = Config(
        task=args.task,
        rollout_path=Path(args.rollout).expanduser(),
        model=args.model,
        # Resolved here rather than left to the SDK so the documented defaults are visible in one place.
        base_url=args.base_url or os.environ.get("OPENAI_BASE_URL") or None,
        api_key=args.api_key or os.environ.get("OPENAI_API_KEY") or None,
        stream=args.stream,
        max_steps=args.max_steps,
        task_id=args.task_id,
        mode=args.mode,
        timeout_s=args.timeout,
    )
    with sigterm_raises():
        return run(config)
