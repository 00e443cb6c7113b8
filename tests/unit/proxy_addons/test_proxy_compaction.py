"""The context-compaction play: usage near the declared window on scripted replies, the window where asked."""

from __future__ import annotations

from conftest import (
    BASH_TOOL,
    MakeProvider,
    Provider,
    chat_body,
    execute_tool_calls,
    response_json,
    tool_success_scenario,
)
from mitmproxy import http

from proxy_addons.compaction import NEAR_WINDOW

USER = {"role": "user", "content": "Run the shell commands you are asked to run."}
WINDOW = 200_000
PATH = "/v1/chat/completions"


def test_scripted_replies_report_usage_near_the_window_and_stay_distinct(make_provider: MakeProvider) -> None:
    provider = make_provider(context_window=WINDOW)
    reply = response_json(provider.send("POST", "/v1/chat/completions", chat_body([USER], [BASH_TOOL])))
    usage = reply["usage"]
    near = int(WINDOW * NEAR_WINDOW)
    # The plain per-attempt usage (prompt 100 for attempt 0), lifted to just under the window.
    assert usage["prompt_tokens"] == near + 100 < WINDOW
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    [attempt] = provider.events("attempt")
    assert attempt["usage"]["prompt"] == near + 100


def test_models_endpoint_reports_the_window_in_both_shapes(make_provider: MakeProvider) -> None:
    provider = make_provider(context_window=WINDOW)
    entry = response_json(provider.send("GET", "/v1/models/probe-model"))
    assert (entry["context_length"], entry["context_window"], entry["max_model_len"]) == (WINDOW,) * 3
    listing = response_json(provider.send("GET", "/v1/models"))
    assert listing["data"][0]["context_length"] == WINDOW
    anthropic = response_json(provider.send("GET", "/v1/models/probe-model", headers={"anthropic-version": "1"}))
    assert anthropic["max_input_tokens"] == WINDOW and "context_length" not in anthropic


def test_without_a_window_nothing_changes(make_provider: MakeProvider) -> None:
    provider = make_provider(tool_success_scenario())
    entry = response_json(provider.send("GET", "/v1/models/probe-model"))
    assert set(entry) == {"id", "object", "created", "owned_by"}
    reply = response_json(provider.send("POST", "/v1/chat/completions", chat_body([USER], [BASH_TOOL])))
    assert reply["usage"]["prompt_tokens"] == 100


def test_a_result_already_seen_may_be_compacted_away_but_never_skipped(make_provider: MakeProvider) -> None:
    provider = make_provider(context_window=WINDOW)
    first = execute_tool_calls(provider, response_json(provider.send("POST", PATH, chat_body([USER], [BASH_TOOL]))))
    second_reply = response_json(provider.send("POST", PATH, chat_body([USER, *first], [BASH_TOOL])))
    second = execute_tool_calls(provider, second_reply)
    # The first exchange replaced by a summary: its result was seen, so the next step is played.
    summary = {"role": "user", "content": "Summary: ran one command."}
    third = provider.send("POST", "/v1/chat/completions", chat_body([USER, summary, *second], [BASH_TOOL]))
    assert third.response is not None and third.response.status_code == 200
    # Until then every reply was near the window; the shortened history brings the usage down.
    assert second_reply["usage"]["prompt_tokens"] > WINDOW // 2
    assert response_json(third)["usage"]["prompt_tokens"] < WINDOW // 2


def test_without_a_window_a_dropped_result_is_refused(make_provider: MakeProvider) -> None:
    provider = make_provider(tool_success_scenario())
    first = execute_tool_calls(provider, response_json(provider.send("POST", PATH, chat_body([USER], [BASH_TOOL]))))
    second = execute_tool_calls(
        provider, response_json(provider.send("POST", PATH, chat_body([USER, *first], [BASH_TOOL])))
    )
    third = provider.send("POST", "/v1/chat/completions", chat_body([USER, *second], [BASH_TOOL]))
    assert third.response is not None and third.response.status_code == 409


def _summarize_then_continue(provider: Provider, run: bool, prompt: str) -> http.HTTPFlow:
    """OpenCode's order: the tool runs, the history (result included) goes into a side request, and the agent
    continues from that summary without ever sending the result back as a tool message."""
    reply = response_json(provider.send("POST", PATH, chat_body([USER], [BASH_TOOL])))
    if run:
        execute_tool_calls(provider, reply)
    side = provider.send("POST", PATH, chat_body([{"role": "user", "content": prompt}], []))
    assert side.response is not None and side.response.status_code == 200
    summary = {"role": "assistant", "content": "Ran one command."}
    resume = {"role": "user", "content": "Continue if you have next steps."}
    flow = provider.send("POST", PATH, chat_body([USER, summary, resume], [BASH_TOOL]))
    assert flow.response is not None
    return flow


def status(flow: http.HTTPFlow) -> int:
    assert flow.response is not None
    return flow.response.status_code


def test_a_result_summarized_after_its_command_ran_may_be_left_out(make_provider: MakeProvider) -> None:
    provider = make_provider(context_window=WINDOW)
    flow = _summarize_then_continue(provider, True, "Create a summary of the conversation so far.")
    assert status(flow) == 200
    assert [e["present"] for e in provider.events("marker")] == [True]
    # Compacted: the history is short again, and so is the usage the next reply reports.
    assert response_json(flow)["usage"]["prompt_tokens"] < WINDOW // 2


def test_a_summary_does_not_excuse_a_command_that_never_ran(make_provider: MakeProvider) -> None:
    provider = make_provider(context_window=WINDOW)
    assert status(_summarize_then_continue(provider, False, "Create a summary of the conversation so far.")) == 409
    assert [v["code"] for v in provider.events("violation")] == ["tool_result_missing"]


def test_a_side_request_that_is_no_summary_excuses_nothing(make_provider: MakeProvider) -> None:
    provider = make_provider(context_window=WINDOW)
    assert status(_summarize_then_continue(provider, True, "Generate a short title for this session.")) == 409


SUMMARY_PROMPT = "Please create a detailed summary of the conversation so far."


def test_a_summary_request_that_keeps_its_tools_is_a_side_request(make_provider: MakeProvider) -> None:
    """Copilot CLI's order: its compaction request repeats the history (tools still advertised) and closes it with
    a user message asking for a summary, while the agent loop sends its own next request beside it."""
    provider = make_provider(context_window=WINDOW)
    first = execute_tool_calls(provider, response_json(provider.send("POST", PATH, chat_body([USER], [BASH_TOOL]))))
    ask = {"role": "user", "content": SUMMARY_PROMPT}
    side = provider.send("POST", PATH, chat_body([USER, *first, ask], [BASH_TOOL]))
    assert response_json(side)["choices"][0]["message"] == {"role": "assistant", "content": "Probe session"}
    loop = provider.send("POST", PATH, chat_body([USER, *first], [BASH_TOOL]))
    assert status(loop) == 200 and response_json(loop)["choices"][0]["message"]["tool_calls"]
    assert [a["kind"] for a in provider.events("attempt")] == ["model", "auxiliary", "model"]
    # Compacted: the loop's reply reports the plain usage of its attempt, no longer near the window.
    assert response_json(loop)["usage"]["prompt_tokens"] < WINDOW // 2


def test_a_history_opening_with_its_summary_is_the_agent_loop(make_provider: MakeProvider) -> None:
    # After compaction Copilot starts over from one user message holding the summary: no turn precedes it.
    provider = make_provider(context_window=WINDOW)
    first = execute_tool_calls(provider, response_json(provider.send("POST", PATH, chat_body([USER], [BASH_TOOL]))))
    provider.send("POST", PATH, chat_body([USER, *first, {"role": "user", "content": SUMMARY_PROMPT}], [BASH_TOOL]))
    resumed = {"role": "user", "content": "Some of the conversation history has been summarized. " + USER["content"]}
    flow = provider.send("POST", PATH, chat_body([resumed], [BASH_TOOL]))
    assert status(flow) == 200
    assert [a["kind"] for a in provider.events("attempt")] == ["model", "auxiliary", "model"]


def test_a_closing_summary_prompt_outside_compaction_scenarios_plays_the_script(make_provider: MakeProvider) -> None:
    provider = make_provider(tool_success_scenario())
    first = execute_tool_calls(provider, response_json(provider.send("POST", PATH, chat_body([USER], [BASH_TOOL]))))
    flow = provider.send(
        "POST", PATH, chat_body([USER, *first, {"role": "user", "content": SUMMARY_PROMPT}], [BASH_TOOL])
    )
    assert [a["kind"] for a in provider.events("attempt")] == ["model", "model"] and status(flow) == 200


def test_a_loop_message_that_only_mentions_summarizing_is_the_agent_loop(make_provider: MakeProvider) -> None:
    # NOOA closes each loop request with a user message of context notes that advise summarizing older work.
    provider = make_provider(context_window=WINDOW)
    first = execute_tool_calls(provider, response_json(provider.send("POST", PATH, chat_body([USER], [BASH_TOOL]))))
    notes = {"role": "user", "content": "If event history is taking too much space, summarize older work."}
    flow = provider.send("POST", PATH, chat_body([USER, *first, notes], [BASH_TOOL]))
    assert status(flow) == 200 and response_json(flow)["choices"][0]["message"]["tool_calls"]
    assert [a["kind"] for a in provider.events("attempt")] == ["model", "model"]
