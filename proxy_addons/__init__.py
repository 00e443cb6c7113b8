"""The scripted-provider mitmproxy addon package: plays the model provider and writes the witness."""

from __future__ import annotations

# Recorded in every witness `start` event so a witness names the addon build that wrote it.
__version__ = "0.2.0"
