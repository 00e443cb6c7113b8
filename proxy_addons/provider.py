"""The mitmproxy addon: declares the `probe_*` options and adapts mitmproxy hooks to the interpreter."""

from __future__ import annotations

import logging
import sys
from typing import Any

from mitmproxy import ctx, exceptions, http

from proxy_addons import __version__
from proxy_addons.interpreter import IncomingRequest, Interpreter
from proxy_addons.scenario import ScenarioError, load_scenario
from proxy_addons.witness import WitnessRecorder, WitnessWriteError

logger = logging.getLogger(__name__)

OPTION_SCENARIO = "probe_scenario"
OPTION_WITNESS = "probe_witness"
OPTION_MARKERS = "probe_markers"
OPTIONS = frozenset({OPTION_SCENARIO, OPTION_WITNESS, OPTION_MARKERS})
DEFAULT_MARKERS = "/probe/markers"
# sysexits EX_IOERR: the orchestrator can tell "witness lost" from an ordinary proxy failure.
WITNESS_FAILURE_EXIT = 74


def _options_error(message: str) -> Exception:
    # mitmproxy's exception classes are untyped; one typed constructor keeps --strict quiet.
    return exceptions.OptionsError(message)  # type: ignore[no-untyped-call]


class ScriptedProvider:
    """Answers every request itself from the scenario; never dials upstream."""

    def __init__(self) -> None:
        self.interpreter: Interpreter | None = None
        self._active: tuple[str, str, str] | None = None
        self._fatal: str | None = None

    def load(self, loader: Any) -> None:
        loader.add_option(OPTION_SCENARIO, str, "", "Scenario JSON file the scripted provider plays.")
        loader.add_option(OPTION_WITNESS, str, "", "Witness JSONL file the scripted provider appends to.")
        loader.add_option(
            OPTION_MARKERS, str, DEFAULT_MARKERS, "Directory where scripted tool calls write marker files."
        )

    def configure(self, updated: set[str]) -> None:
        if not updated & OPTIONS:
            return
        scenario_path = str(ctx.options.probe_scenario)
        witness_path = str(ctx.options.probe_witness)
        markers_dir = str(ctx.options.probe_markers)
        config = (scenario_path, witness_path, markers_dir)
        if self.interpreter is not None and config == self._active:
            # mitmproxy re-sends the old values when it rolls back a failed update: keep playing.
            return
        if not scenario_path or not witness_path:
            # Not configured rather than misconfigured: an error log is what makes mitmdump abort at
            # startup, and raising here would mask the real error when mitmproxy rolls options back.
            self._close()
            logger.error("%s and %s are required; refusing all traffic", OPTION_SCENARIO, OPTION_WITNESS)
            return
        if not markers_dir.startswith("/"):
            # The command runs in another container; only an absolute path means the same place there.
            raise _options_error(f"{OPTION_MARKERS} must be an absolute path, got {markers_dir!r}")
        try:
            scenario = load_scenario(scenario_path)
        except ScenarioError as exc:
            raise _options_error(f"{OPTION_SCENARIO}: {exc}") from exc
        try:
            recorder = WitnessRecorder(witness_path)
        except WitnessWriteError as exc:
            raise _options_error(f"{OPTION_WITNESS}: {exc}") from exc
        interpreter = Interpreter(scenario, recorder, markers_dir)
        try:
            interpreter.start(__version__)
        except WitnessWriteError as exc:
            recorder.close()
            raise _options_error(f"{OPTION_WITNESS}: {exc}") from exc
        self._close()
        self.interpreter = interpreter
        self._active = config
        logger.info("playing scenario %s; witness %s", scenario.name, witness_path)

    def request(self, flow: http.HTTPFlow) -> None:
        interpreter = self.interpreter
        if self._fatal is not None or interpreter is None:
            # Nothing may be served that the witness does not hold.
            self._refuse(flow)
            return
        try:
            incoming = IncomingRequest(
                method=flow.request.method,
                path=flow.request.path,
                headers=tuple(flow.request.headers.fields),
                body=flow.request.get_content(strict=False) or b"",
                raw_body=flow.request.raw_content,
            )
            outgoing = interpreter.handle(incoming)
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
        flow.response = http.Response.make(outgoing.status, outgoing.body, dict(outgoing.headers))

    def done(self) -> None:
        interpreter = self.interpreter
        if interpreter is not None and self._fatal is None:
            try:
                interpreter.finish()
            except WitnessWriteError as exc:
                self._die(f"witness write failed: {exc}", shutdown=False)
        self._close()
        if self._fatal is not None:
            # Leave a non-zero exit status: a clean exit would pass off a truncated witness as whole.
            raise SystemExit(WITNESS_FAILURE_EXIT)

    def _close(self) -> None:
        if self.interpreter is not None:
            self.interpreter.recorder.close()
            self.interpreter = None
            self._active = None

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


addons = [ScriptedProvider()]
