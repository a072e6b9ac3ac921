"""The numerics executor: runs a graph's nodes in post-order with the ops' kernels.

An :class:`Executor` is compiled once per (graph, fetches): the nodes the fetches need are turned into
a flat plan of (forward function, input slots, output slots), so a step costs one Python call per
node and nothing else.

Half precision (see :mod:`ipusim.graph.numerics` and ``docs/numerics.md``): when a graph holds
float16 tensors, or the run computes float32 tensors as half (``ipusim.precision`` fp16.16 /
fp16.32), or a floating-point trap is on, the executor runs a second plan
(:mod:`ipusim.graph._half_plan`): every op computes in float32 on its widened inputs and each of
its half-precision outputs is rounded once to binary16 (nearest-even or stochastic, saturating or
NaN on overflow); matrix products and convolutions round their partial sums themselves.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

from ipusim.errors import ConfigurationError
from ipusim.graph.graph import Graph, Symbol
from ipusim.graph.numerics import Numerics, numerics_of
from ipusim.graph.spec import Array, TensorSpec
from ipusim.graph.variable import Variable

if TYPE_CHECKING:
    from ipusim.graph._half_plan import HalfPlan

#: A node's forward function with its attributes bound: ``fn(ctx, *input_arrays)`` -> its output
#: array, or a tuple of them for an op with several outputs (which one, only the op knows).
ForwardFn: TypeAlias = Callable[..., Any]


@dataclass
class ExecContext:
    """What a forward function may know about the run it is part of.

    Attributes:
        training: True when running a training step (dropout active, batch statistics used).
        step: counter of executions, used with each op's seed to draw fresh random numbers.
    """

    training: bool = False
    step: int = 0
    #: When a dict, the executor adds each op's wall time (seconds) under its op name. For
    #: benchmarks only; it never affects results.
    profile: dict[str, float] | None = None
    #: The floating-point model; None: the active configuration's (see
    #: :func:`~ipusim.graph.numerics.numerics_of`).
    numerics: Numerics | None = None
    #: Set by the executor for a node with half-precision outputs: ops that round their own
    #: results (matrix products, convolutions) read it with ``numerics``.
    half: bool = False
    #: Stochastic-rounding stream of the node being run (see ``ipusim.kernels.half.stream_key``).
    rounding_key: int = 0
    #: Written by ops that round their own results: how many values overflowed the half range.
    overflows: int = 0


class Executor:
    """Runs the part of ``graph`` that ``fetches`` need.

    Args:
        graph: the graph.
        fetches: symbols whose values :meth:`run` returns.
        feeds: placeholders fed by :meth:`run`, in order; default: all the graph's placeholders
            that the fetches depend on, in declaration order.
    """

    def __init__(
        self, graph: Graph, fetches: Sequence[Symbol], feeds: Sequence[Symbol] | None = None
    ) -> None:
        self.graph = graph
        self.fetches = list(fetches)
        nodes = graph.nodes_between(self.fetches)
        needed = {n.id for n in nodes}
        if feeds is None:
            feeds = [p for p in graph.placeholders if p.node.id in needed]
        self.feeds = list(feeds)
        slot_of: dict[tuple[int, int], int] = {}
        for node in nodes:
            for sym in node.outputs:
                slot_of[(node.id, sym.index)] = len(slot_of)
        self._num_slots = len(slot_of)
        feed_slots = {}
        for i, sym in enumerate(self.feeds):
            if sym.node.op.name != "placeholder":
                raise ConfigurationError(f"feed {i} ({sym!r}) is not a placeholder")
            feed_slots[sym.node.id] = i
        self._feed_plan: list[tuple[int, int, TensorSpec]] = []
        self._variable_plan: list[tuple[int, Variable]] = []
        self._constants: list[tuple[int, Array]] = []
        self._plan: list[tuple[ForwardFn, tuple[int, ...], tuple[int, ...] | int]] = []
        self._plan_ops: list[str] = []
        for node in nodes:
            outs = tuple(slot_of[(node.id, s.index)] for s in node.outputs)
            name = node.op.name
            if name == "placeholder":
                if node.id not in feed_slots:
                    raise ConfigurationError(
                        f"the fetches need placeholder {node.attrs['name']!r}, which is not fed"
                    )
                self._feed_plan.append((feed_slots[node.id], outs[0], node.outputs[0].spec))
            elif name == "variable":
                self._variable_plan.append((outs[0], node.attrs["variable"]))
            elif name == "constant":
                self._constants.append((outs[0], node.attrs["value"]))
            else:
                ins = tuple(slot_of[(s.node.id, s.index)] for s in node.inputs)
                fn: ForwardFn = (
                    partial(node.op.forward, **node.attrs) if node.attrs else node.op.forward
                )
                multi = node.op.num_outputs != 1
                self._plan.append((fn, ins, outs if multi else outs[0]))
                self._plan_ops.append(node.op.name)
        self._fetch_slots = [slot_of[(s.node.id, s.index)] for s in self.fetches]
        self._nodes = nodes
        self._slot_of = slot_of
        self._half_plans: dict[bool, HalfPlan] = {}
        self._has_half = any(
            s.spec.dtype == "float16" for n in nodes for s in (*n.inputs, *n.outputs)
        )

    def run(self, feeds: Sequence[Array], ctx: ExecContext | None = None) -> list[Array]:
        """Execute once and return the fetched arrays.

        Args:
            feeds: one array per feed placeholder, with its shape (dtype is converted).
            ctx: execution context; default: inference, step 0.
        """
        ctx = ctx if ctx is not None else ExecContext()
        if len(feeds) != len(self.feeds):
            raise ConfigurationError(
                f"expected {len(self.feeds)} input arrays, received {len(feeds)}"
            )
        numerics = numerics_of(ctx)
        if self._has_half or not numerics.plain:
            return self._run_numerics(feeds, ctx, numerics)
        values: list[Any] = [None] * self._num_slots
        for feed_index, slot, spec in self._feed_plan:
            values[slot] = check_feed(feeds[feed_index], spec)
        for slot, variable in self._variable_plan:
            values[slot] = variable.value
        for slot, value in self._constants:
            values[slot] = value
        if ctx.profile is None:
            for fn, ins, outs in self._plan:
                result = fn(ctx, *[values[i] for i in ins])
                if isinstance(outs, int):
                    values[outs] = result
                else:
                    for slot, value in zip(outs, result):
                        values[slot] = value
        else:
            self._run_profiled(values, ctx, ctx.profile)
        return [values[i] for i in self._fetch_slots]

    def _run_numerics(
        self, feeds: Sequence[Array], ctx: ExecContext, numerics: Numerics
    ) -> list[Array]:
        from ipusim.graph._half_plan import HalfPlan

        plan = self._half_plans.get(numerics.emulate_half)
        if plan is None:
            plan = HalfPlan(self, numerics.emulate_half)
            self._half_plans[numerics.emulate_half] = plan
        values: list[Any] = [None] * self._num_slots
        plan.run(values, feeds, ctx, numerics)
        return [values[i] for i in self._fetch_slots]

    def _run_profiled(self, values: list[Any], ctx: ExecContext, profile: dict[str, float]) -> None:
        clock = time.perf_counter
        for (fn, ins, outs), name in zip(self._plan, self._plan_ops):
            start = clock()
            result = fn(ctx, *[values[i] for i in ins])
            profile[name] = profile.get(name, 0.0) + clock() - start
            if isinstance(outs, int):
                values[outs] = result
            else:
                for slot, value in zip(outs, result):
                    values[slot] = value


def check_feed(array: object, spec: TensorSpec) -> Array:
    """``array`` converted to ``spec``'s dtype, C-contiguous, its shape checked against ``spec``."""
    array = np.asarray(array)
    if array.dtype.name != spec.dtype:
        array = array.astype(spec.dtype)
    shape = array.shape
    if len(shape) != len(spec.shape) or any(
        want is not None and want != got for want, got in zip(spec.shape, shape)
    ):
        raise ConfigurationError(
            f"input {spec.name or ''!s} expects shape {spec.shape}, received an array of shape {shape}"
        )
    return array if array.flags.c_contiguous else np.array(array, order="C")
