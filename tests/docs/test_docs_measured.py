"""The measured figures README.md and docs/ quote (wall times, TF-parity errors, half-precision
kernel speed) are those of the committed bench/results files (``docs.build.claims_measured``)."""

from __future__ import annotations

import json

from docs.build import claims_measured
from docs.build.claims import Claim, check
from docs.build.claims_measured import MEASURED_CLAIMS


def test_the_measured_figures_the_prose_quotes_are_the_results_files():
    assert check(MEASURED_CLAIMS) == []


def test_every_measured_claim_finds_its_text_and_checks_a_figure():
    for claim in MEASURED_CLAIMS:
        assert claim.expected(), claim.pattern


def test_a_results_file_that_changed_is_caught(tmp_path, monkeypatch):
    """Not vacuous: validation.json with another wall time fails both claims quoting it."""
    data = json.loads(claims_measured.VALIDATION_JSON.read_text(encoding="utf-8"))
    data["wall_s"] += 7.0
    moved = tmp_path / "validation.json"
    moved.write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setattr(claims_measured, "VALIDATION_JSON", moved)
    quoting = tuple(c for c in MEASURED_CLAIMS if c.expected is claims_measured._validation_wall)
    assert len(quoting) == 2
    assert len(check(quoting)) == 2


def test_a_figure_edited_by_hand_is_caught(tmp_path):
    doc = tmp_path / "numerics.md"
    text = claims_measured.NUMERICS_MD.read_text(encoding="utf-8")
    assert "rounding costs 1.6 ns per element" in text
    doc.write_text(text.replace("costs 1.6 ns per element", "costs 1.7 ns per element"), "utf-8")
    changed = tuple(
        Claim(doc, c.pattern, c.expected)
        for c in MEASURED_CLAIMS
        if c.doc == claims_measured.NUMERICS_MD
    )
    problems = check(changed)
    assert len(problems) == 1 and "'1.7'" in problems[0] and "'1.6'" in problems[0], problems


def test_the_clock_rounding_is_the_spacing_of_doubles_in_these_years():
    # time.time() between 2**30 s (2004) and 2**31 s (2038): doubles 2**-22 s apart.
    assert claims_measured._clock_rounding() == (f"{2.0**-22 * 1e6:.2f}",)


def test_the_row_errors_validation_md_quotes_are_validation_jsons():
    assert claims_measured.row_error_problems() == []


def test_a_stale_row_error_is_caught(tmp_path):
    text = claims_measured.VALIDATION_MD.read_text(encoding="utf-8")
    assert "**G1 (+32.8%)**" in text and "(B7-384, SDK 3.3: -6.4%)" in text
    doc = tmp_path / "validation.md"
    doc.write_text(
        text.replace("**G1 (+32.8%)**", "**G1 (+35.2%)**").replace(
            "(B7-384, SDK 3.3: -6.4%)", "(B7-384, SDK 3.3: -6.2%)"
        ),
        encoding="utf-8",
    )
    problems = claims_measured.row_error_problems(doc)
    assert len(problems) == 2 and "G1 is +32.8%" in problems[0] and "B7-384" in problems[1]
