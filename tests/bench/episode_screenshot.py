"""docs/images/episode-page.png: a real reference run that drops its failed attempt, its episode page screenshot.

Run by `make screenshot` (needs Docker and chromium): never edited by hand.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from tests.browser import browser_page

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "images" / "episode-page.png"
HP = str(Path(sys.executable).with_name("harness-probe"))


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="hp-screenshot-") as tmp:
        run = Path(tmp) / "R"
        cmd = [HP, "-q", "run", "-H", "reference", "-s", "retry_500", "-a", "mode=drop_failed_attempt", "-o", str(run)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 1:  # the mode lies: the run must fail
            sys.exit(f"the reference run ended with {done.returncode}, not 1:\n{done.stderr[-2000:]}")
        with browser_page() as (page, errors):
            page.set_viewport_size({"width": 1280, "height": 900})
            page.goto((run / "reference" / "retry_500" / "episode.html").as_uri())
            if errors:
                sys.exit(f"the page logged errors: {errors}")
            OUT.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(OUT), full_page=False)
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
