"""The mitmproxy addon: declares the `probe_*` options and adapts mitmproxy hooks to the interpreter and responder."""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import sys
from typing import Any

from mitmproxy import ctx, dns, exceptions, http
from mitmproxy.net.dns import response_codes, types
from mitmproxy.net.http import http1

from proxy_addons import __version__
from proxy_addons.decoding import decode_body
from proxy_addons.dispatch import install_hook_dispatch
from proxy_addons.egress import answer_question, own_address
from proxy_addons.interpreter import IncomingRequest, Interpreter, OutgoingResponse
from proxy_addons.limits import MAX_BODIES_IN_FLIGHT, MAX_BODY_BYTES, declared_body
from proxy_addons.responder import ABORT_HEADER, LOOPBACK, PLAN_HEADER, StreamingResponder
from proxy_addons.scenario import ScenarioError, load_scenario
from proxy_addons.typechecks import skip_message_typechecks
from proxy_addons.wire import RESET, ResetResponse, TimedResponse, WireOutcome
from proxy_addons.witness import WITNESS_BUDGET_BYTES, WitnessRecorder, WitnessWriteError, utc_timestamp

logger = logging.getLogger(__name__)

OPTION_SCENARIO = "probe_scenario"
OPTION_WITNESS = "probe_witness"
OPTION_MARKERS = "probe_markers"
OPTION_EXIT = "probe_exit_when_done"
OPTION_BUDGET = "probe_witness_budget"
OPTIONS = frozenset({OPTION_SCENARIO, OPTION_WITNESS, OPTION_MARKERS, OPTION_BUDGET})
DEFAULT_MARKERS = "/probe/markers"
# sysexits EX_IOERR: the orchestrator can tell "witness lost" from an ordinary proxy failure.
WITNESS_FAILURE_EXIT = 74
# flow.error.msg of a request whose body went past mitmproxy's `body_size_limit` (mitmproxy 12.3.1).
BODY_LIMIT_ERROR = "Request body exceeds mitmproxy's body_size_limit."
# flow.metadata key holding the responder token of a flow routed to the streaming responder.
PLAN_METADATA = "probe_plan"
# mitmproxy's default addons that do nothing unless one of these options is set or a command is run (the proxy sets
# none and runs none), each still called for every hook of every request: without them mitmproxy's own Python work
# per request falls by about a third (7,400 -> 4,800 calls with an addon that only answers). Onboarding stays (its
# `onboarding` option is on by default), as does everything that moves traffic or reports.
INERT_ADDONS: dict[str, tuple[str, ...]] = {
    "anticache": ("anticache",),
    "anticomp": ("anticomp",),
    "blocklist": ("block_list",),
    "browser": (),
    "comment": (),
    "cut": (),
    "export": ("export_preserve_original_ip",),
    "maplocal": ("map_local",),
    "mapremote": ("map_remote",),
    "modifybody": ("modify_body",),
    "modifyheaders": ("modify_headers",),
    "proxyauth": ("proxyauth",),
    "save": ("save_stream_file", "save_stream_filter"),
    "savehar": ("hardump",),
    "serverplayback": ("server_replay",),
    "stickyauth": ("stickyauth",),
    "stickycookie": ("stickycookie",),
}


def _options_error(message: str) -> Exception:
    # mitmproxy's exception classes are untyped; one typed constructor keeps --strict quiet.
    return exceptions.OptionsError(message)  # type: ignore[no-untyped-call]


class ScriptedProvider:
    """Answers every request itself from the scenario; never dials upstream."""

    def __init__(self) -> None:
        self.interpreter: Interpreter | None = None
        self.responder = StreamingResponder(clock=utc_timestamp)
        self._active: tuple[str, str, str, int] | None = None
        self._fatal: str | None = None
        self._own_ip: str | None = None
        self._stopping = False
        # Requests whose head arrived and whose `request` hook has not run yet, by flow id: what each body may take
        # while it arrives (limits.declared_body). One that ends in an error instead never reached the interpreter.
        self._arriving: dict[str, int] = {}
        self._held = 0  # the sum of _arriving's values, kept as they change (thousands of heads can be in flight)
        self._refused_heads: set[str] = set()  # of those, the ones mitmproxy refused at their head (it answers 400)

    async def running(self) -> None:
        # The responder needs the event loop, which exists once mitmproxy runs.
        if not self.responder.running:
            await self.responder.start()
        prune_inert_addons(ctx.master.addons, ctx.options)
        install_hook_dispatch(ctx.master.addons)
        skip_message_typechecks()

    def load(self, loader: Any) -> None:
        loader.add_option(OPTION_SCENARIO, str, "", "Scenario JSON file the scripted provider plays.")
        loader.add_option(OPTION_WITNESS, str, "", "Witness JSONL file the scripted provider appends to.")
        loader.add_option(
            OPTION_MARKERS, str, DEFAULT_MARKERS, "Directory where scripted tool calls write marker files."
        )
        loader.add_option(
            OPTION_BUDGET,
            int,
            WITNESS_BUDGET_BYTES,
            "Bytes the witness may grow to with request bodies and tool results in full; beyond them each is "
            "recorded as its size and sha256 only, and the witness says so (0: no budget).",
        )
        loader.add_option(
            OPTION_EXIT,
            bool,
            False,
            "End the process as soon as the witness is closed (a container's main process): Python's "
            "finalization of mitmproxy's modules takes longer than the whole shutdown and guards nothing.",
        )

    def configure(self, updated: set[str]) -> None:
        if not updated & OPTIONS:
            return
        scenario_path = str(ctx.options.probe_scenario)
        witness_path = str(ctx.options.probe_witness)
        markers_dir = str(ctx.options.probe_markers)
        budget = int(getattr(ctx.options, OPTION_BUDGET))
        config = (scenario_path, witness_path, markers_dir, budget)
        if self.interpreter is not None and config == self._active:
            # mitmproxy re-sends the old values when it rolls back a failed update: keep playing.
            return
        if not scenario_path or not witness_path:
            # Not configured rather than misconfigured: an error log is what makes mitmdump abort at
            # startup, and raising here would mask the real error when mitmproxy rolls options back.
            self._close()
            logger.error("%s and %s are required; refusing all traffic", OPTION_SCENARIO, OPTION_WITNESS)
            return
        if budget < 0:
            raise _options_error(f"{OPTION_BUDGET} must be 0 (no budget) or a number of bytes, got {budget}")
        if not markers_dir.startswith("/"):
            # The command runs in another container; only an absolute path means the same place there.
            raise _options_error(f"{OPTION_MARKERS} must be an absolute path, got {markers_dir!r}")
        try:
            scenario = load_scenario(scenario_path)
        except ScenarioError as exc:
            raise _options_error(f"{OPTION_SCENARIO}: {exc}") from exc
        try:
            recorder = WitnessRecorder(witness_path, budget=budget or None)
        except WitnessWriteError as exc:
            raise _options_error(f"{OPTION_WITNESS}: {exc}") from exc
        interpreter = Interpreter(scenario, recorder, markers_dir)
        try:
            interpreter.start(__version__)
        except WitnessWriteError as exc:
            with contextlib.suppress(WitnessWriteError):
                recorder.close()  # what failed is already being raised
            raise _options_error(f"{OPTION_WITNESS}: {exc}") from exc
        self._close()
        self.interpreter = interpreter
        self._active = config
        logger.info("playing scenario %s; witness %s", scenario.name, witness_path)

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        """Bound the bodies mitmproxy buffers at once: a request whose body would take them past
        MAX_BODIES_IN_FLIGHT is refused at its head, unanswered, and witnessed (mitmproxy stops reading it; it
        does not close the connection at once)."""
        interpreter = self.interpreter
        if self._fatal is not None or interpreter is None:
            return
        if flow.error is not None:
            # mitmproxy refused the head itself (its request validation): it answers 400, and the error hook follows.
            self._refused_heads.add(flow.id)
            self._arrive(flow.id, 0)
            return
        headers = flow.request.headers
        framed = not flow.request.http_version.startswith("HTTP/1")
        size = declared_body(headers.get("content-length"), "transfer-encoding" in headers, framed)
        if self._held + size <= MAX_BODIES_IN_FLIGHT:
            self._arrive(flow.id, size)
            return
        self._refuse(flow)
        try:
            interpreter.refuse_crowded(_head_only(flow), self._held)
        except WitnessWriteError as exc:
            self._die(f"witness write failed: {exc}")

    def _arrive(self, flow_id: str, size: int) -> None:
        self._held += size - self._arriving.get(flow_id, 0)
        self._arriving[flow_id] = size

    def _arrived(self, flow_id: str) -> bool:
        """Release a request's share of the bodies in flight; whether it had one (its head was seen)."""
        size = self._arriving.pop(flow_id, None)
        if size is None:
            return False
        self._held -= size
        return True

    def request(self, flow: http.HTTPFlow) -> None:
        self._arrived(flow.id)
        interpreter = self.interpreter
        if self._fatal is not None or interpreter is None:
            # Nothing may be served that the witness does not hold.
            self._refuse(flow)
            return
        try:
            raw = flow.request.raw_content or b""
            encoding = flow.request.headers.get("content-encoding")
            body = decode_body(raw, encoding, MAX_BODY_BYTES)
            incoming = IncomingRequest(
                method=flow.request.method,
                path=flow.request.path,
                headers=tuple(flow.request.headers.fields),
                body=body or b"",
                raw_body=flow.request.raw_content,
                inflates_past_cap=body is None,
            )
            answer = interpreter.handle(incoming)
        except WitnessWriteError as exc:
            self._die(f"witness write failed: {exc}")
            self._refuse(flow)
            return
        except Exception as exc:
            # The interpreter already turns its own failures into recorded 500s; reaching here means
            # even that could not be recorded, so the run cannot be trusted any more.
            logger.exception("scripted provider failed")
            self._die(f"unrecordable internal error: {type(exc).__name__}: {exc}")
            self._refuse(flow)
            return
        if isinstance(answer, OutgoingResponse):
            flow.response = http.Response.make(answer.status, answer.body, dict(answer.headers))
        elif isinstance(answer, ResetResponse):
            self._refuse(flow)
        else:
            self._route_to_responder(flow, answer)

    def dns_request(self, flow: dns.DNSFlow) -> None:
        """The harness container's resolver is this proxy: answer `provider`, refuse and witness the rest (E10)."""
        interpreter = self.interpreter
        if self._fatal is not None or interpreter is None:
            flow.response = flow.request.fail(response_codes.SERVFAIL)
            return
        if self._own_ip is None:
            self._own_ip = own_address()
        answers = []
        refused = False
        for q in flow.request.questions:
            decision = answer_question(q.name, q.type, self._own_ip)
            if decision.egress:
                refused = True
                try:
                    interpreter.recorder.write(
                        "egress", {"kind": "dns", "target": q.name.rstrip("."), "detail": _qtype_name(q.type)}
                    )
                except WitnessWriteError as exc:
                    self._die(f"witness write failed: {exc}")
            elif decision.address is not None:
                answers.append(dns.ResourceRecord.A(q.name, ipaddress.IPv4Address(decision.address)))
        if refused:
            flow.response = flow.request.fail(response_codes.NXDOMAIN)
        else:
            flow.response = flow.request.succeed(answers)

    def _route_to_responder(self, flow: http.HTTPFlow, answer: TimedResponse) -> None:
        """Send the flow to the streaming responder, which plays the timed reply with real waits."""
        port = self.responder.port
        if not self.responder.running or port is None:
            # Only without a running event loop (never under mitmdump): nothing can be timed, so nothing
            # is sent, and the witness says so.
            logger.error("streaming responder not running; closing the connection instead")
            self._finish_safely(
                answer, WireOutcome(ended=RESET, status=None, pieces_sent=0, completed_at=utc_timestamp())
            )
            self._refuse(flow)
            return

        token = self.responder.register(answer, on_error=self._finish_failed)
        flow.metadata[PLAN_METADATA] = token
        request = flow.request
        # The responder needs only the token; an empty body keeps its request parsing trivial.
        for name in ("content-encoding", "transfer-encoding"):
            if name in request.headers:
                del request.headers[name]
        request.raw_content = b""
        request.headers["content-length"] = "0"
        request.headers[PLAN_HEADER] = token
        request.scheme = "http"
        request.host = LOOPBACK
        request.port = port

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        if PLAN_METADATA not in flow.metadata or flow.response is None:
            return
        if ABORT_HEADER in flow.response.headers:
            # The responder gives up on a reply it never started: close the client connection, no reply.
            self._refuse(flow)
            return
        # Without streaming, mitmproxy would buffer the whole timed reply and defeat its timing.
        flow.response.stream = True

    def error(self, flow: http.HTTPFlow) -> None:
        unfinished = self._arrived(flow.id)
        refused_by_validation = flow.id in self._refused_heads
        self._refused_heads.discard(flow.id)
        token = flow.metadata.get(PLAN_METADATA)
        message = flow.error.msg if flow.error is not None else ""
        interpreter = self.interpreter if self._fatal is None and not self._stopping else None
        if unfinished and message != BODY_LIMIT_ERROR and interpreter is not None:
            # The head arrived, the request never did whole: mitmproxy ends it before the request hook, so it is
            # witnessed here. A head mitmproxy refused itself got its 400 already; a body cut off or malformed is
            # killed, so the client gets no reply, as witnessed, and not an error page of mitmproxy's own.
            head_refused = refused_by_validation or _invalid_head(flow)
            if not head_refused and flow.killable:
                flow.kill()  # type: ignore[no-untyped-call]
            try:
                interpreter.refuse_unfinished(_head_only(flow), message, 400 if head_refused else None)
            except WitnessWriteError as exc:
                self._die(f"witness write failed: {exc}")
        elif isinstance(token, str):
            client_left = message.lower().startswith("client disconnected")
            if not client_left and flow.killable:
                # mitmproxy could not reach the responder (the harness can crowd its port from the shared loopback):
                # killed here, the client's connection closes with no reply, which is what the witness records
                # (`reset`). Otherwise mitmproxy would answer a 502 page of its own that the witness never saw.
                flow.kill()  # type: ignore[no-untyped-call]
            self.responder.fail(token, client_left=client_left)
        elif message == BODY_LIMIT_ERROR and self.interpreter is not None and self._fatal is None:
            # mitmproxy refused the body while it arrived (its body_size_limit): the request hook never ran, so
            # the refusal is witnessed here, from the head alone.
            try:
                self.interpreter.refuse_oversized(_head_only(flow), flow.request.headers.get("content-length"))
            except WitnessWriteError as exc:
                self._die(f"witness write failed: {exc}")

    def _finish_safely(self, answer: TimedResponse, outcome: WireOutcome) -> None:
        try:
            answer.finish(outcome)
        except Exception as exc:
            self._finish_failed(exc)

    def _finish_failed(self, exc: BaseException) -> None:
        if not isinstance(exc, WitnessWriteError):
            logger.error("recording a timed reply failed", exc_info=exc)
        # During `done` mitmproxy is already stopping; asking it again is pointless.
        self._die(f"recording a timed reply failed: {exc}", shutdown=not self._stopping)

    def done(self) -> None:
        # Replies still in play (a withheld one, say) are witnessed as far as they got, before `end`.
        self._stopping = True
        self.responder.close()
        interpreter = self.interpreter
        if interpreter is not None and self._fatal is None:
            try:
                interpreter.finish()
            except WitnessWriteError as exc:
                self._die(f"witness write failed: {exc}", shutdown=False)
        self._close()
        # Leave a non-zero exit status: a clean exit would pass off a truncated witness as whole.
        code = WITNESS_FAILURE_EXIT if self._fatal is not None else 0
        if bool(getattr(ctx.options, OPTION_EXIT, False)):
            # The witness is closed (every line fsync'd); what is printed is flushed; nothing else needs keeping.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        if code:
            raise SystemExit(code)

    def _close(self) -> None:
        if self.interpreter is not None:
            recorder = self.interpreter.recorder
            self.interpreter = None
            self._active = None
            try:
                # Returns once every line is fsync'd: a line that never could be is a lost witness.
                recorder.close()
            except WitnessWriteError as exc:
                self._die(f"witness write failed: {exc}", shutdown=not self._stopping)

    def _refuse(self, flow: http.HTTPFlow) -> None:
        if flow.killable:
            flow.kill()  # type: ignore[no-untyped-call]

    def _die(self, reason: str, shutdown: bool = True) -> None:
        first = self._fatal is None
        self._fatal = self._fatal or reason
        if first:
            message = f"harness-probe scripted provider: FATAL: {reason}; refusing all traffic and stopping"
            logger.critical(message)
            print(message, file=sys.stderr, flush=True)
            if shutdown:
                ctx.master.shutdown()  # type: ignore[no-untyped-call]


def prune_inert_addons(manager: Any, options: Any) -> list[str]:
    """Remove the INERT_ADDONS whose options are all at their defaults; returns their names."""
    removed = []
    for name, names in INERT_ADDONS.items():
        addon = manager.get(name)
        if addon is None or any(option in options and options.has_changed(option) for option in names):
            continue
        manager.remove(addon)
        removed.append(name)
    return removed


def _invalid_head(flow: http.HTTPFlow) -> bool:
    """Whether mitmproxy's HTTP/1 reader refused this head (a length it cannot read), answering 400 at once."""
    try:
        http1.expected_http_body_size(flow.request)
    except ValueError:
        return True
    return False


def _head_only(flow: http.HTTPFlow) -> IncomingRequest:
    """A request known by its head alone (its body never arrived whole, or was refused while it did)."""
    request = flow.request
    return IncomingRequest(method=request.method, path=request.path, headers=tuple(request.headers.fields), body=b"")


def _qtype_name(qtype: int) -> str:
    return str(types.to_str(qtype))


addons = [ScriptedProvider()]
