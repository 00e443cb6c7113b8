"""The agent loop: ask the model, run the bash calls it requests, repeat until it answers without tools."""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from probe_reference.compaction import Compactable, context_window, due
from probe_reference.dialogs import ConfigError, open_dialog
from probe_reference.interrupts import Terminated, in_worker, shielded
from probe_reference.modes import MODES, Mode
from probe_reference.progress import say
from probe_reference.replies import ASK_AGAIN, TOKEN_LIMIT, Dialog, ModelReply, ReplyFailed
from probe_reference.rollout import ProtocolName, write_atomic
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

# A streamed reply that breaks off after its status line is retried by the agent (the SDKs retry only
# failures before it), like the SDK's own retries: up to 2 more attempts of the same step, with backoff.
STREAM_RETRIES = 2
STREAM_RETRY_DELAY_S = 0.5
# A mode that retries by itself (its SDK retrying nothing) tries this many more times.
OWN_RETRIES = 4


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
    protocol: ProtocolName = "chat"
    stream_retries: int = STREAM_RETRIES


def run(config: Config) -> int:
    """Run one task to its end and write the rollout whatever happens; returns the process exit code."""
    mode = MODES[config.mode]
    session = Session(system_prompt=SYSTEM_PROMPT, task=config.task, task_id=config.task_id, protocol=config.protocol)
    exit_code = EXIT_FAILED
    try:
        exit_code = _drive(config, mode, session)
    except KeyboardInterrupt as exc:
        _interrupted(session, "interrupted by SIGINT", exc)
        exit_code = EXIT_SIGINT
    except Terminated as exc:
        _interrupted(session, f"terminated: {exc}", exc)
        exit_code = EXIT_SIGTERM
    except Exception as exc:
        # A bug in the agent itself: still say so in the rollout rather than leaving the outcome unknown.
        traceback.print_exc()
        session.attempts.settle_unresolved("agent_error", f"{type(exc).__name__}: {exc}")
        session.fail("agent_error", f"{type(exc).__name__}: {exc}")
    finally:
        with shielded():
            rollout = mode.transform(session.to_rollout())
            if config.stream and mode.stream_transform is not None:
                rollout = mode.stream_transform(rollout)
            write_atomic(config.rollout_path, rollout)
            if mode.after_write is not None:
                mode.after_write(config.rollout_path)
        say(f"rollout written to {config.rollout_path} (outcome {rollout['outcome']['status']})")
    return exit_code


def _interrupted(session: Session, reason: str, exc: BaseException) -> None:
    # A model call still in flight is abandoned in its worker: its attempt ends here, as the SDK would have ended it.
    session.attempts.close("interrupted", f"{type(exc).__name__}: {exc}")
    session.attempts.settle_unresolved("interrupted", reason)
    session.fail("interrupted", reason)
    say(reason)


def _ask(dialog: Dialog, session: Session, config: Config, step_no: int, mode: Mode) -> ModelReply:
    """One step's reply; a broken stream or an unusable 2xx is asked again, the attempts all belonging to this step
    (and, in a mode that retries by itself, a failed HTTP attempt too)."""
    retries = own = 0
    while True:
        try:
            return in_worker(lambda: dialog.request(stream=config.stream), name="model-call")
        except ReplyFailed as exc:
            if mode.own_retry_s is not None and own < OWN_RETRIES and _http_failure(session):
                own += 1
                session.attempts.note_retry_wait(mode.own_retry_s)
                say(f"step {step_no}: the model call failed ({exc.reason}); retrying at once")
                time.sleep(mode.own_retry_s)
                continue
            if not exc.ask_again or retries >= config.stream_retries:
                raise
            session.attempts.settle_unresolved(exc.category, exc.payload)
            delay = STREAM_RETRY_DELAY_S * 2**retries
            retries += 1
            session.attempts.note_retry_wait(delay)
            say(f"step {step_no}: the reply was not usable ({exc.reason}); asking again in {delay:g} s")
            time.sleep(delay)


def _http_failure(session: Session) -> bool:
    """Whether the attempt that just failed got a retryable HTTP error status (429 or 5xx)."""
    last = session.attempts.attempts[-1] if session.attempts.attempts else None
    status = last.status_code if last is not None else None
    return status is not None and (status == 429 or status >= 500)


def _compact(dialog: Compactable, session: Session, step_no: int, prompt: int | None, window: int | None) -> bool:
    """Summarize the older history before this step's policy call; False when the summary call failed."""
    say(f"step {step_no}: prompt of {prompt} tokens in a {window}-token window: compacting the history")
    first = len(session.attempts.attempts)
    try:
        summary = in_worker(dialog.summarize, name="model-call")
    except ReplyFailed as exc:
        session.attempts.settle_unresolved(exc.category, exc.payload)
        session.add_compaction(step_no, [a.model_call_id for a in session.attempts.attempts[first:]])
        session.fail("model_error", f"compaction failed: {exc.reason}")
        say(f"step {step_no}: compaction call failed: {exc.reason}")
        return False
    session.attempts.resolve(
        step_no, response_id=summary.response_id, finish_reason=summary.finish_reason, tokens=summary.tokens
    )
    session.add_compaction(step_no, [a.model_call_id for a in session.attempts.attempts[first:]])
    dialog.replace_older(summary.content or "")
    return True


def _compacting_dialog(dialog: Dialog) -> Compactable | None:
    """The dialog when it is one that compacts, Chat's or Gemini's (its module, and its SDK, are loaded then)."""
    if dialog.protocol == "chat":
        from probe_reference.chat import ChatDialog

        return dialog if isinstance(dialog, ChatDialog) else None
    if dialog.protocol == "gemini":
        from probe_reference.gemini import GeminiDialog

        return dialog if isinstance(dialog, GeminiDialog) else None
    return None


def _drive(config: Config, mode: Mode, session: Session) -> int:
    say(
        f"task {config.task_id or '-'}: mode {mode.name}, protocol {config.protocol}, model {config.model}, "
        f"stream {config.stream}"
    )
    if mode.before_first_call is not None:
        mode.before_first_call(config.rollout_path.parent)
    try:
        dialog = open_dialog(
            config.protocol,
            session.attempts,
            model=config.model,
            system_prompt=SYSTEM_PROMPT,
            task=config.task,
            base_url=config.base_url,
            api_key=config.api_key,
            timeout_s=config.timeout_s,
            max_retries=0 if mode.own_retry_s is not None else None,
        )
    except ConfigError as exc:
        session.fail("config_error", str(exc))
        say(f"cannot start: {exc}")
        return EXIT_FAILED
    if mode.own_turn is not None:
        dialog.add_own_turn(mode.own_turn)
        session.add_own_turn(mode.own_turn, marked=mode.own_turn_marked)
    # The window is asked for once the first reply reported its prompt size (Chat and Gemini: the dialogs that compact).
    compacting = _compacting_dialog(dialog)
    window: int | None = None
    window_asked = False
    last_prompt: int | None = None
    interrupted = False
    try:
        for step_no in range(1, config.max_steps + 1):
            session.begin_step(step_no)
            if compacting is not None and last_prompt is not None:
                if not window_asked:
                    window_asked = True
                    where = compacting.model_lookup(config.model, config.api_key)
                    window = in_worker(partial(context_window, where, config.timeout_s), name="models-lookup")
                compacted_ok = not (due(last_prompt, window) and compacting.compactable()) or _compact(
                    compacting, session, step_no, last_prompt, window
                )
                if not compacted_ok:
                    return EXIT_FAILED
            say(f"step {step_no}: asking the model")
            try:
                reply = _ask(dialog, session, config, step_no, mode)
            except ReplyFailed as exc:
                # The SDK has already spent its retries: this failure ends the run.
                session.attempts.settle_unresolved(exc.category, exc.payload)
                session.fail("model_error", exc.reason)
                say(f"step {step_no}: model call failed: {exc.reason}")
                return EXIT_FAILED
            session.attempts.resolve(
                step_no, response_id=reply.response_id, finish_reason=reply.finish_reason, tokens=reply.tokens
            )
            last_prompt = reply.tokens["prompt"]
            session.add_reply(reply)
            dialog.add_reply(reply)
            if not reply.tool_calls and reply.finish_reason in ASK_AGAIN:
                # A whole reply with no turn in it (Gemini's call that did not parse, dropped whole): recorded as the
                # reply it was, nothing run, and the model asked again in the next step.
                say(f"step {step_no}: the reply held no turn (finish reason {reply.finish_reason}); asking again")
                continue
            if not reply.tool_calls and reply.finish_reason in TOKEN_LIMIT:
                # The answer stopped at the token limit: reported as such, never as a completed answer.
                why = f"the reply ended at the token limit (finish reason {reply.finish_reason}) before its answer did"
                session.fail("truncated", why)
                say(f"step {step_no}: {why}")
                return EXIT_FAILED
            if not reply.tool_calls:
                session.complete(reply.content)
                say(f"step {step_no}: final answer")
                return EXIT_OK
            for call in reply.tool_calls:
                say(f"step {step_no}: running {call.tool_name} call {call.tool_call_id}")
                result = (mode.run_tool or execute)(call.tool_name, call.raw_arguments)
                say(f"step {step_no}: {call.tool_call_id} exited {result.exit_code} ({result.status})")
                session.add_tool_result(step_no, call, result)
                dialog.add_tool_result(call, result.output)
    except (KeyboardInterrupt, Terminated):
        # The interrupted call's worker may still be inside the client: it is left as it is, not closed under it
        # from here (the process is ending, and its sockets with it).
        interrupted = True
        raise
    finally:
        if not interrupted:
            dialog.close()
    session.fail("max_steps", f"no final answer after {config.max_steps} steps")
    say(f"giving up after {config.max_steps} steps")
    return EXIT_FAILED
