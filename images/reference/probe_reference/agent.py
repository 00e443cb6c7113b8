"""The agent loop: ask the model, run the bash calls it requests, repeat until it answers without tools."""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from pathlib import Path

import httpx
import openai

from probe_reference.attempts import ObservingHttpClient
from probe_reference.interrupts import Terminated, shielded
from probe_reference.modes import MODES, Mode
from probe_reference.progress import say
from probe_reference.replies import MalformedReply, request_reply
from probe_reference.rollout import write_atomic
from probe_reference.session import Session
from probe_reference.tools import execute

SYSTEM_PROMPT = (
    "You are a careful assistant working in a Linux shell. Use the `bash` tool to run commands when the task "
    "needs them, then reply with a short final answer and no tool call."
)

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_SIGINT = 130
EXIT_SIGTERM = 143


@dataclass(frozen=True)
class Config:
    task: str
    rollout_path: Path
    model: str = "probe-model"
    base_url: str | None = None
    api_key: str | None = None
    stream: bool = False
    max_steps: int = 20
    task_id: str | None = None
    mode: str = "honest"
    timeout_s: float | None = None  # per-request timeout; None keeps the SDK's default


def run(config: Config) -> int:
    """Run one task to its end and write the rollout whatever happens; returns the process exit code."""
    mode = MODES[config.mode]
    session = Session(system_prompt=SYSTEM_PROMPT, task=config.task, task_id=config.task_id)
    exit_code = EXIT_FAILED
    try:
        exit_code = _drive(config, mode, session)
    except KeyboardInterrupt:
        _interrupted(session, "interrupted by SIGINT")
        exit_code = EXIT_SIGINT
    except Terminated as exc:
        _interrupted(session, f"terminated: {exc}")
        exit_code = EXIT_SIGTERM
    except Exception as exc:
        # A bug in the agent itself: still say so in the rollout rather than leaving the outcome unknown.
        traceback.print_exc()
        session.attempts.settle_unresolved("agent_error", f"{type(exc).__name__}: {exc}")
        session.fail("agent_error", f"{type(exc).__name__}: {exc}")
    finally:
        with shielded():
            rollout = mode.transform(session.to_rollout(mode.name))
            write_atomic(config.rollout_path, rollout)
        say(f"rollout written to {config.rollout_path} (outcome {rollout['outcome']['status']})")
    return exit_code


def _interrupted(session: Session, reason: str) -> None:
    session.attempts.settle_unresolved("interrupted", reason)
    session.fail("interrupted", reason)
    say(reason)


def _drive(config: Config, mode: Mode, session: Session) -> int:
    say(f"task {config.task_id or '-'}: mode {mode.name}, model {config.model}, stream {config.stream}")
    if mode.before_first_call is not None:
        mode.before_first_call()
    http_client = ObservingHttpClient(session.attempts)
    try:
        client = openai.OpenAI(
            api_key=config.api_key,
            base_url=config.base_url,
            http_client=http_client,
            timeout=openai.NOT_GIVEN if config.timeout_s is None else config.timeout_s,
        )
    except openai.OpenAIError as exc:  # e.g. no API key anywhere
        http_client.close()
        session.fail("config_error", str(exc))
        say(f"cannot start: {exc}")
        return EXIT_FAILED
    with client:
        for step_no in range(1, config.max_steps + 1):
            session.begin_step(step_no)
            say(f"step {step_no}: asking the model")
            try:
                reply = request_reply(client, model=config.model, messages=session.messages, stream=config.stream)
            except (openai.OpenAIError, httpx.HTTPError, MalformedReply) as exc:
                # The SDK has already spent its retries: this failure ends the run.
                category, detail = _reply_failure(exc)
                session.attempts.settle_unresolved(category, detail)
                reason = str(exc) or type(exc).__name__
                session.fail("model_error", reason)
                say(f"step {step_no}: model call failed: {reason}")
                return EXIT_FAILED
            session.attempts.resolve(
                step_no, response_id=reply.response_id, finish_reason=reply.finish_reason, tokens=reply.tokens
            )
            session.add_reply(reply)
            if not reply.tool_calls:
                session.complete(reply.content)
                say(f"step {step_no}: final answer")
                return EXIT_OK
            for call in reply.tool_calls:
                say(f"step {step_no}: running {call.tool_name} call {call.tool_call_id}")
                result = execute(call.tool_name, call.raw_arguments)
                say(f"step {step_no}: {call.tool_call_id} exited {result.exit_code} ({result.status})")
                session.add_tool_result(step_no, call, result)
    session.fail("max_steps", f"no final answer after {config.max_steps} steps")
    say(f"giving up after {config.max_steps} steps")
    return EXIT_FAILED


def _reply_failure(exc: BaseException) -> tuple[str, object]:
    """How a 2xx attempt that yielded no usable reply failed: category and retained payload."""
    # An error event inside a 200 stream is a bare APIError (no status) carrying the provider's payload.
    if type(exc) is openai.APIError and exc.body is not None:
        return "stream_error", exc.body
    if isinstance(exc, MalformedReply | openai.APIResponseValidationError):
        return "invalid_response", str(exc)
    return "stream_cut", f"{type(exc).__name__}: {exc}"
