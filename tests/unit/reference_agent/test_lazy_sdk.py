"""The agent loads only the SDK of the protocol it speaks: importing both cost each episode ~1 s of CPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.reference_agent.fake_provider import (
    Reply,
    completion,
    json_reply,
    message_object,
    response_object,
    serve,
)
from tests.unit.reference_agent.helpers import REFERENCE_DIR

# The real CLI in a fresh interpreter (this test process has both SDKs loaded); prints the SDKs it loaded.
DRIVER = """
import json, sys
from probe_reference.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:  # --version
    code = exc.code
print(json.dumps({"code": code, "sdks": sorted(m for m in ("openai", "anthropic") if m in sys.modules)}))
"""


def _run_fresh(*argv: str) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(REFERENCE_DIR), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert proc.stdout.strip(), proc.stderr
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


REPLIES: dict[str, Reply] = {
    "chat": completion("chatcmpl-1", content="hi"),
    "responses": json_reply(200, response_object("resp_1", content="hi")),
    "messages": json_reply(200, message_object("msg_1", content="hi")),
}


@pytest.mark.parametrize(("protocol", "sdk"), [("chat", "openai"), ("responses", "openai"), ("messages", "anthropic")])
def test_only_the_protocols_sdk_is_loaded(tmp_path: Path, protocol: str, sdk: str) -> None:
    rollout = tmp_path / "rollout.json"
    with serve([REPLIES[protocol]]) as provider:
        base = provider.root if protocol == "messages" else provider.url
        argv = ["--task", "say hi", "--base-url", base, "--api-key", "sk-test", "--protocol", protocol]
        result = _run_fresh(*argv, "--rollout", str(rollout))
    assert result == {"code": 0, "sdks": [sdk]}
    assert json.loads(rollout.read_text())["outcome"]["final_answer"] == "hi"


def test_version_loads_no_sdk() -> None:
    assert _run_fresh("--version") == {"code": 0, "sdks": []}
