"""A screenshot of ``ipusim view`` on the demo's report, taken by headless Chromium (Debian's
``chromium``). Its table lists the figures the page shows and the summary's first lines, which
the docs test compares with a fresh run."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from docs.build import demo_timeline
from docs.build.artefacts import Run

FIGURE = "view_screenshot"
#: The browser window (CSS pixels): the summary and the first figures.
WINDOW = "1280,1400"


def run() -> Run:
    """The demo's report and what its view shows."""
    from analysis.view import _figures

    _, report = demo_timeline.run()
    lines = report.summary().splitlines()[:3]
    table = pd.DataFrame(
        {"part": [*(f"figure {f}" for f in _figures(report)), *(f"summary {i}" for i in range(3))]}
    )
    table["text"] = [*(["shown"] * (len(table) - 3)), *lines]
    return {FIGURE: table}, report


def draw(tables: Mapping[str, pd.DataFrame], report: Any, folder: Path) -> None:
    """Write the view and photograph it."""
    from analysis.view import write_view

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise RuntimeError("the view screenshot needs Chromium (Debian: apt-get install chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        page = write_view(report, Path(tmp) / "view.html")
        subprocess.run(
            [
                chromium,
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                f"--window-size={WINDOW}",
                f"--screenshot={folder / f'{FIGURE}.png'}",
                page.as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
