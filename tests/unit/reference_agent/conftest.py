"""Makes the reference agent importable (it lives in its image folder, not in the harness-probe package)."""

from __future__ import annotations

import sys
from pathlib import Path

REFERENCE_DIR = Path(__file__).resolve().parents[3] / "images" / "reference"

if str(REFERENCE_DIR) not in sys.path:
    sys.path.insert(0, str(REFERENCE_DIR))
