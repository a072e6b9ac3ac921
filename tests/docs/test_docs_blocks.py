"""Every code block of docs/*.md runs as the page shows it (the README's own blocks are run by
tests/test_readme.py; docs/api.md is generated and has none).

Blocks are read from the pages, never copied here: a ``python`` block runs as a script, each
command of a ``bash`` block runs, a ``toml`` block is a study file that must load as one, and a
``text`` block is a picture, not code. A block in another
language, or a command no test here knows, fails :func:`test_every_block_is_exercised`.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from readme_blocks import blocks, commands

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "api.md")
#: Commands too slow for every run (minutes on two cores): run only with the slow tests.
SLOW = {("ipusim", "validate", "--reduced")}


def _elsewhere() -> dict[tuple[str, ...], str]:
    """Commands another test runs and checks beyond their exit status, with that test's file:
    the planning page's worked examples (their output against the page) and the full
    validation (its table against validation.json)."""
    from docs.build import plan_example

    runs = {
        tuple(shlex.split(plan_example.command(system))): "tests/plan/test_plan_docs.py"
        for system in plan_example.EXAMPLES
    }
    return {**runs, ("ipusim", "validate"): "tests/docs/test_docs_fresh.py"}


ELSEWHERE = _elsewhere()


def _blocks(language: str) -> list[tuple[str, str]]:
    return [(p.name, b.text) for p in PAGES for b in blocks(p) if b.language == language]


def _commands() -> list[list[str]]:
    return [argv for _, text in _blocks("bash") for argv in _bash_commands(text)]


def _bash_commands(text: str) -> list[list[str]]:
    from readme_blocks import Block

    return commands(Block("bash", text, ""))


def test_every_block_is_exercised():
    for page in PAGES:
        for block in blocks(page):
            assert block.language in ("python", "bash", "toml", "text"), (
                f"{page.name}: a ```{block.language} block (section {block.section!r}) that no "
                "test runs; label a picture ```text"
            )
    for argv in _commands():
        assert argv[0] == "ipusim", f"no test knows how to run {argv}"


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.mark.parametrize(("page", "code"), _blocks("python"), ids=lambda v: str(v)[:20])
def test_python_blocks_run(page, code, tmp_path):
    script = tmp_path / "block.py"
    script.write_text(code, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, env=_env()
    )
    assert result.returncode == 0, f"the python block of {page} failed:\n{result.stderr}"


def _run_command(argv: list[str], tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ipusim", *argv[1:]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=1200,
    )
    assert result.returncode == 0, f"{' '.join(argv)} failed:\n{result.stdout}\n{result.stderr}"


@pytest.mark.parametrize(
    "argv",
    [a for a in _commands() if tuple(a) not in SLOW | ELSEWHERE.keys()],
    ids=lambda a: " ".join(a),
)
def test_bash_commands_run(argv, tmp_path):
    _run_command(argv, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("argv", [a for a in _commands() if tuple(a) in SLOW], ids=" ".join)
def test_slow_bash_commands_run(argv, tmp_path):
    _run_command(argv, tmp_path)


@pytest.mark.parametrize("argv", sorted(ELSEWHERE), ids=" ".join)
def test_commands_run_elsewhere_are_on_the_pages_and_in_their_tests(argv):
    assert list(argv) in _commands(), f"no page shows {' '.join(argv)} any more"
    assert (ROOT / ELSEWHERE[argv]).is_file(), ELSEWHERE[argv]


@pytest.mark.parametrize(("page", "text"), _blocks("toml"), ids=lambda v: str(v)[:20])
def test_toml_blocks_are_valid_studies(page, text, tmp_path):
    from ipusim.sweep import Study

    (tmp_path / "study.toml").write_text(text, encoding="utf-8")
    study = Study.from_toml(tmp_path / "study.toml")
    assert len(study) >= 1, page
