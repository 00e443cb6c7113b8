"""The hook dispatch calls exactly what mitmproxy's own would, in the same order, and follows chain changes."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
from mitmproxy import exceptions, hooks
from mitmproxy.test import taddons, tflow

from proxy_addons.dispatch import HookDispatch, install_hook_dispatch

Calls = list[str]


class Recorder:
    """An addon with sync and async hooks, optionally failing or halting, with sub-addons."""

    def __init__(self, name: str, calls: Calls, children: list[Any] | None = None, behaviour: str = "") -> None:
        self.name = name
        self.calls = calls
        self.behaviour = behaviour
        if children is not None:
            self.addons = children

    def request(self, flow: Any) -> None:
        self.calls.append(f"{self.name}.request")
        if self.behaviour == "fail":
            raise ValueError(f"{self.name} fails")
        if self.behaviour == "halt":
            raise exceptions.AddonHalt()

    async def response(self, flow: Any) -> None:
        await asyncio.sleep(0)
        self.calls.append(f"{self.name}.response")


class NotAHook:
    name = "notahook"
    request = "not callable"


def chain(calls: Calls, behaviour: str = "") -> list[Any]:
    leaf = Recorder("a.child.leaf", calls)
    return [
        Recorder("a", calls, [Recorder("a.child", calls, [leaf], behaviour=behaviour), Recorder("a.sibling", calls)]),
        Recorder("b", calls),
        Recorder("c", calls),
    ]


def run(addons: list[Any], body: Callable[[Any], Coroutine[Any, Any, None]]) -> None:
    async def main() -> None:
        with taddons.context(*addons) as tctx:
            try:
                await body(tctx.master.addons)
            finally:
                # A test master never runs, so nothing removes its logging handler, which would hand a later
                # test's error logs to this closed event loop.
                tctx.master._legacy_log_events.uninstall()

    asyncio.run(main())


def events(flow: Any) -> list[hooks.Hook]:
    return [hooks.UpdateHook([flow]), _request(flow), _response(flow)]


def _request(flow: Any) -> hooks.Hook:
    from mitmproxy.proxy.layers.http import HttpRequestHook

    return HttpRequestHook(flow)


def _response(flow: Any) -> hooks.Hook:
    from mitmproxy.proxy.layers.http import HttpResponseHook

    return HttpResponseHook(flow)


@pytest.mark.parametrize("behaviour", ["", "fail", "halt"])
def test_dispatch_calls_what_mitmproxy_calls_in_its_order(behaviour: str) -> None:
    flow = tflow.tflow(resp=True)
    seen: dict[str, Calls] = {}
    for mode in ("mitmproxy", "dispatch"):
        calls: Calls = []

        async def body(manager: Any, mode: str = mode) -> None:
            if mode == "dispatch":
                install_hook_dispatch(manager)
            for event in events(flow):
                await manager.trigger_event(event)

        run(chain(calls, behaviour), body)
        seen[mode] = calls
    assert seen["dispatch"] == seen["mitmproxy"]
    if behaviour == "fail":
        # A failing hook skips the rest of its top-level addon's tree only; the next addons still run.
        assert seen["dispatch"][:4] == ["a.request", "a.child.request", "b.request", "c.request"]
    elif behaviour == "halt":
        assert seen["dispatch"][:2] == ["a.request", "a.child.request"]
        assert "b.request" not in seen["dispatch"]
    else:
        order = ["a.request", "a.child.request", "a.child.leaf.request", "a.sibling.request", "b.request"]
        assert seen["dispatch"][:5] == order


def test_a_failing_hook_is_logged_as_mitmproxy_logs_it(caplog: pytest.LogCaptureFixture) -> None:
    calls: Calls = []

    async def body(manager: Any) -> None:
        install_hook_dispatch(manager)
        await manager.trigger_event(_request(tflow.tflow()))

    with caplog.at_level(logging.ERROR):
        run(chain(calls, "fail"), body)
    assert any("Addon error: a.child fails" in record.getMessage() for record in caplog.records)


def test_chain_changes_are_followed() -> None:
    calls: Calls = []
    late = Recorder("late", calls)

    async def body(manager: Any) -> None:
        install_hook_dispatch(manager)
        flow = tflow.tflow()
        await manager.trigger_event(_request(flow))
        assert calls == ["first.request"]
        manager.add(late)
        await manager.trigger_event(_request(flow))
        assert calls[1:] == ["first.request", "late.request"]
        manager.remove(manager.get("first"))
        await manager.trigger_event(_request(flow))
        assert calls[3:] == ["late.request"]
        # A sub-addon appearing under a parent (a script loading) goes through `register`.
        parent = manager.get("late")
        parent.addons = [Recorder("loaded", calls)]
        manager.register(parent.addons[0])
        await manager.trigger_event(_request(flow))
        assert calls[4:] == ["late.request", "loaded.request"]

    run([Recorder("first", calls)], body)


def test_events_nobody_handles_call_nothing_and_are_cached() -> None:
    calls: Calls = []

    async def body(manager: Any) -> None:
        dispatch = install_hook_dispatch(manager)
        assert install_hook_dispatch(manager) is dispatch
        assert dispatch.hooks_for("update") == ()
        groups = dispatch.hooks_for("request")
        assert groups is not None and [len(g) for g in groups] == [4, 1, 1]
        assert dispatch.hooks_for("request") is groups
        await manager.trigger_event(hooks.UpdateHook([tflow.tflow()]))

    run(chain(calls), body)
    assert calls == []


def test_a_hook_attribute_that_is_not_callable_is_left_to_mitmproxy(caplog: pytest.LogCaptureFixture) -> None:
    calls: Calls = []

    async def body(manager: Any) -> None:
        dispatch = install_hook_dispatch(manager)
        assert isinstance(dispatch, HookDispatch)
        assert dispatch.hooks_for("request") is None
        await manager.trigger_event(_request(tflow.tflow()))

    with caplog.at_level(logging.ERROR):
        run([Recorder("first", calls), NotAHook(), Recorder("last", calls)], body)
    # mitmproxy's own dispatch: the error is logged and the other addons still see the event.
    assert calls == ["first.request", "last.request"]
    assert any("not callable" in record.getMessage() for record in caplog.records)
