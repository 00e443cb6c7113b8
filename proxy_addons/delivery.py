"""How a scripted step reaches a harness: the delivery protocol, and the one a scenario's profile chooses.

A scenario says what a step does (run these commands, then answer X); a delivery says how that reaches one harness
and how its results come back: native tool calls (most harnesses; `delivery_native`), keystroke JSON typed into a
terminal (Terminus 2; `delivery_keystrokes`), a python block in text (SciCode; `delivery_python_blocks`). The
interpreter plays the script, faults and witness, and leaves each of these to the delivery.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from proxy_addons import delivery_keystrokes, delivery_python_blocks
from proxy_addons.delivery_keystrokes import KeystrokeDelivery
from proxy_addons.delivery_native import NativeDelivery
from proxy_addons.delivery_python_blocks import PythonBlockDelivery
from proxy_addons.protocol import Codec, IssuedToolCall, ModelRequest, Played, Refusal
from proxy_addons.scenario import Scenario, Step

__all__ = ["Delivery", "Played", "Refusal", "delivery_for"]


class Delivery(Protocol):
    """One way of delivering steps: reads a request as the script sees it, renders a step, learns what arrived."""

    name: str

    # Whether the harness sends each call's result back; when not, none is awaited and markers are checked at the end.
    @property
    def returns_results(self) -> bool: ...

    def adapt(self, body: Mapping[str, Any], request: ModelRequest, sent: Mapping[str, IssuedToolCall]) -> ModelRequest:
        """The request as the script reads it (its tools, and the result of each call in `sent` the model saw)."""
        ...

    def play(self, step: Step, request: ModelRequest, codec: Codec, markers_dir: str) -> Played | Refusal:
        """The step as this harness takes it, or why the request leaves no way to deliver it."""
        ...

    def delivered(self, played: Played) -> None:
        """The reply carrying `played` reached the harness whole (a cut one did not)."""
        ...


def delivery_for(scenario: Scenario) -> Delivery:
    """The delivery a scenario's `harness_profile` chooses: its `delivery`, else native tool calls (with its
    `final_answer` form)."""
    if scenario.delivery is None:
        return NativeDelivery(scenario.final_answer_tool, scenario.final_answer_shell_prefix)
    if scenario.delivery == delivery_keystrokes.DELIVERY:
        return KeystrokeDelivery()
    if scenario.delivery == delivery_python_blocks.DELIVERY:
        return PythonBlockDelivery()
    raise ValueError(f"unknown delivery {scenario.delivery!r}")
