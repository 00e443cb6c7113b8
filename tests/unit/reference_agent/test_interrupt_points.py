"""SIGTERM is honoured wherever the model call happens to be: the agent records it and exits, never hangs.

A SIGTERM turned into an exception at an arbitrary line of httpcore can leave its connection pool's lock held,
and httpcore's own clean-up then waits on that lock forever; seen in CI as an agent alive 20 s after SIGTERM.
Each case here sends SIGTERM from inside the model call, at a line where that exception would do harm.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.reference_agent.fake_provider import Reply, completion, serve
from tests.unit.reference_agent.helpers import REFERENCE_DIR, validate

# The real CLI in a fresh interpreter. Once the model call has begun, the first time the line given as
# "<file suffix>:<function>:<line offset in it>" is reached, the process sends itself SIGTERM.
DRIVER = """
import os, signal, sys
target_file, target_name, offset = sys.argv[1].split(":")
sys.argv[1:2] = []
import probe_reference.attempts as attempts

armed = attempts.ObservingClient._on_request


def on_request(self, request):
    armed(self, request)
    sys.monitoring.set_events(TOOL, sys.monitoring.events.LINE)  # from here only: imports stay fast


attempts.ObservingClient._on_request = on_request
TOOL = 3
sys.monitoring.use_tool_id(TOOL, "sigterm-at")


def on_line(code, line):
    if not (code.co_filename.endswith(target_file) and code.co_qualname == target_name):
        return None
    if line != code.co_firstlineno + int(offset):
        return None
    sys.monitoring.set_events(TOOL, 0)
    os.kill(os.getpid(), signal.SIGTERM)
    return None


sys.monitoring.register_callback(TOOL, sys.monitoring.events.LINE, on_line)
from probe_reference.cli import main

sys.exit(main(sys.argv[1:]))
"""

# (file, function, line offset from its `def`): just after a lock is taken, inside the request's own code.
POINTS = [
    # After ThreadLock.__enter__ took the lock and before `with` holds it: a raise here leaks the lock.
    ("httpcore/_synchronization.py", "ThreadLock.__enter__", 2),
    # The name lookup inside the connect.
    ("socket.py", "getaddrinfo", 16),
    # Inside the pool, between assigning the request and waiting for its connection.
    ("httpcore/_sync/connection_pool.py", "ConnectionPool.handle_request", 33),
]


@pytest.mark.skipif(sys.version_info < (3, 12), reason="needs sys.monitoring (Python 3.12)")
@pytest.mark.parametrize("point", POINTS, ids=[p[1] for p in POINTS])
def test_sigterm_at_a_line_inside_the_model_call_is_recorded(tmp_path: Path, point: tuple[str, str, int]) -> None:
    rollout_path = tmp_path / "rollout.json"
    slow = Reply(status=200, body=completion("chatcmpl-never", content="late").body, delay_s=60)
    with serve([slow]) as provider:
        argv = ["--task", "t", "--rollout", str(rollout_path), "--api-key", "k", "--base-url", provider.url]
        proc = subprocess.Popen(
            [sys.executable, "-c", DRIVER, ":".join(map(str, point)), *argv],
            stderr=subprocess.PIPE,
            env={"PYTHONPATH": str(REFERENCE_DIR), "PATH": "/usr/bin:/bin", "PYTHONFAULTHANDLER": "1"},
        )
        try:
            _, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)  # faulthandler prints where it waits
            _, err = proc.communicate(timeout=10)
            pytest.fail(f"alive 30 s after SIGTERM:\n{err.decode(errors='replace')}")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == 143, err.decode(errors="replace")
    assert b"terminated: received SIGTERM" in err
    rollout = json.loads(rollout_path.read_text())
    validate(rollout)
    (call,) = rollout["model_calls"]
    assert (call["status_code"], call["error_category"]) == (None, "interrupted")
    assert rollout["outcome"]["failure_kind"] == "interrupted"
