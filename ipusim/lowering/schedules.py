"""Pipeline schedules as lists of time steps (pure functions, no SimPy).

A time step is the list of work items ``(stage, pass, micro_batch)`` that run in it, ``pass``
being ``"F"`` (forward) or ``"B"`` (backward). Time steps are executed in lock step: every IPU runs
its items, then inter-stage copies cross the IPU-Links, then all IPUs sync. For S stages and M
micro-batches:

- **Grouped** (IPU TensorFlow's default): pipeline cycle c has a forward step, in which stage s
  runs F(c − s), then a backward step, in which stage s runs B(c − 2(S − 1) + s). The last stage
  runs B(i) right after F(i); the gradient of micro-batch i reaches stage s one cycle per stage
  later. Cycles whose step has no work are skipped, leaving M + S − 1 forward steps and
  M + S − 1 backward steps.
- **Interleaved**: step u runs, on stage s, F((u − s) / 2) when u − s is even and
  B((u − 2S + 1 + s) / 2) when it is odd, so each stage alternates forward and backward and a
  step mixes both passes. 2(M + S − 1) steps.
- **Sequential**: one stage at a time, as sharding does: for each micro-batch F of stages
  0..S−1, then B of stages S−1..0. 2·S·M steps (S·M in inference).

Inference runs the forward items only (Grouped and Interleaved then coincide: M + S − 1 steps).
"""

from __future__ import annotations

from ipusim.errors import ConfigurationError

SCHEDULES = ("grouped", "interleaved", "sequential")

Item = tuple[int, str, int]


def _check(schedule: str, stages: int, micro_batches: int) -> None:
    if schedule not in SCHEDULES:
        raise ConfigurationError(
            f"pipeline schedule must be one of {SCHEDULES}, received {schedule!r}"
        )
    if stages < 1 or micro_batches < 1:
        raise ConfigurationError(
            f"a pipeline needs at least one stage and one micro-batch, received "
            f"{stages} stages and {micro_batches} micro-batches"
        )


def time_steps(schedule: str, stages: int, micro_batches: int, training: bool) -> list[list[Item]]:
    """The time steps of one pipeline run, each a list of (stage, pass, micro-batch)."""
    _check(schedule, stages, micro_batches)
    s_count, m_count = stages, micro_batches
    if schedule == "sequential":
        steps: list[list[Item]] = []
        for i in range(m_count):
            steps += [[(s, "F", i)] for s in range(s_count)]
            if training:
                steps += [[(s, "B", i)] for s in reversed(range(s_count))]
        return steps
    if not training:
        return [
            [(s, "F", c - s) for s in range(s_count) if 0 <= c - s < m_count]
            for c in range(m_count + s_count - 1)
        ]
    if schedule == "grouped":
        steps = []
        for c in range(m_count + 2 * s_count - 2):
            forward = [(s, "F", c - s) for s in range(s_count) if 0 <= c - s < m_count]
            backward = [
                (s, "B", c - 2 * (s_count - 1) + s)
                for s in range(s_count)
                if 0 <= c - 2 * (s_count - 1) + s < m_count
            ]
            steps += [step for step in (forward, backward) if step]
        return steps
    steps = []
    for u in range(2 * (m_count + s_count - 1)):
        items = []
        for s in range(s_count):
            if (u - s) % 2 == 0:
                i = (u - s) // 2
                if 0 <= i < m_count:
                    items.append((s, "F", i))
            else:
                i = (u - 2 * s_count + 1 + s) // 2
                if 0 <= i < m_count:
                    items.append((s, "B", i))
        if items:
            steps.append(items)
    return steps


def in_flight(schedule: str, stages: int, stage: int, micro_batches: int) -> int:
    """Micro-batches whose forward activations stage ``stage`` holds at once (training).

    Grouped: F(i) runs in cycle i + s and B(i) in cycle i + 2(S − 1) − s, so 2(S − 1 − s) + 1
    are alive. Interleaved: F(i) at step 2i + s, B(i) at 2i + 2S − 1 − s: S − s alive.
    Sequential: 1. Never more than the micro-batches of a run.
    """
    _check(schedule, stages, micro_batches)
    if schedule == "grouped":
        alive = 2 * (stages - 1 - stage) + 1
    elif schedule == "interleaved":
        alive = stages - stage
    else:
        alive = 1
    return min(alive, micro_batches)


def depth_multiple(schedule: str, stages: int, training: bool, num_ipus: int) -> int:
    """The pipeline depth (micro-batches) must be a multiple of, and at least, this number.

    As IPU TensorFlow: Grouped overlaps 2·S stage passes in training (S in inference),
    Interleaved the number of distinct IPUs, Sequential 1.
    """
    if schedule == "grouped":
        return 2 * stages if training else stages
    if schedule == "interleaved":
        return num_ipus
    return 1
