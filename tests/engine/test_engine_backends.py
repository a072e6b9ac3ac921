"""The compiled fast path against SimPy on random configurations: identical end times, identical
counters and identical traces (record for record), at every detail level.

Programs are drawn directly as the engine sees them: 1-4 pipeline stages on shared or separate
IPUs (or one concurrent stage group), any schedule, training or inference, blocks whose
supersteps have zero and non-zero parts, Streaming Memory transfers and collectives around the
passes and the weight update, inter-stage copies (IPU pairs included), cross-IPU syncs, infeed
and outfeed in every infeed mode (overlapped, staged, direct) with and without a limited dataset
rate, host overheads, callbacks and read-backs, replicas, and executions that cut single-stage
pipeline runs anywhere.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ipusim.engine import HostLink, HostOptions, RunPlan, simulate
from ipusim.engine.recorder import execution_sizes
from ipusim.engine.simulator import AUTO_FAST_MIN_INSTANCES
from ipusim.engine.tables import compile_program
from ipusim.lowering.program import (
    Block,
    PipelineProgram,
    Program,
    StageProgram,
    Superstep,
    Timed,
)
from ipusim.lowering.schedules import SCHEDULES

_PS = st.integers(0, 60)


@st.composite
def _block(draw, name: str, phase: str) -> Block:
    count = draw(st.integers(0, 3))
    steps = tuple(
        Superstep(
            f"{name}/op{k}",
            name,
            f"op{k}",
            phase,
            draw(_PS),
            draw(_PS),
            draw(st.integers(0, 5)),
            flops=draw(st.integers(0, 1000)),
            exchange_bytes=draw(st.integers(0, 64)),
        )
        for k in range(count)
    )
    return Block(steps, name)


@st.composite
def _timed(draw, name: str, phase: str) -> tuple[Timed, ...]:
    if not draw(st.booleans()):
        return ()
    track = draw(st.sampled_from(["link", "remote"]))
    return (Timed(name, track, draw(st.integers(0, 40)), draw(st.integers(0, 99)), phase),)


@st.composite
def programs(draw) -> Program:
    concurrent = draw(st.integers(0, 4)) == 0
    if concurrent:  # one stage, then a group of two, then one
        stages, groups = 4, ((0,), (1, 2), (3,))
        mapping = [0, 1, 2, 3]
    else:
        stages = draw(st.integers(1, 4))
        groups = ()
        mapping = [draw(st.integers(0, 3)) for _ in range(stages)]
    training = draw(st.booleans())
    backward = training and draw(st.booleans())
    schedule = draw(st.sampled_from(SCHEDULES))
    stage_programs = []
    for s in range(stages):
        stage_programs.append(
            StageProgram(
                s,
                mapping[s],
                draw(_block(f"s{s}/fwd", "fwd")),
                draw(_block(f"s{s}/bwd", "bwd")) if backward else Block(()),
                draw(_block(f"s{s}/wu", "weight-update")) if training else Block(()),
                send_forward_bytes=draw(st.integers(0, 50)),
                send_backward_bytes=draw(st.integers(0, 50)) if backward else 0,
                update_before=draw(_timed("all-reduce gradients", "weight-update")),
                update_after=draw(_timed("store optimizer state", "weight-update")),
                after_forward=draw(_timed("store stash", "fwd")),
                before_backward=draw(_timed("load stash", "bwd")) if backward else (),
                before_forward=draw(_timed("load accumulators", "accumulate")),
            )
        )
    pipeline = PipelineProgram(
        tuple(stage_programs),
        schedule,
        draw(st.integers(1, 5)),
        training,
        sync_ps=draw(st.sampled_from([0, 0, 3, 11])),
        link_bytes_per_s=draw(st.sampled_from([1e12, 5e11])),
        link_latency_ps=draw(st.integers(0, 5)),
        pair_link_bytes_per_s=draw(st.sampled_from([0.0, 2e12])),
        infeed_bytes=draw(st.sampled_from([0, 10, 80])),
        outfeed_bytes=draw(st.sampled_from([0, 8, 30])),
        outfeed_copies=draw(st.integers(1, 3)),
        groups=groups,
    )
    replicas = draw(st.sampled_from([1, 1, 2, 4]))
    return Program(
        "train" if training else "predict",
        pipeline,
        batch_size=draw(st.integers(1, 4)),
        replicas=replicas,
        ipus_per_replica=4,
        gradient_accumulation=pipeline.micro_batches if training else 1,
        readback_bytes=draw(st.sampled_from([0, 0, 16])),
    )


@st.composite
def runs(draw) -> tuple[Program, RunPlan, HostOptions, HostLink]:
    program = draw(programs())
    m = program.pipeline.micro_batches
    count = draw(st.integers(1, 4))
    if program.pipeline.logical_stages == 1:
        executions = tuple(draw(st.integers(1, 2 * m + 1)) for _ in range(count))
    else:
        executions = tuple(m * draw(st.integers(1, 2)) for _ in range(count))
    options = HostOptions(
        per_execution_overhead_ps=draw(st.sampled_from([0, 40, 500])),
        callback_ps=draw(st.sampled_from([0, 7])),
        prefetch_depth=draw(st.integers(1, 3)),
        buffer_depth=draw(st.integers(1, 3)),
        outfeed_mode=draw(st.sampled_from(["all", "last"])),
        infeed=draw(st.sampled_from(["overlapped", "staged", "direct"])),
        host_queue_depth=draw(st.integers(1, 4)),
        sample_ps=draw(st.sampled_from([0, 0, 3, 40])),
        # Drain time only where the IPU never waits for it (the outfeed overwritten in place).
        outfeed_drain_ps=0,
    )
    if options.outfeed_mode == "last" and draw(st.booleans()):
        options = HostOptions(**{**options.__dict__, "outfeed_drain_ps": 25})
    link = HostLink(
        draw(st.sampled_from([1e12, 2.5e11])),
        draw(st.sampled_from([1e12, 2.5e11])),
        draw(st.integers(0, 9)),
        draw(st.integers(0, 6)),
        draw(st.sampled_from([0.0, 4e12])),
    )
    return program, RunPlan(executions), options, link


def _same(fast, slow) -> None:
    assert fast.engine == "fast" and slow.engine == "simpy"
    assert fast.end_ps == slow.end_ps
    assert fast.execution_end_ps == slow.execution_end_ps
    a, b = fast.trace, slow.trace
    assert a.counters.same_as(b.counters)
    assert a.detail == b.detail
    for field, arr in a.instances.items():
        np.testing.assert_array_equal(arr, b.instances[field], err_msg=field)
    assert a == b and a.fingerprint() == b.fingerprint()


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(runs())
def test_fast_path_and_simpy_agree_record_for_record(case) -> None:
    program, plan, options, link = case
    fast = simulate(program, plan, options, link, engine="fast", detail="full")
    slow = simulate(program, plan, options, link, engine="simpy", detail="full")
    _same(fast, slow)
    records_fast = fast.trace.to_dataframe(replicas=True)
    records_slow = slow.trace.to_dataframe(replicas=True)
    assert records_fast.equals(records_slow)
    fast.trace.check_ipu_states()


@settings(max_examples=25, deadline=None, derandomize=True)
@given(runs(), st.integers(0, 60), st.sampled_from(["auto", "blocks", "summary"]))
def test_both_backends_keep_the_same_detail(case, budget, detail) -> None:
    program, plan, options, link = case
    kwargs = {"detail": detail, "record_budget": budget}
    fast = simulate(program, plan, options, link, engine="fast", **kwargs)
    slow = simulate(program, plan, options, link, engine="simpy", **kwargs)
    _same(fast, slow)
    full = simulate(program, plan, options, link, engine="fast", detail="full")
    # Counters cover the whole run at every detail level.
    assert fast.trace.counters.same_as(full.trace.counters)
    np.testing.assert_array_equal(fast.trace.totals().duration_ps, full.trace.totals().duration_ps)


def _long_enough(program: Program, options: HostOptions, link: HostLink) -> int:
    """The fewest steps (one execution) with AUTO_FAST_MIN_INSTANCES block instances."""
    tables = compile_program(program, options, link)

    def work(steps: int) -> int:
        return int(execution_sizes(tables, RunPlan((steps,)))[1].sum())

    low, high = 0, AUTO_FAST_MIN_INSTANCES  # every step runs at least one block instance
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if work(middle) < AUTO_FAST_MIN_INSTANCES else (low, middle)
    return high


@pytest.mark.parametrize(
    "options",
    [
        HostOptions(outfeed_drain_ps=40),
        HostOptions(asynchronous_callbacks=True, callback_ps=9),
    ],
)
def test_auto_picks_simpy_when_the_outfeed_can_hold_the_ipus_back(options) -> None:
    stage = StageProgram(0, 0, Block((Superstep("a", "", "a", "fwd", 10, 0, 0),)))
    pipeline = PipelineProgram((stage,), "sequential", 1, False, infeed_bytes=8, outfeed_bytes=8)
    program = Program("predict", pipeline, batch_size=2)
    link = HostLink(1e12, 1e12, 0)
    long = RunPlan((_long_enough(program, options, link),))
    assert simulate(program, long, options, link, detail="summary").engine == "simpy"
    with pytest.raises(ValueError, match="engine='fast' needs a run whose outfeed"):
        simulate(program, RunPlan((4,)), options, link, engine="fast")
    for plain in (HostOptions(), HostOptions(sample_ps=5)):  # a dataset rate is max-plus too
        assert simulate(program, long, plain, link, detail="summary").engine == "fast"


@pytest.mark.parametrize("feeds", [0, 8])
def test_auto_picks_the_fast_path_from_the_documented_amount_of_work(feeds) -> None:
    """engine="auto" runs SimPy below AUTO_FAST_MIN_INSTANCES block instances (the recorder's
    estimate of the run's work) and the fast path from there on."""
    stage = StageProgram(0, 0, Block((Superstep("a", "", "a", "fwd", 10, 0, 0),)))
    pipeline = PipelineProgram(
        (stage,), "sequential", 1, False, infeed_bytes=feeds, outfeed_bytes=feeds
    )
    program = Program("predict", pipeline, batch_size=2)
    options, link = HostOptions(), HostLink(1e12, 1e12, 0)
    steps = _long_enough(program, options, link)
    below = simulate(program, RunPlan((steps - 1,)), options, link, detail="summary")
    at = simulate(program, RunPlan((steps,)), options, link, detail="summary")
    assert (below.engine, at.engine) == ("simpy", "fast")
    assert simulate(program, RunPlan((4,)), options, link).engine == "simpy"
