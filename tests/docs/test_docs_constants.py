"""docs/validation.md's calibration constants are the ones ipusim reads (``docs.build.claims_constants``)."""

from __future__ import annotations

import re

from docs.build import claims_constants
from docs.build.claims import check
from docs.build.claims_constants import CONSTANT_CLAIMS


def test_the_quoted_constants_are_the_presets_and_rows() -> None:
    assert check(CONSTANT_CLAIMS) == []


def test_a_constant_edited_in_the_prose_is_caught(tmp_path, monkeypatch) -> None:
    text = claims_constants.VALIDATION_MD.read_text(encoding="utf-8")
    edited = re.sub(r"(`host\.stream_copy_overhead` \| )27 µs", r"\g<1>30 µs", text)
    assert edited != text
    moved = tmp_path / "validation.md"
    moved.write_text(edited, encoding="utf-8")
    claims = tuple(claims_constants.Claim(moved, c.pattern, c.expected) for c in CONSTANT_CLAIMS)
    problems = check(claims)
    assert len(problems) == 1 and "27" in problems[0]
