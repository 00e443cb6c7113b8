"""The reference agent's honest compaction: near the window it summarizes, keeps the last exchange, and says so."""

from __future__ import annotations

import json
from pathlib import Path

from tests.unit.reference_agent.fake_provider import Reply, completion, serve, usage
from tests.unit.reference_agent.helpers import run_agent

WINDOW = 1000
NEAR = usage(950, 5)  # 95 % of the window: past the 90 % threshold
TOOL = ("bash", json.dumps({"command": "printf hi"}))


def _script() -> list[Reply]:
    return [
        completion("r-1", tool_calls=[("c-1", *TOOL)], usage=NEAR),
        completion("r-2", tool_calls=[("c-2", *TOOL)], usage=NEAR),
        completion("r-sum", content="ran printf twice", usage=usage(40, 4)),
        completion("r-3", content="done", usage=NEAR),
    ]


def test_near_the_window_it_summarizes_without_tools_and_records_the_compaction(tmp_path: Path) -> None:
    with serve(_script()) as provider:
        provider.models["probe-model"] = {"id": "probe-model", "object": "model", "context_length": WINDOW}
        code, rollout = run_agent(provider.url, tmp_path)
    assert code == 0 and provider.remaining == 0 and provider.violations == []
    summary_request = provider.received[2].body
    assert "tools" not in summary_request and "Summarize" in summary_request["messages"][-1]["content"]
    # After the summary: system, task, the summary in place of the first exchange, then the last exchange.
    after = provider.received[3].body["messages"]
    assert [m["role"] for m in after] == ["system", "user", "user", "assistant", "tool"]
    assert after[2]["content"].endswith("ran printf twice") and after[4]["tool_call_id"] == "c-2"
    [compaction] = rollout["compactions"]
    assert compaction["step_no"] == 3 and compaction["model_call_refs"] == ["mc-3"]
    # The summarization call is owned by the invocation but belongs to no step.
    assert "mc-3" in rollout["invocations"][0]["model_call_refs"]
    assert [s["model_call_refs"] for s in rollout["steps"]] == [["mc-1"], ["mc-2"], ["mc-4"]]


def test_without_a_known_window_it_never_compacts(tmp_path: Path) -> None:
    script = _script()
    del script[2]
    with serve(script) as provider:
        code, rollout = run_agent(provider.url, tmp_path)
    assert code == 0 and provider.remaining == 0
    assert "compactions" not in rollout
    assert all("tools" in r.body for r in provider.received)
