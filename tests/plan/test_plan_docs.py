"""The worked examples of docs/planning.md are what their commands print and write."""

from __future__ import annotations

import pytest

from docs.build import plan_example


@pytest.mark.parametrize("system", sorted(plan_example.EXAMPLES))
def test_the_example_is_what_the_command_prints(system):
    quoted = plan_example.quoted(system)
    assert plan_example.command(system) in quoted
    assert quoted == plan_example.section(system), (
        "regenerate with `PYTHONPATH=. python -m docs.build.plan_example`"
    )
