"""The harness's resolver: only `provider` resolves; everything else is NXDOMAIN and witnessed."""

from __future__ import annotations

from proxy_addons.egress import QTYPE_A, DnsAnswer, answer_question

AAAA = 28


def test_provider_resolves_to_the_proxy_and_has_no_ipv6() -> None:
    assert answer_question("provider", QTYPE_A, "172.18.0.2") == DnsAnswer(address="172.18.0.2")
    assert answer_question("provider.", QTYPE_A, "10.0.0.9") == DnsAnswer(address="10.0.0.9")
    assert answer_question("provider.search.internal", QTYPE_A, "10.0.0.9").address == "10.0.0.9"
    assert answer_question("provider", AAAA, "10.0.0.9") == DnsAnswer()


def test_other_names_are_refused_and_witnessed() -> None:
    for name in ("api.openai.com", "telemetry.example.com.", "providers.example.com", "localhost"):
        decision = answer_question(name, QTYPE_A, "10.0.0.9")
        assert decision.nxdomain and decision.egress and decision.address is None, name
