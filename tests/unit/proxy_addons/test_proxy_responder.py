"""The streaming responder on its own: timed replies played to a raw client over loopback, outcomes reported."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from proxy_addons.responder import ABORT_HEAD, PLAN_HEADER, StreamingResponder
from proxy_addons.wire import COMPLETE, CUT, RESET, WITHHELD, TimedReply, TimedResponse, WireOutcome

SSE = {"content-type": "text/event-stream"}
TICKS = itertools.count()


def clock() -> str:
    return f"2026-01-01T00:00:00.{next(TICKS):06d}Z"


class Recorder:
    """Collects the outcomes the responder reports."""

    def __init__(self) -> None:
        self.outcomes: list[WireOutcome] = []
        self.errors: list[BaseException] = []

    def plan(self, responder: StreamingResponder, reply: TimedReply) -> str:
        return responder.register(TimedResponse(reply, self.outcomes.append), on_error=self.errors.append)


def request(token: str) -> bytes:
    head = f"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n{PLAN_HEADER}: {token}\r\ncontent-length: 2\r\n\r\n"
    return head.encode() + b"{}"


def run(test: Callable[[StreamingResponder, Recorder], Awaitable[None]]) -> Recorder:
    recorder = Recorder()

    async def main() -> None:
        responder = StreamingResponder(clock=clock)
        await responder.start()
        try:
            await test(responder, recorder)
        finally:
            responder.close()

    asyncio.run(asyncio.wait_for(main(), 10))
    return recorder


async def connect(responder: StreamingResponder) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    assert responder.port is not None
    return await asyncio.open_connection("127.0.0.1", responder.port)


async def read_all(reader: asyncio.StreamReader, timeout: float = 5.0) -> bytes:
    return await asyncio.wait_for(reader.read(), timeout)


async def wait_for(condition: Callable[[], Any], timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached"
        await asyncio.sleep(0.01)


def test_complete_chunked_reply_then_a_second_plan_on_the_kept_alive_connection() -> None:
    async def test(responder: StreamingResponder, recorder: Recorder) -> None:
        first = recorder.plan(responder, TimedReply(200, SSE, pieces=(b"a", b"bc"), chunked=True))
        second = recorder.plan(responder, TimedReply(504, {"content-type": "application/json"}, pieces=(b"{}",)))
        reader, writer = await connect(responder)
        writer.write(request(first))
        head = await reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 OK\r\n") and b"transfer-encoding: chunked" in head
        assert await reader.readuntil(b"0\r\n\r\n") == b"1\r\na\r\n2\r\nbc\r\n0\r\n\r\n"
        writer.write(request(second))
        head = await reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 504 Gateway Timeout\r\n") and b"content-length: 2" in head
        assert await reader.readexactly(2) == b"{}"
        writer.close()
        await wait_for(lambda: len(recorder.outcomes) == 2)

    outcomes = run(test).outcomes
    assert [(o.ended, o.status, o.pieces_sent, o.client_disconnected_at) for o in outcomes] == [
        (COMPLETE, 200, 2, None),
        (COMPLETE, 504, 1, None),
    ]


def test_cut_sends_some_pieces_pauses_then_closes_mid_body() -> None:
    async def test(responder: StreamingResponder, recorder: Recorder) -> None:
        token = recorder.plan(
            responder,
            TimedReply(200, SSE, pieces=(b"1", b"2", b"3"), chunked=True, send_pieces=2, ending=CUT, hold_seconds=0.2),
        )
        reader, writer = await connect(responder)
        writer.write(request(token))
        started = asyncio.get_running_loop().time()
        await reader.readuntil(b"\r\n\r\n")
        assert await reader.readexactly(12) == b"1\r\n1\r\n1\r\n2\r\n"
        seen_at = asyncio.get_running_loop().time()
        assert await read_all(reader) == b""  # closed without the last piece or the final chunk
        assert asyncio.get_running_loop().time() - seen_at >= 0.15
        assert seen_at - started < 0.15
        writer.close()

    (outcome,) = run(test).outcomes
    assert (outcome.ended, outcome.status, outcome.pieces_sent, outcome.client_disconnected_at) == (CUT, 200, 2, None)


def test_withheld_stream_waits_until_the_client_leaves() -> None:
    async def test(responder: StreamingResponder, recorder: Recorder) -> None:
        reply = TimedReply(200, SSE, chunked=True, preamble=b": wait\n\n", ending=WITHHELD, hold_seconds=30)
        token = recorder.plan(responder, reply)
        reader, writer = await connect(responder)
        writer.write(request(token))
        await reader.readuntil(b"\r\n\r\n")
        assert await reader.readexactly(13) == b"8\r\n: wait\n\n\r\n"
        await asyncio.sleep(0.2)
        assert recorder.outcomes == []
        writer.close()
        await wait_for(lambda: recorder.outcomes)

    (outcome,) = run(test).outcomes
    assert (outcome.ended, outcome.status, outcome.pieces_sent) == (WITHHELD, 200, 0)
    assert outcome.client_disconnected_at == outcome.completed_at


def test_withheld_json_reply_gives_up_at_its_cap_with_the_abort_head() -> None:
    async def test(responder: StreamingResponder, recorder: Recorder) -> None:
        reply = TimedReply(200, {}, send_head=False, ending=WITHHELD, hold_seconds=0.1)
        token = recorder.plan(responder, reply)
        reader, writer = await connect(responder)
        writer.write(request(token))
        assert await read_all(reader) == ABORT_HEAD
        writer.close()

    (outcome,) = run(test).outcomes
    assert (outcome.ended, outcome.status, outcome.client_disconnected_at) == (WITHHELD, None, None)


def test_client_leaving_during_the_delay_is_withheld() -> None:
    async def test(responder: StreamingResponder, recorder: Recorder) -> None:
        token = recorder.plan(responder, TimedReply(504, {}, pieces=(b"{}",), delay_seconds=30))
        _, writer = await connect(responder)
        writer.write(request(token))
        await asyncio.sleep(0.1)
        writer.close()
        await wait_for(lambda: recorder.outcomes)

    (outcome,) = run(test).outcomes
    assert (outcome.ended, outcome.status) == (WITHHELD, None) and outcome.client_disconnected_at is not None


def test_close_witnesses_replies_still_in_play_and_fail_marks_unreached_ones() -> None:
    async def test(responder: StreamingResponder, recorder: Recorder) -> None:
        unreached = recorder.plan(responder, TimedReply(200, {}, pieces=(b"x",)))
        responder.fail(unreached, client_left=False)
        recorder.plan(responder, TimedReply(200, SSE, chunked=True, ending=WITHHELD, hold_seconds=30))
        token = recorder.plan(responder, TimedReply(200, SSE, chunked=True, ending=WITHHELD, hold_seconds=30))
        reader, writer = await connect(responder)
        writer.write(request(token))
        await reader.readuntil(b"\r\n\r\n")
        assert responder.pending() == 2
        responder.close()
        await asyncio.sleep(0.05)
        writer.close()

    outcomes = run(test).outcomes
    assert [(o.ended, o.status, o.client_disconnected_at) for o in outcomes] == [
        (RESET, None, None),
        (WITHHELD, None, None),
        (WITHHELD, 200, None),
    ]


def test_a_failing_finish_is_reported_not_raised() -> None:
    errors: list[BaseException] = []

    async def test(responder: StreamingResponder, recorder: Recorder) -> None:
        def finish(outcome: WireOutcome) -> None:
            raise OSError("disk full")

        token = responder.register(TimedResponse(TimedReply(200, {}, pieces=(b"{}",)), finish), on_error=errors.append)
        reader, writer = await connect(responder)
        writer.write(request(token))
        await reader.readuntil(b"\r\n\r\n")
        await wait_for(lambda: errors)
        writer.close()

    run(test)
    assert [str(e) for e in errors] == ["disk full"]


@pytest.mark.parametrize("token", ["", "unknown"])
def test_request_without_a_plan_is_closed(token: str) -> None:
    async def test(responder: StreamingResponder, recorder: Recorder) -> None:
        reader, writer = await connect(responder)
        writer.write(request(token))
        assert await read_all(reader) == b""
        writer.close()

    assert run(test).outcomes == []


def test_the_harness_sharing_loopback_gets_nothing_without_a_live_plan_token() -> None:
    """In the pod the harness can connect here too: no token, a made-up one, a used one or a body gets no reply."""

    async def test(responder: StreamingResponder, recorder: Recorder) -> None:
        token = recorder.plan(responder, TimedReply(200, {"content-type": "application/json"}, pieces=(b"{}",)))
        big = f"POST / HTTP/1.1\r\n{PLAN_HEADER}: {token}\r\ncontent-length: 1000000\r\n\r\n".encode()
        for attempt in (b"GET / HTTP/1.1\r\nhost: x\r\n\r\n", request("0" * 32), big):
            reader, writer = await connect(responder)
            writer.write(attempt)
            assert await read_all(reader) == b""
            writer.close()
        assert responder.pending() == 1, "a foreign request must not use up or end the plan"
        reader, writer = await connect(responder)
        writer.write(request(token).replace(b"content-length: 2\r\n\r\n{}", b"content-length: 0\r\n\r\n"))
        assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200 OK")
        writer.close()
        await wait_for(lambda: recorder.outcomes)
        reader, writer = await connect(responder)
        writer.write(request(token))
        assert await read_all(reader) == b"", "a token is good for one request only"
        writer.close()

    recorder = run(test)
    assert [o.ended for o in recorder.outcomes] == [COMPLETE]


def test_a_silent_connection_is_dropped_and_their_number_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("proxy_addons.responder.FIRST_REQUEST_SECONDS", 2.0)
    monkeypatch.setattr("proxy_addons.responder.MAX_UNCLAIMED", 2)

    async def test(responder: StreamingResponder, recorder: Recorder) -> None:
        silent = [await connect(responder) for _ in range(2)]
        await asyncio.sleep(0.05)
        # Past the bound the oldest silent connection is closed at once, not the newest: held-open connections on the
        # shared loopback cannot lock mitmproxy out of a timed reply.
        token = recorder.plan(responder, TimedReply(200, {"content-type": "application/json"}, pieces=(b"{}",)))
        reader, writer = await connect(responder)
        assert await read_all(silent[0][0], 1.0) == b"", "the oldest silent connection is closed at once"
        writer.write(request(token))
        assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200 OK")
        assert await read_all(silent[1][0], 4.0) == b"", "a silent connection is dropped at its deadline"
        for _reader, w in [*silent, (reader, writer)]:
            w.close()
            await w.wait_closed()

    run(test)
