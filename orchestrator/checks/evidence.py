"""What checks read: the rollout (self-reported), the witness (what crossed the wire), markers and scope."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain, compress, islice, repeat
from pathlib import Path
from typing import Any, cast

from orchestrator.checks.fault_kinds import NOT_ISSUED
from orchestrator.evidence import (
    Fault,
    FormatError,
    faults,
    fragment_batch_precheck,
    fragment_faults,
    fragment_precheck,
)
from orchestrator.evidence.bulk import gc_paused
from orchestrator.evidence.compact import Held
from orchestrator.evidence.jsonread import MAX_FILE_BYTES, JsonFault, compact_objects, loads, read_bytes, read_chunks
from orchestrator.evidence.markers import Content
from orchestrator.evidence.numbers import integral_as_int
from orchestrator.records import Execution, Rollout

__all__ = ["WITHHELD", "Evidence", "Witness", "read_witness", "scope_of", "withheld"]


_FMT = "probe-witness/v1"
# Why a body is not in the witness (probe-witness/v1 `<field>_withheld`): a check comparing it reads it as unavailable.
WITHHELD = "only its size and sha256 are in the witness (the witness reached its byte budget)"
_EVENT_KINDS = frozenset({"start", "attempt", "tool_call", "tool_result_seen", "marker", "violation", "egress", "end"})
# Bytes at which str.splitlines() or str.strip() of the decoded text would act and bytes.splitlines()/strip() not.
_STR_ONLY_BREAKS = b"\x0b\x0c\x1c\x1d\x1e\x1f"
_STR_ONLY_BREAKS_EACH = [bytes([b]) for b in _STR_ONLY_BREAKS]
_BATCH = 256  # witness lines read and checked together: small enough to stay in the CPU caches
_PIECE = 1 << 20  # bytes of the witness read at a time
MAX_FAULT_LINES = 100  # faults described one by one; past them, lines with a fault are only counted


def withheld(event: dict[str, Any], field: str) -> bool:
    """Whether the witness holds `field` of `event` as size and sha256 only (past the proxy's witness budget)."""
    return f"{field}_withheld" in event


def _arrival(attempt_id: str) -> tuple[int, str]:
    number = attempt_id.rpartition("-")[2]
    # ASCII digits only, and few enough for int(): str.isdigit also takes "²", and int() refuses it and numbers past
    # 4,300 digits. Any other id sorts after every `attempt-<n>`.
    if number.isascii() and number.isdigit() and len(number) <= 18:
        return int(number), attempt_id
    return 1 << 62, attempt_id


# Deliveries (proxy_addons/delivery_*.py) after which no tool result ever comes back to the model.
NO_RESULT_DELIVERIES = frozenset({"python_blocks"})


def scope_of(scenario: dict[str, Any], execution: Execution | None = None) -> dict[str, bool]:
    """The declared scope, plus `terminal_error` for scenarios whose expected outcome is an error, `retry_wait` for
    scenarios whose faults ask the harness to wait before it retries (a Retry-After above 0, a quota), `exited` when
    the harness process ended on its own (its exit status can be judged), and `tool_ids`.

    `tool_ids` is false when the harness profile (written into the played scenario by the orchestrator, from the
    adapter) delivers steps as text (`harness_profile.delivery`, e.g. Terminus 2's keystrokes): the model then
    sends commands, not tool calls, so no call id, name or exit status crosses the wire to be joined on.
    `tool_results` is false for a delivery whose harness never sends back what a step printed (SciCode's python
    blocks run, if at all, after its last request).
    """
    scope = dict(scenario["scope"])
    scope["terminal_error"] = scenario.get("expected", {}).get("outcome") == "error"
    scope["retry_wait"] = any(_asks_to_wait(f) for f in scenario.get("faults") or [])
    scope["exited"] = execution is not None and execution.get("status") == "exited"
    scope["args_cut"] = any(f.get("kind") == "args_truncated" for f in scenario.get("faults") or [])
    delivery = (scenario.get("harness_profile") or {}).get("delivery")
    scope["tool_ids"] = not delivery
    scope["tool_results"] = delivery not in NO_RESULT_DELIVERIES
    return scope


def _asks_to_wait(fault: dict[str, Any]) -> bool:
    if fault.get("kind") == "quota":
        return True
    return any(isinstance(fault.get(k), int | float) and fault[k] > 0 for k in ("retry_after", "retry_after_ms"))


class Witness:
    """The witness events, indexed once: checks look calls up by id many times on large witnesses."""

    def __init__(self, events: list[dict[str, Any]]) -> None:
        self.events = events
        self._by_kind: dict[str, list[dict[str, Any]]] = {}
        for e in events:
            self._by_kind.setdefault(e["event"], []).append(e)
        # An attempt is written when it ends, so a withheld one can come late: order by arrival.
        self._attempts = sorted(self._by_kind.get("attempt", []), key=lambda e: _arrival(e["attempt_id"]))
        # Issued: the calls of replies delivered whole, unaltered by a fault (a reply a fault altered issued none).
        delivered = {
            a["attempt_id"] for a in self._attempts if a.get("ended") == "complete" and a.get("fault") not in NOT_ISSUED
        }
        calls = self._by_kind.get("tool_call", [])
        self._tool_calls = [c for c in calls if c["attempt_id"] in delivered and not c.get("malformed")]
        self._malformed = [c for c in calls if c.get("malformed")]
        self._results: dict[str, list[dict[str, Any]]] = {}
        for r in self._by_kind.get("tool_result_seen", []):
            self._results.setdefault(r["tool_call_id"], []).append(r)
        self._markers: dict[str, list[dict[str, Any]]] = {}
        self._of_kind: dict[str | None, list[dict[str, Any]]] = {}
        for m in self._by_kind.get("marker", []):
            self._markers.setdefault(m["tool_call_id"], []).append(m)

    def of(self, kind: str) -> Iterator[dict[str, Any]]:
        return iter(self._by_kind.get(kind, []))

    def attempts(self, kind: str | None = "model") -> list[dict[str, Any]]:
        """Attempts in arrival order, of one kind (`model`, `auxiliary`, `rejected`) or all (None).

        One list per kind, made on first use and shared by every caller (do not modify it): twenty checks read
        the attempts of a 100,000-call witness.
        """
        found = self._of_kind.get(kind)
        if found is None:
            found = self._of_kind[kind] = [a for a in self._attempts if kind is None or a["kind"] == kind]
        return found

    def tool_calls(self) -> list[dict[str, Any]]:
        """Tool calls the harness really received: those of replies that were delivered whole."""
        return list(self._tool_calls)

    def malformed_calls(self) -> list[dict[str, Any]]:
        """Tool calls whose arguments a fault cut off (never issued; running one is a finding)."""
        return list(self._malformed)

    def results_seen(self, call_id: str) -> list[dict[str, Any]]:
        return self._results.get(call_id, [])

    def markers(self, call_id: str) -> list[dict[str, Any]]:
        return self._markers.get(call_id, [])

    def final_reply(self) -> dict[str, Any] | None:
        """The scripted reply that carried the final answer and reached the harness whole (no fault altered it)."""
        for a in reversed(self._attempts):
            if (
                a["kind"] == "model"
                and a.get("reply_kind") == "final_answer"
                and a.get("ended") == "complete"
                and not a.get("fault")
            ):
                return a
        return None

    @staticmethod
    def answer_of(reply: dict[str, Any]) -> str | None:
        answer = reply.get("answer")
        return answer if isinstance(answer, str) else None


def read_witness(path: Path, max_bytes: int = MAX_FILE_BYTES, held: Held | None = None) -> Witness:
    """Parse and validate witness.jsonl line by line; every fault is named `line N: $.path`.

    `max_bytes`: the largest file read (a run collecting under a higher byte cap reads what it collected).
    `held`: what the episode's other evidence already holds (the rollout's strings), shared with the witness."""
    with gc_paused():  # hundreds of thousands of small dicts: no quadratic GC walks while they are built
        return _read_witness(path, max_bytes, held)


def _lines(raw: bytes) -> Sequence[str | bytes]:
    # The proxy writes ASCII lines: split as bytes, they are the very lines of the decoded text, and reading
    # bytes spares a decode and an encode per line. Anything else is split as text, as it always was.
    if raw.isascii() and not any(raw.find(b) >= 0 for b in _STR_ONLY_BREAKS_EACH):
        return raw.splitlines()
    return raw.decode("utf-8", errors="replace").splitlines()


class _NotProxyText(Exception):
    """The witness holds a byte the proxy never writes (non-ASCII, a break only str.splitlines sees)."""


def _proxy_lines(path: Path, max_bytes: int) -> Iterator[list[bytes]]:
    """The witness's lines, a piece of the file at a time: as `_lines` splits them when the whole text is the
    proxy's ASCII, without the whole text or all its lines in memory at once (hundreds of MB on a large witness)."""
    carry: list[bytes] = []  # the start of a line a piece ended in
    for piece in read_chunks(path, max_bytes, _PIECE):
        if not piece.isascii() or any(b in piece for b in _STR_ONLY_BREAKS_EACH):
            raise _NotProxyText
        end = piece.rfind(b"\n") + 1
        if end == 0:
            carry.append(piece)
            continue
        # Cut right after a newline, so a \r\n is never split: the lines are those of the whole text.
        yield b"".join([*carry, piece[:end]]).splitlines()
        carry = [piece[end:]]
    last = b"".join(carry)
    if last:
        yield last.splitlines()


def _as_proxy_wrote(lines: Iterable[str | bytes], held: Held | None = None) -> list[dict[str, Any]] | None:
    """The events, when every line is as the proxy writes it (orjson's compact form) and valid; None when any is not.

    What the line-by-line reading below would give, at less cost: the lines are read by `compact_objects` (what
    `loads` reads from such lines) and the events of each kind are pre-checked in one call, a batch at a time
    (each pass over a batch finds it still in the CPU's caches). Anything else (a fault to name, a line to read
    strictly, a blank line the proxy never writes) is left to the reading below, which then decides alone.
    """
    held = held or Held()
    events: list[dict[str, Any]] = []
    prechecks = {kind: fragment_batch_precheck(_FMT, f"/$defs/{kind}") for kind in _EVENT_KINDS}
    at, each = 0, iter(lines)
    while read := list(islice(each, _BATCH)):
        batch = compact_objects(read)  # type: ignore[arg-type]  # text lines are refused there
        if batch is None:
            return None
        try:
            kinds: list[Any] = list(map(dict.get, batch, repeat("event")))
            if not _EVENT_KINDS.issuperset(kinds):
                return None
        except TypeError:  # an unhashable kind
            return None
        if list(map(dict.get, batch, repeat("seq"))) != list(range(at, at + len(batch))):
            return None
        for kind in set(kinds):
            # Only the strings of _EVENT_KINDS are left: each equals its own kind and no other value.
            if not prechecks[kind](list(compress(batch, map(kind.__eq__, kinds)))):
                return None
        # Held compactly as they come (a 300,000-event witness takes 350 MiB as plain dicts, about half as held), so
        # the plain batch's memory is taken again by the next, and each pass over it finds it in the CPU's caches.
        batch = held.hold(kinds, batch)
        held.at("arguments", [(e, "arguments") for e in batch if type(e.get("arguments")) is dict])
        events += batch
        at += len(batch)
    if events and events[0].get("event") != "start":
        return None
    return events


def _read_witness(path: Path, max_bytes: int, held: Held | None) -> Witness:
    try:
        try:
            written = _as_proxy_wrote(chain.from_iterable(_proxy_lines(path, max_bytes)), held)
        except _NotProxyText:
            written = None
        if written is not None:
            # Lines in the proxy's own form, whose integers it writes as ints: a look at every event's integer fields
            # would cost about a second on a 400,000-line witness, so only the attempts are looked at, whose numbers
            # (status, usage) checks test for int. Any other text is read below, where every integer position is.
            integral_as_int([e for e in written if e["event"] == "attempt"], _FMT, "/$defs/attempt")
            return Witness(written)
        # Read again, whole: the strict reading below names each fault by its line.
        raw = read_bytes(path, max_bytes)
    except FileNotFoundError:
        raise FormatError(str(path), [Fault("$", "file does not exist")]) from None
    except JsonFault as exc:
        raise FormatError(str(path), [Fault("$", str(exc))]) from None
    lines = _lines(raw)
    del raw  # the lines hold the text: one copy of a witness of 100 MB is enough
    events: list[dict[str, Any]] = []
    found: list[Fault] = []
    # Validating against the one branch the line's `event` names (rather than trying every branch of the oneOf)
    # gives the same verdict with clearer faults, at a fraction of the cost on large witnesses.
    prechecks = {kind: fragment_precheck(_FMT, f"/$defs/{kind}") for kind in _EVENT_KINDS}
    listed = unlisted = 0  # lines with a fault described; those past the first MAX_FAULT_LINES, only counted
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        # A fault's text can quote its whole line, once per branch of the schema: past the first lines with a fault,
        # thousands more would hold gigabytes of text that no one reads, so they are only counted.
        listing = listed < MAX_FAULT_LINES
        line_faults: list[Fault] = []
        try:
            event = loads(line)
        except JsonFault as exc:
            line_faults.append(Fault(f"line {n}: $", str(exc)))
        else:
            kind = event.get("event") if isinstance(event, dict) else None
            precheck = prechecks.get(kind) if isinstance(kind, str) else None
            # The exact pre-check passes valid lines; jsonschema judges (and names the faults of) the others.
            if precheck is None or not precheck(event, True):
                described = (
                    (
                        fragment_faults(event, _FMT, f"/$defs/{kind}", "$", parsed=True)
                        if precheck is not None
                        else faults(event, _FMT, parsed=True)
                    )
                    if listing
                    else [Fault("$", "not a witness event")]
                )
                line_faults.extend(Fault(f"line {n}: {f.path}", f.message) for f in described)
            if isinstance(event, dict):
                if event.get("seq") != len(events):
                    line_faults.append(Fault(f"line {n}: $.seq", f"expected {len(events)}, got {event.get('seq')!r}"))
                events.append(event)
        if line_faults and listing:
            found.extend(line_faults)
            listed += 1
        elif line_faults:
            unlisted += 1
    del lines
    if unlisted:
        found.append(Fault("$", f"and {unlisted} more lines with faults, not listed"))
    if events and events[0].get("event") != "start":
        found.append(Fault("line 1: $.event", "the first event must be `start`"))
    if found:
        raise FormatError(str(path), found)
    # 429.0 or 4.29E2 where the schema says integer is the integer 429 to the schema: to the checks too.
    return Witness(integral_as_int(events, _FMT))


@dataclass
class Evidence:
    """One episode's inputs; an input that could not be read is None with the reason kept."""

    scenario: dict[str, Any]
    # Typed as what it claims to be: a harness's rollout is read unvalidated, and the schema checks judge it.
    rollout: Rollout | None = None
    witness: Witness | None = None
    markers: dict[str, Content] = field(default_factory=dict)  # marker file name -> content, as collected
    execution: Execution | None = None  # scenario_result's execution record: read only by process checks
    # The same scenario played over the other transport (`run --compare-stream`, the episode's twin/ folder): read
    # only by transport.parity. None when there is no twin; an unreadable one is named in `errors`.
    twin_rollout: Rollout | None = None
    twin_witness: Witness | None = None
    # The rollout was read from JSON text as it was (JSON types only, no tuple): its schema pre-checks need not look.
    rollout_parsed: bool = False
    errors: dict[str, str] = field(default_factory=dict)  # input name -> why it is unavailable
    # What checks derive from the inputs and share (the call join), kept with the inputs it was derived from.
    derived: dict[str, tuple[Any, Any, Any]] = field(default_factory=dict, repr=False, compare=False)

    def unavailable(self, name: str) -> str | None:
        if getattr(self, name) is None:
            return self.errors.get(name, f"no {name}")
        return None

    @property
    def r(self) -> dict[str, Any]:
        """The rollout as checks read it: untyped, since a harness's rollout is hostile input until the schema
        checks passed, and each check reads it defensively."""
        assert self.rollout is not None
        return cast(dict[str, Any], self.rollout)

    @property
    def w(self) -> Witness:
        assert self.witness is not None
        return self.witness
