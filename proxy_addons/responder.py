"""Streaming responder: a loopback HTTP/1.1 server in the proxy process that plays timed replies piece by piece."""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus

from proxy_addons.wire import COMPLETE, CUT, RESET, WITHHELD, TimedReply, TimedResponse, WireOutcome

logger = logging.getLogger(__name__)

PLAN_HEADER = "x-probe-plan"
# A response head carrying this header asks the addon to kill the flow (see `_abort`).
ABORT_HEADER = "x-probe-abort"
ABORT_HEAD = f"HTTP/1.1 502 Bad Gateway\r\n{ABORT_HEADER}: 1\r\ncontent-length: 0\r\n\r\n".encode("latin-1")
LOOPBACK = "127.0.0.1"
# mitmproxy forwards the client's request headers; the limit only bounds a malformed request.
HEAD_LIMIT = 1 << 20
# The addon empties the body of every request it reroutes here; anything larger is not from the addon.
MAX_BODY = 1 << 16
# mitmproxy sends its request as soon as it connects; a connection silent for this long is not mitmproxy's.
FIRST_REQUEST_SECONDS = 10.0
# Connections that have not yet shown a plan token: bounded, so no one can make the proxy buffer without end. Past
# the bound the oldest is closed, not the newest: mitmproxy sends its request as soon as it connects, so the oldest
# silent connection is someone else's, and connections held open on the shared loopback cannot lock mitmproxy out.
MAX_UNCLAIMED = 64


@dataclass(eq=False)
class _Plan:
    """One registered timed reply and how far it got."""

    token: str
    response: TimedResponse
    on_error: Callable[[BaseException], None]
    status_sent: int | None = None
    pieces_sent: int = 0
    finished: bool = False
    claimed: bool = False
    task: asyncio.Task[None] | None = field(default=None, repr=False)

    @property
    def reply(self) -> TimedReply:
        return self.response.reply


def _interrupted_ending(plan: _Plan) -> str:
    """How a reply ended that stopped before its plan did: nothing said is withheld, half said is cut."""
    if plan.reply.ending == WITHHELD or plan.status_sent is None:
        return WITHHELD
    return CUT


def _head(reply: TimedReply) -> bytes:
    try:
        reason = HTTPStatus(reply.status).phrase
    except ValueError:
        reason = "Status"
    lines = [f"HTTP/1.1 {reply.status} {reason}"]
    lines.extend(f"{name}: {value}" for name, value in reply.headers.items())
    if reply.chunked:
        lines.append("transfer-encoding: chunked")
    else:
        lines.append(f"content-length: {sum(len(piece) for piece in reply.pieces)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _frame(reply: TimedReply, data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data) if reply.chunked else data


class StreamingResponder:
    """Plays registered timed replies to the connections mitmproxy opens to it; one plan per request.

    mitmproxy sends a response made in an addon hook in one piece, so replies with time structure are
    routed here instead: the addon points the flow at this server, mitmproxy streams what it sends to
    the client as it arrives, and closes this side when the client leaves (see proxy_addons/README.md).
    """

    def __init__(self, clock: Callable[[], str]) -> None:
        self._clock = clock
        self._server: asyncio.Server | None = None
        self._plans: dict[str, _Plan] = {}
        # Connections before their first request, oldest first (a dict keeps insertion order).
        self._unclaimed: dict[asyncio.StreamWriter, None] = {}
        self.port: int | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, LOOPBACK, 0, limit=HEAD_LIMIT)
        self.port = self._server.sockets[0].getsockname()[1]
        logger.info("streaming responder listening on %s:%d", LOOPBACK, self.port)

    @property
    def running(self) -> bool:
        return self.port is not None

    def register(self, response: TimedResponse, on_error: Callable[[BaseException], None]) -> str:
        """Keep `response` for the request that will carry the returned token in the `x-probe-plan` header."""
        token = secrets.token_hex(16)
        self._plans[token] = _Plan(token, response, on_error)
        return token

    def pending(self) -> int:
        return sum(1 for plan in self._plans.values() if not plan.finished)

    def fail(self, token: str, client_left: bool) -> None:
        """The flow for `token` ended before its request reached us: nothing was sent.

        Either the client left first (a withheld reply) or mitmproxy could not reach this server and
        closed the client connection itself.
        """
        plan = self._plans.get(token)
        if plan is not None and not plan.claimed:
            self._finish(plan, WITHHELD if client_left else RESET, client_left=client_left)

    def close(self) -> None:
        """Stop serving; every reply still in play is witnessed as far as it got."""
        if self._server is not None:
            self._server.close()
            self._server = None
        self.port = None
        for plan in list(self._plans.values()):
            if plan.task is not None:
                plan.task.cancel()
            self._finish(plan, _interrupted_ending(plan))

    # -- one connection ----------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # The harness shares the proxy's loopback and can connect here too: a connection is served only for a
        # request carrying the one-time token of a plan in play, which only the addon (via mitmproxy) knows.
        prefix = b""
        first = True
        try:
            while True:
                if first:
                    if len(self._unclaimed) >= MAX_UNCLAIMED:
                        oldest = next(iter(self._unclaimed))
                        del self._unclaimed[oldest]
                        oldest.transport.abort()
                        logger.warning("streaming responder: too many connections without a plan; closed the oldest")
                    self._unclaimed[writer] = None
                    try:
                        plan = await asyncio.wait_for(self._read_request(reader, prefix), FIRST_REQUEST_SECONDS)
                    finally:
                        self._unclaimed.pop(writer, None)
                    first = False
                else:
                    plan = await self._read_request(reader, prefix)
                if plan is None:
                    return
                plan.claimed = True
                plan.task = asyncio.current_task()
                keep, prefix = await self._play(plan, reader, writer)
                if not keep:
                    return
        except (
            ConnectionError,
            TimeoutError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
            ValueError,
        ) as exc:
            logger.debug("streaming responder connection ended: %r", exc)
        finally:
            # abort, not close: a cut must not wait for buffered data, and there is nothing left to flush.
            writer.transport.abort()

    async def _read_request(self, reader: asyncio.StreamReader, prefix: bytes) -> _Plan | None:
        """Read one request and return its plan; None at end of stream or for a request without a live plan.

        The token is checked before any body is read, and a rerouted request has an empty body (the addon
        empties it), so a foreign request gets nothing: no reply, no buffering.
        """
        try:
            head = prefix + await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return None
        token = ""
        length = 0
        for line in head.decode("latin-1").split("\r\n")[1:]:
            name, _, value = line.partition(":")
            name = name.strip().lower()
            if name == PLAN_HEADER:
                token = value.strip()
            elif name == "content-length":
                length = int(value.strip())
            elif name == "transfer-encoding":
                length = -1
        plan = self._plans.get(token)
        if plan is None or plan.claimed or not secrets.compare_digest(plan.token, token):
            # No plan, or its flow already ended (the client left before this request was read).
            logger.warning("streaming responder: request without a plan in play; closed unanswered")
            return None
        if length < 0 or length > MAX_BODY:
            logger.warning("streaming responder: request body not empty; closed unanswered")
            return None
        if length:
            await reader.readexactly(length)
        return plan

    async def _play(
        self, plan: _Plan, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> tuple[bool, bytes]:
        """Play `plan`; returns (keep the connection for another request, bytes already read of it)."""
        reply = plan.reply
        # mitmproxy sends nothing while a reply is pending, so any read completing means it closed this
        # side: the client left.
        gone: asyncio.Future[bytes] = asyncio.ensure_future(reader.read(1))
        try:
            if reply.delay_seconds > 0 and await self._left(gone, reply.delay_seconds):
                return self._left_early(plan), b""
            if not reply.send_head:
                if await self._left(gone, reply.hold_seconds):
                    return self._left_early(plan), b""
                await self._abort(writer)
                self._finish(plan, WITHHELD)
                return False, b""
            writer.write(_head(reply) + (_frame(reply, reply.preamble) if reply.preamble else b""))
            plan.status_sent = reply.status
            await writer.drain()
            for piece in reply.pieces[: reply.pieces_to_send]:
                if gone.done():
                    return self._left_early(plan), b""
                writer.write(_frame(reply, piece))
                await writer.drain()
                plan.pieces_sent += 1
            if reply.ending == COMPLETE:
                if reply.chunked:
                    writer.write(b"0\r\n\r\n")
                    await writer.drain()
                self._finish(plan, COMPLETE)
                if gone.done():
                    data = gone.result() if not gone.cancelled() and gone.exception() is None else b""
                    # Data is the start of the next request on this kept-alive connection; none is a close.
                    return bool(data), data
                return True, b""
            if await self._left(gone, reply.hold_seconds):
                return self._left_early(plan), b""
            self._finish(plan, reply.ending)
            return False, b""
        except (ConnectionError, asyncio.CancelledError):
            if not plan.finished:
                self._finish(plan, _interrupted_ending(plan), client_left=True)
            raise
        finally:
            gone.cancel()

    async def _abort(self, writer: asyncio.StreamWriter) -> None:
        """End a reply that never started without mitmproxy making one up.

        Closing here would make mitmproxy answer 502 itself, and a flow killed while it waits for
        the server is not honoured. A head marked with ABORT_HEADER reaches the addon's
        `responseheaders` hook first, which kills the flow: the client connection closes with no reply.
        """
        writer.write(ABORT_HEAD)
        await writer.drain()

    async def _left(self, gone: asyncio.Future[bytes], seconds: float) -> bool:
        done, _ = await asyncio.wait({gone}, timeout=max(seconds, 0.0))
        return bool(done)

    def _left_early(self, plan: _Plan) -> bool:
        self._finish(plan, _interrupted_ending(plan), client_left=True)
        return False

    def _finish(self, plan: _Plan, ended: str, client_left: bool = False) -> None:
        if plan.finished:
            return
        plan.finished = True
        self._plans.pop(plan.token, None)
        now = self._clock()
        outcome = WireOutcome(
            ended=ended,
            status=plan.status_sent,
            pieces_sent=plan.pieces_sent,
            completed_at=now,
            client_disconnected_at=now if client_left else None,
        )
        logger.info("timed reply ended %s after %d piece(s)", ended, plan.pieces_sent)
        try:
            plan.response.finish(outcome)
        except Exception as exc:
            # Witnessing failed: the addon decides what that means (it stops serving).
            plan.on_error(exc)
