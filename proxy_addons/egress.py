"""The harness's resolver: `provider` resolves to the proxy, every other name is refused and witnessed as egress."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["QTYPE_A", "DnsAnswer", "answer_question", "own_address"]

QTYPE_A = 1
QTYPE_AAAA = 28
PROVIDER_NAMES = frozenset({"provider"})
LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class DnsAnswer:
    """What to answer: an IPv4 address, no record (NOERROR, so clients fall back to A), or NXDOMAIN."""

    address: str | None = None
    nxdomain: bool = False
    egress: bool = False  # the question was about a name other than the provider: witness it


def _bare(name: str) -> str:
    # Resolvers append search domains (`provider.example.internal`); the first label decides.
    return name.rstrip(".").lower()


def answer_question(name: str, qtype: int, own_ip: str) -> DnsAnswer:
    """Pure decision for one DNS question asked by the harness container."""
    bare = _bare(name)
    if bare in PROVIDER_NAMES or bare.split(".", 1)[0] in PROVIDER_NAMES:
        return DnsAnswer(address=own_ip) if qtype == QTYPE_A else DnsAnswer()
    return DnsAnswer(nxdomain=True, egress=True)


def own_address() -> str:
    """What `provider` must resolve to: the harness shares the proxy's network namespace, which has only loopback."""
    return LOOPBACK
