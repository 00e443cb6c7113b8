"""The OpenTelemetry file reader and the GenAI conventions read from it: the JS SDK's objects as Gemini CLI writes them
(real captures), OTLP's JSON encoding, and files a harness left broken. No network, no collector."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.harnesses.otel import operations, read_export, token_usage_totals, tool_executions
from tests.unit.harnesses.captured import captured, materialize

TELEMETRY = Path("native/.gemini-probe/telemetry.log")


def _capture(tmp_path: Path, name: str) -> Path:
    return materialize("gemini-cli", name, tmp_path / name).root / TELEMETRY


def test_a_real_gemini_cli_export_reads_whole(tmp_path: Path) -> None:
    telemetry = read_export(_capture(tmp_path, "retry_429"))
    assert telemetry.problems == []
    events = {r.event for r in telemetry.logs}
    assert {"gemini_cli.api_request", "gemini_cli.api_error", "gemini_cli.api_response"} <= events
    assert "gen_ai.client.inference.operation.details" in events
    assert all(r.time and r.time.endswith("Z") for r in telemetry.logs)
    assert {s.name for s in telemetry.spans} >= {"llm_call", "tool_call"}
    assert telemetry.exports >= 1 and telemetry.points


def test_genai_operations_are_the_ended_inferences_only(tmp_path: Path) -> None:
    telemetry = read_export(_capture(tmp_path, "retry_429"))
    ops = operations(telemetry)
    requests = [
        r for r in telemetry.events("gen_ai.client.inference.operation.details") if r.body and "request" in str(r.body)
    ]
    assert requests and len(ops) == len(telemetry.events("gen_ai.client.inference.operation.details")) - len(requests)
    replies = [o for o in ops if o.response_id]
    assert len(replies) == 3 and all(o.finish_reasons and o.finish_reasons[-1] == "stop" for o in replies)
    # Gemini CLI writes the GenAI output count as the candidates' alone: the thoughts are not in it.
    assert [o.output_tokens for o in replies] == [7, 8, 9]
    # It names Google's host whatever base URL it was given: the requests went to the probe's proxy.
    assert {o.server_address for o in ops} == {"generativelanguage.googleapis.com"}


def test_tool_executions_carry_gemini_clis_prefixed_call_ids(tmp_path: Path) -> None:
    executions = tool_executions(read_export(_capture(tmp_path, "tool_failure")))
    assert len(executions) == 2
    assert all(
        x.name == "run_shell_command" and (x.call_id or "").startswith("run_shell_command__fc_") for x in executions
    )
    assert all(x.start and x.end and x.start <= x.end for x in executions)


def test_token_usage_totals_are_the_last_exports(tmp_path: Path) -> None:
    telemetry = read_export(_capture(tmp_path, "tool_success"))
    assert token_usage_totals(telemetry) == {"input": 100 + 110 + 120, "output": 5 + 6 + 7}


OTLP = {
    "resourceLogs": [
        {
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "codex"}}]},
            "scopeLogs": [
                {
                    "logRecords": [
                        {
                            "timeUnixNano": "1796526013964000000",
                            "eventName": "gen_ai.client.inference.operation.details",
                            "body": {"stringValue": "done"},
                            "traceId": "ab",
                            "spanId": "cd",
                            "attributes": [
                                {"key": "gen_ai.response.id", "value": {"stringValue": "resp_1"}},
                                {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "120"}},
                                {"key": "gen_ai.usage.output_tokens", "value": {"intValue": "7"}},
                                {
                                    "key": "gen_ai.response.finish_reasons",
                                    "value": {"arrayValue": {"values": [{"stringValue": "stop"}]}},
                                },
                            ],
                        }
                    ]
                }
            ],
        }
    ],
}
OTLP_SPANS = {
    "resourceSpans": [
        {
            "scopeSpans": [
                {
                    "spans": [
                        {
                            "traceId": "ab",
                            "spanId": "ef",
                            "parentSpanId": "cd",
                            "name": "execute_tool bash",
                            "startTimeUnixNano": "1796526014000000000",
                            "endTimeUnixNano": "1796526014250000000",
                            "status": {"code": 2},
                            "attributes": [
                                {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                                {"key": "gen_ai.tool.call.id", "value": {"stringValue": "call_1"}},
                                {"key": "gen_ai.tool.name", "value": {"stringValue": "bash"}},
                            ],
                        }
                    ]
                }
            ]
        }
    ]
}
OTLP_METRICS = {
    "resourceMetrics": [
        {
            "scopeMetrics": [
                {
                    "metrics": [
                        {
                            "name": "gen_ai.client.token.usage",
                            "histogram": {
                                "dataPoints": [
                                    {
                                        "attributes": [{"key": "gen_ai.token.type", "value": {"stringValue": "input"}}],
                                        "count": "2",
                                        "sum": 230,
                                        "timeUnixNano": "1796526015000000000",
                                    }
                                ]
                            },
                        }
                    ]
                }
            ]
        }
    ]
}


def test_otlp_json_lines_read_as_the_same_records(tmp_path: Path) -> None:
    path = tmp_path / "otlp.jsonl"
    path.write_text("\n".join(json.dumps(v) for v in (OTLP, OTLP_SPANS, OTLP_METRICS)) + "\n")
    telemetry = read_export(path)
    assert telemetry.problems == []
    (op,) = operations(telemetry)
    assert (op.response_id, op.input_tokens, op.output_tokens, op.finish_reasons) == ("resp_1", 120, 7, ("stop",))
    assert op.time == "2026-12-06T03:00:13.964000Z"
    (tool,) = tool_executions(telemetry)
    assert (tool.call_id, tool.name, tool.ok) == ("call_1", "bash", False)
    assert token_usage_totals(telemetry) == {"input": 230}


def test_a_file_cut_mid_record_keeps_what_came_before(tmp_path: Path) -> None:
    whole = _capture(tmp_path, "tool_success").read_text()
    cut = tmp_path / "cut.log"
    cut.write_text(whole[: int(len(whole) * 0.6)])
    telemetry = read_export(cut)
    assert telemetry.logs and len(telemetry.problems) == 1 and "not JSON" in telemetry.problems[0]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"a": 1, "a": 2}\n', "not JSON"),  # a duplicate key: the strict reader refuses it
        ("[" * 200 + "]" * 200 + "\n", "not JSON"),  # nested past the reader's depth
        ("[1, 2]\n", "not an object"),
        ('{"something": "else"}\n', "neither a log record"),
        ("\ufffd\ufffd not json at all\n", "not JSON"),
    ],
)
def test_hostile_values_are_named_problems_never_errors(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "t.log"
    path.write_text(text)
    telemetry = read_export(path)
    assert telemetry.logs == [] and problem in telemetry.problems[0]


def test_a_missing_or_linked_file_is_a_problem(tmp_path: Path) -> None:
    assert "t.log" in read_export(tmp_path / "t.log").problems[0]
    (tmp_path / "real").write_text(json.dumps(OTLP))
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert read_export(tmp_path / "link").problems


def test_every_capture_reads_without_problems(tmp_path: Path) -> None:
    for name in captured("gemini-cli"):
        path = materialize("gemini-cli", name, tmp_path / name).root / TELEMETRY
        if path.is_file():
            assert read_export(path).problems == [], name
