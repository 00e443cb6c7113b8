"""harness-probe: does this harness, pinned at this version, tell the truth about what it did?"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
