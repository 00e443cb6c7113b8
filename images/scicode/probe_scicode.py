"""Runs SciCode's own `scicode_eval` on a problem file given in argv[1] instead of the problems bundled in the wheel.

`scicode_eval` has no flag for its problem file: it reads the module global `INPUT_JSON_PATH` (the bundled
`problems_all.jsonl`, whose first problem alone has 12 sub-steps). The probe writes a problem with one sub-step
per scripted step and points that global at it; everything else (prompting, the Chat Completions client, code
extraction, the scoring run of the generated code, the files it writes) is SciCode's, unchanged. The remaining
arguments are `scicode_eval`'s own.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: probe-scicode PROBLEMS.jsonl [scicode_eval arguments...]")
    problems = Path(sys.argv[1])
    import scicode.__main__ as scicode_main  # imported here: it reads DATA_CACHE_DIR at import time

    scicode_main.INPUT_JSON_PATH = problems
    sys.argv = ["scicode_eval", *sys.argv[2:]]
    scicode_main.cli_evaluate()


if __name__ == "__main__":
    main()
