"""The judging loop's waves: a finalist that a refusal earlier in its own wave rules out is
dropped on replay, so a wide search keeps exactly the serial search's rows."""

from __future__ import annotations

import math

import pytest

from ipusim.errors import ConfigurationError
from ipusim.plan.judge import Judge
from ipusim.plan.space import Candidate

#: One family (same stages and options); the memory check refuses estimates over 0.65.
MEMORY = [0.5, 0.7, 0.8, 0.6, 0.9]


def _cands() -> list[Candidate]:
    args = {"stages": 1, "accumulation": 1, "replicas": 1, "micro-batch": 1}
    return [Candidate({**args, "id": i}, m, 1.0 - i / 10, "") for i, m in enumerate(MEMORY)]


def _fake_run(task, items):
    """A simulator whose memory check refuses estimates over 0.65; outcomes out of order."""
    for index, (_, args) in reversed(items):
        fits = MEMORY[args["id"]] <= 0.65
        row = {"throughput": 10.0 - index, "memory_used": MEMORY[args["id"]], "fits": fits}
        yield index, True, {**row, "bottleneck": "", "error": "", "seconds": 0.0}


def _judged(width: int, limit: int | None) -> list[int]:
    judge = Judge("bert", lambda c: {"summary": str(c.args["id"])}, progress=False)
    judge.width, judge.run = width, _fake_run
    return [int(r["summary"]) for r in judge.all(_cands(), 0.0, math.inf, limit)]


def test_a_wave_keeps_the_serial_rows():
    # Serial: 0 fits, 1 is refused (0.7), so 2 (0.8) and 4 (0.9) are skipped; 3 (0.6) is judged.
    assert _judged(1, None) == [0, 1, 3]
    for width in (2, 3, 5):
        assert _judged(width, None) == [0, 1, 3]
    assert _judged(3, 2) == _judged(1, 2) == [0, 1]


def test_a_dead_worker_is_a_failed_finalist():
    judge = Judge("bert", lambda c: {"summary": str(c.args["id"])}, progress=False)
    judge.run = lambda task, items: iter(
        [(i, False, RuntimeError("worker died")) for i, _ in items]
    )
    (row,) = judge.all(_cands()[:1], 0.0, math.inf, None)
    assert not row["fits"] and row["error"] == "RuntimeError: worker died"


def test_processes_must_be_a_positive_int():
    with pytest.raises(ConfigurationError, match="processes"):
        Judge("bert", str, processes=0)
