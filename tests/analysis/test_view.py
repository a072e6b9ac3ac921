"""ipusim view: one self-contained HTML file that opens offline in headless Chromium with no
console errors, shows every figure, the summary and the top compute sets, and zooms."""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import subprocess

import pytest

from ipusim.cli import main as cli_main
from workloads import mnist_pipelined

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed (Debian: apt-get install chromium)"
)
#: No network: every host name resolves to nothing, so any fetch would fail and log an error.
FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--enable-logging=stderr",
    "--v=0",
]


def _open(url: str) -> tuple[str, list[str]]:
    """The DOM after the page's script ran, and the page's console messages."""
    done = subprocess.run(
        [CHROMIUM, *FLAGS, "--dump-dom", url], capture_output=True, text=True, timeout=120
    )
    console = [line for line in done.stderr.splitlines() if "CONSOLE" in line]
    return done.stdout, console


@pytest.fixture(scope="module")
def view(tmp_path_factory):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        report = mnist_pipelined.main(["--timing-only", "--steps", "16"])
    folder = report.save(tmp_path_factory.mktemp("v") / "report")
    assert cli_main(["view", str(folder)]) == 0
    return folder / "view.html", report


def test_the_console_is_read(tmp_path):
    """The check below is not vacuous: a page that logs an error shows it."""
    page = tmp_path / "bad.html"
    page.write_text("<html><body><script>console.error('broken view')</script></body></html>")
    _, console = _open(page.as_uri())
    assert any("broken view" in line for line in console), console


def test_view_opens_offline_with_every_figure_and_no_console_errors(view):
    path, report = view
    text = path.read_text(encoding="utf-8")
    external = re.findall(r'(?:src|href)="(?!#|data:)([^"]*)"', text)
    assert external == [], external  # nothing is fetched: one self-contained file
    dom, console = _open(path.as_uri())
    assert console == [], console
    body = re.search(r"<body([^>]*)>", dom).group(1)
    assert 'data-ready="yes"' in body and 'data-figures="5"' in body
    for figure in ("timeline", "utilisation", "memory", "tiles", "liveness"):
        assert f'<figure id="{figure}">' in dom
    assert f"{report.throughput_samples_per_s:,.1f} samples/s" in dom  # the summary
    top = report.top_ops(1).name.iloc[0]
    assert top in dom.split('<section id="top-ops">')[1]


def test_view_zooms_the_timeline(view):
    path, _ = view
    plain, _ = _open(path.as_uri())
    zoomed, console = _open(path.as_uri() + "#zoom=4")
    assert console == []
    assert 'data-zoom="4.000"' in zoomed
    assert 'data-zoom="1.000"' in plain
