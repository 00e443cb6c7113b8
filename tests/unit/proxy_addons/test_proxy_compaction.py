"""The context-compaction play: usage near the declared window on scripted replies, the window where asked."""

from __future__ import annotations

from conftest import BASH_TOOL, MakeProvider, chat_body, execute_tool_calls, response_json, tool_success_scenario

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
    second = execute_tool_calls(
        provider, response_json(provider.send("POST", PATH, chat_body([USER, *first], [BASH_TOOL])))
    )
    # The first exchange replaced by a summary: its result was seen, so the next step is played.
    summary = {"role": "user", "content": "Summary: ran one command."}
    third = provider.send("POST", "/v1/chat/completions", chat_body([USER, summary, *second], [BASH_TOOL]))
    assert third.response is not None and third.response.status_code == 200


def test_without_a_window_a_dropped_result_is_refused(make_provider: MakeProvider) -> None:
    provider = make_provider(tool_success_scenario())
    first = execute_tool_calls(provider, response_json(provider.send("POST", PATH, chat_body([USER], [BASH_TOOL]))))
    second = execute_tool_calls(
        provider, response_json(provider.send("POST", PATH, chat_body([USER, *first], [BASH_TOOL])))
    )
    third = provider.send("POST", "/v1/chat/completions", chat_body([USER, *second], [BASH_TOOL]))
    assert third.response is not None and third.response.status_code == 409
