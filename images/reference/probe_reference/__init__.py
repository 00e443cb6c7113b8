"""probe-reference: harness-probe's own small agent, honest by default, misreporting on request."""

from __future__ import annotations

__version__ = "0.1.0"
