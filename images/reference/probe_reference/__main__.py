"""Entry point for `python -m probe_reference`."""

from __future__ import annotations

from probe_reference.cli import main

raise SystemExit(main())
