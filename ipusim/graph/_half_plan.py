"""The executor's plan for runs with half-precision tensors or floating-point traps.

Rules (``docs/numerics.md`` states them for users):

* Every op computes in float32: float16 inputs are widened (exactly) before its kernel runs, and a
  ``dtype="float16"`` attribute is computed as float32.
* Each half-precision output (dtype float16, or float32 when the run computes float32 as half) is
  rounded once to binary16: nearest-even, or stochastically with ``esr``; an overflow saturates to
  +-65504 or gives NaN with ``nanoo``. Float16 outputs are stored as float16 arrays, emulated ones
  as float32 arrays holding binary16 values.
* Ops that round their own results (``rounds_half_outputs``: matrix products and convolutions,
  whose partial sums round inside) are not rounded again; pure data movement (reshape, slice,
  transpose, gathers) only copies values that are already half and is not rounded either.
* Under emulation, float32 feeds, variables and constants enter as half (nearest-even): the
  infeed and the weights hold half-precision values on the device.
* With a trap on (``inv``, ``div0``, ``oflo``), every op's float outputs are checked: a NaN made
  from operands without NaN is an invalid operation, an infinity made from finite operands a
  division by zero (division-like ops with a zero operand) or an overflow, and a half-precision
  overflow is an overflow even when it saturated. The run stops with
  :class:`~ipusim.graph.numerics.FloatingPointTrap`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial
from time import perf_counter as _clock
from typing import TYPE_CHECKING, Any

import numpy as np

from ipusim.graph.numerics import FloatingPointTrap, Numerics
from ipusim.graph.spec import Array
from ipusim.kernels.half import round_to_half, stream_key, widen

if TYPE_CHECKING:
    from ipusim.graph.execute import ExecContext, Executor, ForwardFn

#: Ops whose infinities from finite operands are divisions by zero (IEEE 754 divideByZero: x/0
#: and log(0)), when an operand holds a zero.
DIV0_OPS = frozenset({"divide", "log", "sqrt_grad"})


@dataclass
class _Entry:
    fn: ForwardFn
    ins: tuple[int, ...]
    outs: tuple[int, ...]
    multi: bool
    widen: tuple[int, ...]
    rounds: tuple[tuple[int, bool], ...]  # (output index, store as float16)
    half: bool
    self_rounding: bool
    node_id: int
    node_name: str
    layer: str | None
    op: str


class HalfPlan:
    """The numerics plan of one executor for one setting of ``emulate_half``."""

    def __init__(self, executor: Executor, emulate_half: bool) -> None:
        from ipusim.graph.execute import check_feed

        self._check_feed = check_feed
        self.executor = executor
        self.emulate = emulate_half
        slot_of = executor._slot_of
        self.entries: list[_Entry] = []
        self.constants: list[tuple[int, Array]] = []
        for node in executor._nodes:
            name = node.op.name
            outs = tuple(slot_of[(node.id, s.index)] for s in node.outputs)
            if name in ("placeholder", "variable"):
                continue
            if name == "constant":
                value = node.attrs["value"]
                if self._emulated(value.dtype.name):
                    value = round_to_half(value)[0]
                self.constants.append((outs[0], value))
                continue
            rounds = tuple(
                (j, s.spec.dtype == "float16")
                for j, s in enumerate(node.outputs)
                if s.spec.dtype == "float16" or self._emulated(s.spec.dtype)
            )
            half = bool(rounds)
            attrs = dict(node.attrs)
            if half and attrs.get("dtype") == "float16":
                attrs["dtype"] = "float32"
            if node.op.kind == "data_movement":
                rounds = tuple((j, to16) for j, to16 in rounds if to16)  # copies: only convert
            fn = partial(node.op.forward, **attrs) if attrs else node.op.forward
            self.entries.append(
                _Entry(
                    fn=fn,
                    ins=tuple(slot_of[(s.node.id, s.index)] for s in node.inputs),
                    outs=outs,
                    multi=node.op.num_outputs != 1,
                    widen=tuple(i for i, s in enumerate(node.inputs) if s.spec.dtype == "float16"),
                    rounds=rounds,
                    half=half,
                    self_rounding=bool(getattr(node.op, "rounds_half_outputs", False)),
                    node_id=node.id,
                    node_name=node.name,
                    layer=node.layer,
                    op=name,
                )
            )

    def _emulated(self, dtype: str) -> bool:
        return self.emulate and dtype == "float32"

    def run(
        self, values: list[Any], feeds: Sequence[Array], ctx: ExecContext, numerics: Numerics
    ) -> None:
        """Execute once, writing every slot of ``values``."""
        ex = self.executor
        for feed_index, slot, spec in ex._feed_plan:
            array = self._check_feed(feeds[feed_index], spec)
            values[slot] = round_to_half(array)[0] if self._emulated(spec.dtype) else array
        for slot, variable in ex._variable_plan:
            value = variable.value
            values[slot] = round_to_half(value)[0] if self._emulated(value.dtype.name) else value
        for slot, value in self.constants:
            values[slot] = value
        base = replace(ctx, numerics=numerics, half=False)
        stochastic, nan = numerics.stochastic_rounding, numerics.nan_on_overflow
        seed, step = numerics.seed, ctx.step
        profile = ctx.profile
        for e in self.entries:
            args = [values[i] for i in e.ins]
            for k in e.widen:
                args[k] = widen(args[k])
            if e.half:
                node_ctx = replace(
                    base, half=True, rounding_key=stream_key(seed, step, e.node_id), overflows=0
                )
            else:
                node_ctx = base
            start = _clock() if profile is not None else 0.0
            result = e.fn(node_ctx, *args)
            results = list(result) if e.multi else [result]
            overflows = node_ctx.overflows if e.half else 0
            for j, to16 in e.rounds:
                out = results[j]
                if not e.self_rounding:
                    out, count = round_to_half(
                        out,
                        stochastic=stochastic,
                        key=stream_key(seed, step, e.node_id, j + 1),
                        nan_on_overflow=nan,
                    )
                    overflows += count
                results[j] = np.asarray(out).astype(np.float16) if to16 else out
            if profile is not None:
                profile[e.op] = profile.get(e.op, 0.0) + _clock() - start
            if numerics.traps:
                _check_traps(e, args, results, overflows, numerics)
            for slot, value in zip(e.outs, results):
                values[slot] = value


def _floats(arrays: Sequence[object]) -> list[Array]:
    return [a for a in arrays if isinstance(a, np.ndarray) and a.dtype.kind == "f"]


def _check_traps(
    e: _Entry, args: list[Array], results: list[Array], overflows: int, numerics: Numerics
) -> None:
    where = f"{e.node_name}" + (f" (layer {e.layer!r})" if e.layer else "")
    if overflows and numerics.trap_overflow:
        raise FloatingPointTrap(
            "oflo",
            where,
            f"{overflows} value(s) overflowed the half-precision range (|x| > 65504)",
        )
    inputs = _floats(args)
    for out in _floats([np.asarray(r) for r in results]):
        if np.isfinite(out).all():
            continue
        new_nan = np.isnan(out).any() and not any(np.isnan(a).any() for a in inputs)
        if new_nan and numerics.trap_invalid:
            raise FloatingPointTrap(
                "inv", where, "an invalid operation produced NaN from operands without NaN"
            )
        if np.isinf(out).any() and all(np.isfinite(a).all() for a in inputs):
            if e.op in DIV0_OPS and any((a == 0).any() for a in inputs):
                if numerics.trap_div0:
                    raise FloatingPointTrap(
                        "div0", where, "a division by zero produced an infinity"
                    )
            elif numerics.trap_overflow:
                raise FloatingPointTrap(
                    "oflo", where, "an overflow produced an infinity from finite operands"
                )
