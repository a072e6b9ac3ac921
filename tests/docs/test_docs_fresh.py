"""The figures and numbers of README.md and docs/ are what a fresh run gives.

Every figure of docs/images belongs to an artefact of ``docs/build`` and has the table of its
plotted series beside it (``STEM.csv``). The cheap artefacts are simulated again here and their
tables compared with the committed ones byte for byte; the numbers the prose quotes are checked
against those tables (``docs.build.claims``). A changed cost model therefore fails here until
``python -m docs.build`` is rerun and the prose agrees with it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

from docs.build.artefacts import IMAGES, ROOT, data_path, quiet_run, table_text
from docs.build.claims import check
from docs.build.registry import ARTEFACTS

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _figures() -> dict[str, str]:
    return {figure: a.name for a in ARTEFACTS.values() for figure in a.figures}


def test_every_image_of_the_docs_is_built_with_its_data():
    figures = _figures()
    on_disk = {p.stem for p in IMAGES.glob("*.png")}
    assert on_disk == set(figures), "docs/images holds a PNG no artefact of docs/build makes"
    for figure in figures:
        assert data_path(figure).is_file(), f"{figure}.png has no {figure}.csv beside it"
    for doc in DOCS:
        for image in re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", doc.read_text(encoding="utf-8")):
            stem = image.rsplit("/", 1)[-1].removesuffix(".png")
            assert stem in figures, f"{doc.name} shows {image}, which docs/build does not make"


def test_the_numbers_the_prose_quotes_are_the_datas():
    assert check() == []


def test_a_changed_number_is_caught(tmp_path, monkeypatch):
    """The claim check is not vacuous: the README with another plot window fails it."""
    from docs.build import claims

    readme = tmp_path / "README.md"
    text = claims.README.read_text(encoding="utf-8")
    changed = re.sub(r"--end (\S+)", "--end 0.0036", text, count=1)
    assert changed != text
    readme.write_text(changed, encoding="utf-8")
    moved = tuple(
        claims.Claim(readme, c.pattern, c.expected) if c.doc == claims.README else c
        for c in claims.CLAIMS
    )
    problems = check(moved)
    assert len(problems) == 1 and "0.0036" in problems[0], problems


@pytest.mark.parametrize("name", sorted(n for n, a in ARTEFACTS.items() if a.cheap))
def test_cheap_artefacts_match_a_fresh_run(name):
    _compare_fresh(name)


def _compare_fresh(name: str) -> None:
    tables, _ = quiet_run(ARTEFACTS[name].run)
    for figure in ARTEFACTS[name].figures:
        committed = data_path(figure).read_text(encoding="utf-8")
        assert table_text(tables[figure]) == committed, (
            f"{figure}: a fresh run differs from docs/images/{figure}.csv; rerun "
            f"`python -m docs.build {name}` and update the prose it quotes"
        )


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(n for n, a in ARTEFACTS.items() if not a.cheap))
def test_slow_artefacts_match_a_fresh_run(name):
    if name == "view_screenshot" and not (
        shutil.which("chromium") or shutil.which("chromium-browser")
    ):
        pytest.skip("the view screenshot needs Chromium")
    _compare_fresh(name)


def test_demo_timeline_window_is_one_execution():
    """The README's window holds the 50 steps of the first execution and no IPU work of the
    second (whose records start after the next per-execution overhead)."""
    import pandas as pd

    table = pd.read_csv(data_path("demo_timeline"))
    ipu = table[table.ipu == 0]
    assert sorted(ipu.step.unique()) == list(range(50))
    overhead = table[table.name == "execution overhead"]
    start, end = table.window_start_s.iloc[0] * 1e12, table.window_end_s.iloc[0] * 1e12
    assert (overhead.start_ps < start).any() and (overhead.end_ps > end).any()


@pytest.mark.slow
def test_the_validation_run_matches_its_committed_results(tmp_path):
    """The full validation, docs/validation.md's ``ipusim validate`` (minutes), predicts what
    validation.json and so docs/validation.md and the README quote, row for row."""
    written = tmp_path / "validation.json"
    subprocess.run(
        [sys.executable, "-m", "ipusim", "validate", "--output", str(written)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    fresh = json.loads(written.read_text())
    committed = json.loads((ROOT / "bench" / "results" / "validation.json").read_text())
    fields = ("id", "predicted", "bound", "memory_used")
    assert [[r[f] for f in fields] for r in fresh["rows"]] == [
        [r[f] for f in fields] for r in committed["rows"]
    ]
