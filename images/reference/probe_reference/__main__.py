"""Entry point for `python -m probe_reference`."""

from __future__ import annotations

import os
import sys
import threading

from probe_reference.cli import main

code = main()
if threading.active_count() > 1:
    # An interrupted model call's worker is still inside the SDK (a daemon thread, abandoned on purpose). The
    # rollout is written: end here rather than in interpreter shutdown, which would have to get past that thread.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
raise SystemExit(code)
