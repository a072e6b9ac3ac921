"""The compiled fast path: the run's timeline as a max-plus recurrence over the lowered schedule.

When the host can hold the IPUs back only through the input pipeline (its dataset rate, its
queue, the infeed copies), not through the outfeed (drained at once) or per-step callbacks,
every time is a max-plus expression of earlier ones:

- a time step starts when the previous one ends; each IPU with work runs its operations from
  there, and the step's work ends when the last IPU is done (``max``); then the copies (the
  longest) and the cross-IPU sync (``+``);
- the host makes element ``j`` after element ``j - 1`` is in its queue (``produce`` each) and puts
  it in once element ``j - Q`` has left the queue (``Q`` = ``host_queue_depth``);
- with a copier (``"overlapped"`` / ``"staged"``) element ``j`` leaves the queue when the copier
  is done with ``j - 1``, and its copy starts once a device-side slot is free (element ``j - P``
  taken, ``P`` = ``prefetch_depth``): ``ready_j = max(leave_j, taken_{j-P}) + copy``; the IPU
  takes it at ``max(request, ready_j)`` (the difference is an infeed stall) and, staged, copies
  it from the staging buffer itself; ``"direct"``: the IPU takes it from the queue at
  ``max(request, put_j)`` and copies it over the host link;
- an outfeed write is a copy of fixed length (the buffer is drained as it is written);
- each execution starts after the host's per-execution overhead, and ends with the weight
  read-back and callbacks after the IPUs finish.

The recurrence (:func:`_run`, one Numba kernel) walks every time step of every pipeline run
once, emitting the instances of the kept steps and counting every instance, exactly as the SimPy
processes do: the same tables, the same instances, the same end times (tests check both on
exact timelines and on random configurations). Elements of the infeed are followed in ring
buffers of ``P`` and ``Q`` entries, so the kernel's memory does not grow with the run.
"""

from __future__ import annotations

import numpy as np

from ipusim._jit import kernel
from ipusim.engine.options import HostOptions, RunPlan
from ipusim.engine.recorder import KeepPlan, execution_sizes
from ipusim.engine.tables import OP_FIXED, OP_INFEED, RunTables
from ipusim.trace.expand import INSTANCE_FIELDS

INFEED_NONE = 0
INFEED_OVERLAPPED = 1
INFEED_STAGED = 2
INFEED_DIRECT = 3
_INFEED_MODES = {"overlapped": INFEED_OVERLAPPED, "staged": INFEED_STAGED, "direct": INFEED_DIRECT}

# host_ints: the host's side of the run, by index.
(
    H_INFEED_MODE,
    H_INFEED_PS,
    H_PREFETCH,
    H_COPY_HOST,
    H_COPY_IPU,
    H_STALL,
    H_OUTFEED_PS,
    H_OUTFEED,
    H_OVERHEAD_PS,
    H_OVERHEAD,
    H_READBACK_PS,
    H_READBACK,
    H_CALLBACKS_PS,
    H_CALLBACKS,
    H_PORT_PS,
    H_QUEUE,
    H_PRODUCE_PS,
    H_DATASET,
) = range(18)


@kernel
def _emit(
    n_out: int,
    keep: int,
    flags: np.ndarray,
    count: np.ndarray,
    stretch: np.ndarray,
    out: np.ndarray,
    template: int,
    slot: int,
    ipu: int,
    start: int,
    end: int,
    step: int,
    mb: int,
) -> int:
    """Count one instance; keep it (``out`` row ``n_out``) when its step is below ``keep``."""
    count[template, slot] += 1
    if flags[template]:
        stretch[template, slot] += end - start
    if step < keep:
        out[n_out, 0] = template
        out[n_out, 1] = ipu
        out[n_out, 2] = start
        out[n_out, 3] = end
        out[n_out, 4] = step
        out[n_out, 5] = mb
        return n_out + 1
    return n_out


@kernel
def _run(
    executions: np.ndarray,
    m: int,
    cuttable: bool,
    first_step_of: np.ndarray,
    has_update: bool,
    grp_ptr: np.ndarray,
    grp_slot: np.ndarray,
    op_ptr: np.ndarray,
    op_kind: np.ndarray,
    op_template: np.ndarray,
    op_duration: np.ndarray,
    op_mb: np.ndarray,
    copy_ptr: np.ndarray,
    copy_slot: np.ndarray,
    copy_template: np.ndarray,
    copy_duration: np.ndarray,
    step_copy_ps: np.ndarray,
    sync_ps: int,
    sync_template: int,
    slot_ipu: np.ndarray,
    h: np.ndarray,
    flags: np.ndarray,
    keep: int,
    count: np.ndarray,
    stretch: np.ndarray,
    out: np.ndarray,
    execution_end: np.ndarray,
) -> int:
    """The recurrence (see the module docstring); ``h`` is the host's side (``H_*`` indices).
    Returns the instances written to ``out``."""
    mode = h[H_INFEED_MODE]
    prefetch = max(h[H_PREFETCH], 1)
    queue = max(h[H_QUEUE], 1)
    produce = h[H_PRODUCE_PS]
    n_slots = len(slot_ipu)
    update = len(grp_ptr) - 2  # the weight-update step's index
    taken = np.zeros(prefetch, dtype=np.int64)  # when element j - P freed its slot (ring)
    left_queue = np.zeros(queue, dtype=np.int64)  # when element j - Q left the host queue
    ready_prev = 0  # when the copier finished the previous element
    put_prev = 0  # when the previous element entered the host queue
    n = 0  # instances kept
    now = 0
    global_step = 0
    for k in range(len(executions)):
        if h[H_OVERHEAD_PS] > 0:
            end = now + h[H_OVERHEAD_PS]
            n = _emit(
                n, keep, flags, count, stretch, out, h[H_OVERHEAD], 0, -1, now, end,
                global_step, -1,
            )  # fmt: skip
            now = end
        t = now
        left = executions[k]
        g = global_step
        while left > 0:
            run = g // m
            lo = g - run * m
            hi = min(m, lo + left)
            first = run * m
            u1 = update
            next_u = 0
            if cuttable:
                next_u = first_step_of[lo]
                u1 = first_step_of[hi]
            last = hi == m and has_update
            while True:
                if next_u < u1:
                    u = next_u
                    next_u += 1
                elif last:
                    u = update
                    last = False
                else:
                    break
                sync_step = first + m - 1 if u == update else first
                step_end = t
                for grp in range(grp_ptr[u], grp_ptr[u + 1]):
                    slot = grp_slot[grp]
                    ipu = slot_ipu[slot]
                    tt = t
                    for op in range(op_ptr[grp], op_ptr[grp + 1]):
                        mb = op_mb[op]
                        step = first + mb
                        kind = op_kind[op]
                        if kind == OP_FIXED:
                            d = op_duration[op]
                            n = _emit(
                                n, keep, flags, count, stretch, out, op_template[op], slot, ipu,
                                tt, tt + d, step, mb,
                            )  # fmt: skip
                            tt += d
                        elif kind == OP_INFEED:
                            # the host makes the element and puts it in its queue
                            produced = put_prev + produce
                            if produce > 0:
                                n = _emit(
                                    n, keep, flags, count, stretch, out, h[H_DATASET], 0, -1,
                                    put_prev, produced, step, -1,
                                )  # fmt: skip
                            space = left_queue[step % queue] if step >= queue else 0
                            put_prev = max(produced, space)
                            if mode == INFEED_DIRECT:
                                if put_prev > tt:
                                    n = _emit(
                                        n, keep, flags, count, stretch, out, h[H_STALL], slot,
                                        ipu, tt, put_prev, step, -1,
                                    )  # fmt: skip
                                    tt = put_prev
                                left_queue[step % queue] = tt
                                d = h[H_INFEED_PS]
                                n = _emit(
                                    n, keep, flags, count, stretch, out, h[H_COPY_IPU], slot,
                                    ipu, tt, tt + d, step, -1,
                                )  # fmt: skip
                                tt += d
                            else:
                                leave = max(ready_prev, put_prev)
                                left_queue[step % queue] = leave
                                free = taken[step % prefetch] if step >= prefetch else 0
                                copy_start = max(leave, free)
                                ready_prev = copy_start + h[H_INFEED_PS]
                                n = _emit(
                                    n, keep, flags, count, stretch, out, h[H_COPY_HOST], 0, -1,
                                    copy_start, ready_prev, step, -1,
                                )  # fmt: skip
                                if ready_prev > tt:
                                    n = _emit(
                                        n, keep, flags, count, stretch, out, h[H_STALL], slot,
                                        ipu, tt, ready_prev, step, -1,
                                    )  # fmt: skip
                                    tt = ready_prev
                                if mode == INFEED_STAGED:
                                    d = h[H_PORT_PS]
                                    n = _emit(
                                        n, keep, flags, count, stretch, out, h[H_COPY_IPU],
                                        slot, ipu, tt, tt + d, step, -1,
                                    )  # fmt: skip
                                    tt += d
                                taken[step % prefetch] = tt
                        else:
                            d = h[H_OUTFEED_PS]
                            n = _emit(
                                n, keep, flags, count, stretch, out, h[H_OUTFEED], slot, ipu, tt,
                                tt + d, step, -1,
                            )  # fmt: skip
                            tt += d
                    if tt > step_end:
                        step_end = tt
                t = step_end
                if copy_ptr[u + 1] > copy_ptr[u]:
                    for c in range(copy_ptr[u], copy_ptr[u + 1]):
                        slot = copy_slot[c]
                        n = _emit(
                            n, keep, flags, count, stretch, out, copy_template[c], slot,
                            slot_ipu[slot], t, t + copy_duration[c], first, -1,
                        )  # fmt: skip
                    t += step_copy_ps[u]
                if sync_template >= 0:
                    for slot in range(1, n_slots):
                        n = _emit(
                            n, keep, flags, count, stretch, out, sync_template, slot,
                            slot_ipu[slot], t, t + sync_ps, sync_step, -1,
                        )  # fmt: skip
                    t += sync_ps
            left -= hi - lo
            g += hi - lo
        global_step += executions[k]
        now = t
        if h[H_READBACK] >= 0:
            end = now + h[H_READBACK_PS]
            n = _emit(
                n, keep, flags, count, stretch, out, h[H_READBACK], 0, -1, now, end,
                global_step - 1, -1,
            )  # fmt: skip
            now = end
        if h[H_CALLBACKS_PS] > 0:
            end = now + h[H_CALLBACKS_PS]
            n = _emit(
                n, keep, flags, count, stretch, out, h[H_CALLBACKS], 0, -1, now, end,
                global_step - 1, -1,
            )  # fmt: skip
            now = end
        execution_end[k] = now
    return n


def _flatten(tables: RunTables) -> dict[str, np.ndarray]:
    """The time steps (and the weight update as the last) as flat arrays for the kernel."""
    slot_of = {ipu: k for k, ipu in enumerate(tables.slots)}
    steps = list(tables.steps) + ([tables.update] if tables.update is not None else [])
    grp_ptr, grp_slot, op_ptr = [0], [], [0]
    ops: list[tuple[int, int, int, int]] = []
    copy_ptr, copies, copy_ps = [0], [], []
    durations = tables.templates.duration_ps
    for step in steps:
        for ipu, step_ops in step.work:
            grp_slot.append(slot_of[ipu])
            ops += [(o.kind, o.template, o.duration_ps, o.micro_batch) for o in step_ops]
            op_ptr.append(len(ops))
        grp_ptr.append(len(grp_slot))
        copies += [(slot_of[ipu], t, int(durations[t])) for ipu, t in step.copies]
        copy_ptr.append(len(copies))
        copy_ps.append(step.copy_ps)
    if tables.update is None:  # an empty update step the kernel never runs
        grp_ptr.append(len(grp_slot))
        copy_ptr.append(len(copies))
        copy_ps.append(0)
    op = np.array(ops, dtype=np.int64).reshape(-1, 4)
    cp = np.array(copies, dtype=np.int64).reshape(-1, 3)
    return {
        "grp_ptr": np.array(grp_ptr, dtype=np.int64),
        "grp_slot": np.array(grp_slot, dtype=np.int64),
        "op_ptr": np.array(op_ptr, dtype=np.int64),
        "op_kind": np.ascontiguousarray(op[:, 0]),
        "op_template": np.ascontiguousarray(op[:, 1]),
        "op_duration": np.ascontiguousarray(op[:, 2]),
        "op_mb": np.ascontiguousarray(op[:, 3]),
        "copy_ptr": np.array(copy_ptr, dtype=np.int64),
        "copy_slot": np.ascontiguousarray(cp[:, 0]),
        "copy_template": np.ascontiguousarray(cp[:, 1]),
        "copy_duration": np.ascontiguousarray(cp[:, 2]),
        "step_copy_ps": np.array(copy_ps, dtype=np.int64),
    }


def _host_vector(tables: RunTables, options: HostOptions, callbacks_ps: int) -> np.ndarray:
    """The host's templates and times as the kernel's ``h`` vector (indices ``H_*``)."""
    host = tables.host
    h = np.zeros(18, dtype=np.int64)
    h[H_INFEED_MODE] = _INFEED_MODES[options.infeed] if tables.infeed_bytes else INFEED_NONE
    h[H_INFEED_PS] = host.infeed_copy_ps
    h[H_PREFETCH] = options.prefetch_depth
    h[H_COPY_HOST] = host.infeed_copy_host
    h[H_COPY_IPU] = host.infeed_copy_ipu
    h[H_STALL] = host.infeed_stall
    h[H_OUTFEED_PS] = host.outfeed_copy_ps
    h[H_OUTFEED] = host.outfeed_copy
    h[H_OVERHEAD_PS] = options.per_execution_overhead_ps
    h[H_OVERHEAD] = host.overhead
    h[H_READBACK_PS] = host.readback_ps
    h[H_READBACK] = host.readback
    h[H_CALLBACKS_PS] = callbacks_ps
    h[H_CALLBACKS] = host.callbacks
    h[H_PORT_PS] = host.infeed_port_ps
    h[H_QUEUE] = options.host_queue_depth
    h[H_PRODUCE_PS] = options.sample_ps * tables.program.batch_size
    h[H_DATASET] = host.dataset
    return h


def run_fast(
    tables: RunTables, plan: RunPlan, options: HostOptions, keep: KeepPlan
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Run the recurrence over ``plan``.

    Returns:
        The kept instances (columns), the per-(template, slot) instance counts and stretch
        durations, each IPU slot's waiting time and the end of every execution.
    """
    host = tables.host
    for first, n in zip(np.cumsum((0, *plan.executions[:-1])), plan.executions):
        tables.pieces(int(first), n)  # a pipeline of several stages runs whole runs
    callbacks_ps = options.callback_ps if not options.asynchronous_callbacks else 0
    h = _host_vector(tables, options, callbacks_ps)
    flat = _flatten(tables)
    n_templates, n_slots = len(tables.templates), len(tables.slots)
    count = np.zeros((n_templates, n_slots), dtype=np.int64)
    stretch = np.zeros((n_templates, n_slots), dtype=np.int64)
    if keep.executions:
        _, instances = execution_sizes(tables, RunPlan(plan.executions[: keep.executions]))
        capacity = int(instances.sum())
    else:
        capacity = 0
    out = np.zeros((capacity, 6), dtype=np.int64)
    ends = np.zeros(len(plan.executions), dtype=np.int64)
    executions = np.array(plan.executions, dtype=np.int64)
    first_step_of = np.array(tables.first_step_of or (0,), dtype=np.int64)
    n_out = _run(
        executions,
        tables.micro_batches,
        tables.cuttable,
        first_step_of,
        tables.update is not None,
        flat["grp_ptr"],
        flat["grp_slot"],
        flat["op_ptr"],
        flat["op_kind"],
        flat["op_template"],
        flat["op_duration"],
        flat["op_mb"],
        flat["copy_ptr"],
        flat["copy_slot"],
        flat["copy_template"],
        flat["copy_duration"],
        flat["step_copy_ps"],
        int(tables.pipeline.sync_ps),
        int(tables.sync_template),
        np.array(tables.slots, dtype=np.int64),
        h,
        tables.templates.stretch.astype(np.bool_),
        keep.steps,
        count,
        stretch,
        out,
        ends,
    )
    instances_out = {name: out[:n_out, k] for k, name in enumerate(INSTANCE_FIELDS)}
    # The host's per-execution work runs while every IPU waits for the launch or is done.
    per_execution = options.per_execution_overhead_ps + host.readback_ps + callbacks_ps
    waiting = np.full(n_slots, per_execution * len(plan.executions), dtype=np.int64)
    waiting[0] = 0
    return instances_out, count, stretch, waiting, ends
