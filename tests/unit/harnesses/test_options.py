"""Harness options as data: the mechanism (parse, defaults, named refusals) tested once, and every adapter's
declarations checked against it; `harnesses list` / `show` print what is declared."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.errors import BadOption, InputError
from orchestrator.harnesses import HARNESSES, get_harness, load_entry, registry
from orchestrator.harnesses.options import Choice, Flag, Integer, Text, parse_options

DECLARED = (
    Choice("protocol", ("chat", "responses"), "chat", "API"),
    Integer("retries", None, "retries", minimum=0),
    Integer("timeout", 15, "seconds", minimum=1, maximum=600),
    Flag("stream", False, "SSE"),
    Text("targets", None, "where"),
)


def test_defaults_stand_for_what_is_not_given() -> None:
    values = parse_options("h", DECLARED, {})
    assert values.as_dict() == {"protocol": "chat", "retries": None, "timeout": 15, "stream": False, "targets": None}


def test_given_values_are_typed() -> None:
    given = {"protocol": "responses", "retries": "0", "timeout": "600", "stream": "Yes", "targets": "a,b"}
    values = parse_options("h", DECLARED, given)
    assert (values.text("protocol"), values.optional_integer("retries"), values.integer("timeout")) == (
        "responses",
        0,
        600,
    )
    assert values.flag("stream") is True and values.optional_text("targets") == "a,b"


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"protocol": "messages"}, "harness 'h': option protocol='messages' is not one of: chat, responses"),
        ({"retries": "-1"}, "option retries='-1' is not a non-negative integer"),
        ({"retries": "²"}, "option retries='²' is not a non-negative integer"),
        ({"retries": " 3"}, "option retries=' 3' is not a non-negative integer"),
        ({"timeout": "0"}, "option timeout='0' is not an integer from 1 to 600"),
        ({"timeout": "601"}, "option timeout='601' is not an integer from 1 to 600"),
        ({"stream": "maybe"}, "option stream='maybe' is not true or false"),
        ({"colour": "red"}, "harness 'h' has no option(s) ['colour'] (known: protocol, retries, stream, targets"),
    ],
)
def test_every_bad_value_is_a_named_input_error_listing_what_is_allowed(given: dict[str, str], message: str) -> None:
    with pytest.raises(BadOption) as refused:
        parse_options("h", DECLARED, given)
    assert message in str(refused.value)
    assert isinstance(refused.value, InputError) and isinstance(refused.value, ValueError)


def test_a_default_outside_the_choices_is_a_bug_of_the_adapter() -> None:
    with pytest.raises(ValueError, match="default 'x' is not among its choices"):
        Choice("p", ("a", "b"), "x", "help")


@pytest.mark.parametrize("name", sorted(HARNESSES))
def test_every_builtin_declares_options_whose_defaults_parse(name: str) -> None:
    cls = load_entry(registry()[name])
    names = [o.name for o in cls.options_declared]
    assert len(names) == len(set(names)), names
    harness = get_harness(name)
    assert set(harness.settings.as_dict()) == set(names)
    for option in cls.options_declared:
        assert option.help, f"{name}: option {option.name} has no help"
        if option.default is not None:
            # The default, written as a user would, parses back to itself.
            assert option.parse(option.default_text(), name) == option.default


def test_show_prints_each_declared_option_with_type_default_and_choices() -> None:
    res = CliRunner().invoke(app, ["harnesses", "show", "pi"], terminal_width=200)
    assert res.exit_code == 0, res.output
    for text in ("protocol", "choice", "chat", "responses", "messages", "provider_retries", "unset", "int"):
        assert text in res.output
    assert "version command: pi --version" in res.output
    assert "image: images/pi" in res.output


def test_show_of_an_unknown_harness_is_a_named_input_error() -> None:
    res = CliRunner().invoke(app, ["harnesses", "show", "nope"])
    assert res.exit_code == 2
    assert "harness-probe: UnknownHarness: unknown harness 'nope' (known: " in res.output
