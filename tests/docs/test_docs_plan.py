"""docs/planning.md's table of the planner against the hand-tuned rows is
``bench/results/plan.json`` as ``docs.build.claims_plan`` writes it."""

from __future__ import annotations

from docs.build.claims import check
from docs.build.claims_plan import PLANNING_MD, plan_claims, table


def test_the_planning_table_is_the_results_file():
    assert table() in PLANNING_MD.read_text(encoding="utf-8")
    assert check(plan_claims()) == []


def test_a_figure_edited_by_hand_fails(tmp_path, monkeypatch):
    import docs.build.claims_plan as claims_plan
    from docs.build.claims import Claim

    edited = tmp_path / "planning.md"
    text = PLANNING_MD.read_text(encoding="utf-8")
    first = table().splitlines()[2]
    cells = first.split(" | ")
    cells[2] = "1"  # the hand-tuned throughput
    edited.write_text(text.replace(first, " | ".join(cells)), encoding="utf-8")
    claims = [Claim(edited, c.pattern, c.expected) for c in claims_plan.plan_claims()]
    assert check(tuple(claims)) != []
