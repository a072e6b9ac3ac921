"""Colours mean one thing in every figure: one palette for phases, one for resources (IPU
states), one for memory categories; a colour in two palettes only where the meaning is shared;
no figure module picks a colour of its own."""

from __future__ import annotations

import re
from pathlib import Path

from matplotlib.colors import to_hex

from analysis import style
from ipusim.lowering.program import MEMORY_CATEGORIES
from ipusim.trace import TRACE_PHASES
from ipusim.trace.reports import UTILISATION_STATES

ANALYSIS = Path(style.__file__).resolve().parent


def _meanings() -> dict[str, set[tuple[str, str]]]:
    found: dict[str, set[tuple[str, str]]] = {}
    for palette, colours in (
        ("phase", style.PHASE_COLOURS),
        ("state", style.STATE_COLOURS),
        ("category", style.CATEGORY_COLOURS),
    ):
        for key, colour in colours.items():
            found.setdefault(to_hex(colour), set()).add((palette, key))
    for name in ("TILE_COLOUR", "BUDGET_COLOUR", "POINT_COLOUR", "BAND_COLOUR"):
        found.setdefault(to_hex(getattr(style, name)), set()).add(("figure", name))
    return found


def test_every_phase_state_and_category_has_its_colour():
    assert set(TRACE_PHASES) <= set(style.PHASE_COLOURS)
    assert {*UTILISATION_STATES, "idle"} <= set(style.STATE_COLOURS)
    assert set(MEMORY_CATEGORIES) <= set(style.CATEGORY_COLOURS)


def test_a_colour_has_one_meaning():
    shared = [set(group) for group in style.SHARED_MEANINGS]
    for colour, meanings in _meanings().items():
        assert len(meanings) == 1 or meanings in shared, f"{colour} means {sorted(meanings)}"


def test_figure_modules_take_their_colours_from_the_style():
    for path in ANALYSIS.glob("*.py"):
        if path.name == "style.py":
            continue
        text = path.read_text(encoding="utf-8")
        assert not re.findall(r"[\"']#[0-9a-fA-F]{6}[\"']", text), f"{path.name} has a colour"
