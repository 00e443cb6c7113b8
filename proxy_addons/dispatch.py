"""Hook dispatch for mitmproxy's addon manager that calls, per event, only the addons that implement it.

Why: mitmproxy (12.3.1, pinned) delivers every event by walking the whole addon chain, looking each hook up by
name in a generator and entering a context manager per addon, whether or not the addon has that hook. A proxied
request is eight such events (`requestheaders`, `request`, `responseheaders`, `response` and an `update` after
each, which no addon of mitmdump implements), so that walk over ~20 addons was about a third of the proxy's CPU
per request. Here the hooks of each event are looked up once and kept until the chain changes.

What stays as mitmproxy does it: the order (chain order, each addon before its sub-addons), `safecall` around each
top-level addon (a failing hook is logged and skips only the rest of that addon's tree), `AddonHalt` ending the
event, awaiting what a hook returns when it is awaitable, and the error for a hook attribute that is not callable
(such an event is handed to mitmproxy's own dispatch). The index is dropped whenever the manager registers,
adds, removes or clears addons, which is how every chain change in mitmproxy happens (scripts (re)loading
included); a hook an addon assigns to itself after the fact is not seen, and no addon of mitmproxy's does that.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from typing import Any

from mitmproxy import addonmanager, exceptions, hooks

# The manager's methods that change which addons (and sub-addons) are in the chain.
CHAIN_CHANGES = ("register", "add", "remove", "clear")
Hook = Callable[..., Any]
Groups = tuple[tuple[Hook, ...], ...]


class HookDispatch:
    """Replaces `manager.trigger_event` with a dispatch over the hooks each event has in the current chain."""

    def __init__(self, manager: Any) -> None:
        self._manager = manager
        self._original: Callable[[hooks.Hook], Any] = manager.trigger_event
        self._groups: dict[str, Groups | None] = {}

    def install(self) -> None:
        manager = self._manager
        for name in CHAIN_CHANGES:
            setattr(manager, name, self._invalidating(getattr(manager, name)))
        manager.trigger_event = self.trigger_event

    def _invalidating(self, method: Callable[..., Any]) -> Callable[..., Any]:
        def changed(*args: Any, **kwargs: Any) -> Any:
            try:
                return method(*args, **kwargs)
            finally:
                self._groups.clear()

        return changed

    def hooks_for(self, name: str) -> Groups | None:
        """Per top-level addon (in chain order), its tree's callables for `name`; None: leave it to mitmproxy."""
        if name not in self._groups:
            self._groups[name] = self._collect(name)
        return self._groups[name]

    def _collect(self, name: str) -> Groups | None:
        groups = []
        for addon in self._manager.chain:
            funcs = []
            for member in addonmanager.traverse([addon]):  # type: ignore[no-untyped-call]
                func = getattr(member, name, None)
                # As mitmproxy's `_iter_hooks`: falsy attributes and imported modules of a hook's name are no hooks.
                if not func or isinstance(func, types.ModuleType):
                    continue
                if not callable(func):
                    return None
                funcs.append(func)
            if funcs:
                groups.append(tuple(funcs))
        return tuple(groups)

    async def trigger_event(self, event: hooks.Hook) -> None:
        groups = self.hooks_for(event.name)
        if groups is None:
            await self._original(event)
            return
        if not groups:
            return
        args = event.args()
        for funcs in groups:
            try:
                with addonmanager.safecall():
                    for func in funcs:
                        result = func(*args)
                        if result is not None and inspect.isawaitable(result):
                            await result
            except exceptions.AddonHalt:
                return


def install_hook_dispatch(manager: Any) -> HookDispatch:
    """Install a HookDispatch on `manager` (once: a second call returns the one installed)."""
    current = getattr(manager.trigger_event, "__self__", None)
    if isinstance(current, HookDispatch):
        return current
    dispatch = HookDispatch(manager)
    dispatch.install()
    return dispatch
