"""Tracing state of the custom-training-loop runtime, and the markers traced code returns.

A device function (a ``tf.function`` run by ``strategy.run``, ``ipu_compiler.compile``, a loop
body or a pipeline stage) is *traced*: the Python code runs once on graph Symbols and the ops it
calls add nodes to a :class:`~ipusim.graph.graph.Graph`. A :class:`TraceContext` collects what the
graph needs besides its outputs:

- **side effects**: nodes that must run even though no output depends on them (outfeed enqueues,
  optimizer updates, loops);
- **dequeues**: placeholders filled from an infeed or a dataset iterator at every execution;
- **segments**: the loops and pipelines of the function, which the timing path simulates.

Contexts nest (a loop body inside a function) and are thread-local: a host thread reading an
outfeed while the loop runs never sees the tracing thread's state.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any

from ipusim.graph.graph import Graph, Symbol
from ipusim.graph.ops.update import tracers as update_tracers

_local = threading.local()
_steps = itertools.count()


def next_step() -> int:
    """A fresh execution counter (seeds dropout masks, as ``ExecContext.step`` does in Keras)."""
    return next(_steps)


class Operation:
    """What IPU TensorFlow returns as a ``tf.Operation``: an enqueue, an update, a loop.

    Attributes:
        name: what made it (``"outfeed_enqueue"``, ``"repeat"``, ...).
        symbol: its node's output in the graph being traced, or None when it ran at once.
    """

    def __init__(self, name: str, symbol: Symbol | None = None) -> None:
        self.name = name
        self.symbol = symbol

    def __repr__(self) -> str:
        return f"<Operation {self.name}>"


@dataclass(eq=False)
class Dequeue:
    """Placeholders of a traced graph filled from ``source`` at every execution.

    Attributes:
        source: an object with ``pull() -> element`` (an infeed or an iterator).
        placeholders: the flat placeholders, in ``flatten(element)`` order.
    """

    source: Any
    placeholders: list[Symbol]


@dataclass(eq=False)
class TraceContext:
    """What a trace collects besides its graph (see the module docstring).

    Attributes:
        graph: the graph being built.
        kind: ``"function"``, ``"loop"`` or ``"pipeline"`` (for messages).
        parent: the enclosing context, if any.
        side_effects: outputs of nodes that must run at every execution.
        dequeues: placeholders filled from infeeds or iterators.
        segments: loops and pipelines traced directly in this context.
        applies: optimizer updates traced directly in this context.
    """

    graph: Graph
    kind: str = "function"
    parent: TraceContext | None = None
    side_effects: list[Symbol] = field(default_factory=list)
    dequeues: list[Dequeue] = field(default_factory=list)
    segments: list[Any] = field(default_factory=list)
    applies: list[Any] = field(default_factory=list)

    def add_side_effect(self, symbol: Symbol) -> None:
        self.side_effects.append(symbol)

    def trace_apply(self, optimizer: Any, pairs: list[tuple[Any, Any]]) -> Any:
        """Record an optimizer update with this trace's gradients (see ``optimizers``)."""
        from ipusim.compat.runtime.optimizers import symbolic_apply

        return symbolic_apply(optimizer, pairs)


def _stack() -> list[TraceContext]:
    # The graph's stack of update tracers: a Keras optimizer given traced gradients finds the
    # innermost trace there (ipusim.graph.ops.update.trace_apply).
    # Only this module pushes onto that stack, always TraceContexts; it is typed by its protocol.
    return update_tracers()  # type: ignore[return-value]


def current() -> TraceContext | None:
    """The innermost trace of this thread, or None when no device function is being traced."""
    stack = _stack()
    return stack[-1] if stack else None


def is_tracing() -> bool:
    return bool(_stack())


def enter(ctx: TraceContext) -> tuple[int, int]:
    """Start tracing into ``ctx`` (ops without symbolic inputs go to its graph too).

    Returns:
        The depths to hand to :func:`leave`.
    """
    stack, graphs = _stack(), _graph_stack()
    depths = (len(stack), len(graphs))
    stack.append(ctx)
    graphs.append(ctx.graph)
    return depths


def leave(depths: tuple[int, int]) -> None:
    """Stop tracing: restore both stacks to ``depths`` (also dropping anything a failed trace
    left above it, e.g. a ``tf.range`` loop whose body raised)."""
    del _stack()[depths[0] :]
    del _graph_stack()[depths[1] :]


def _graph_stack() -> list[Graph]:
    from ipusim.graph import graph as graph_module

    return graph_module._stack()


#: Opens the TF1 default graph when eager execution is disabled (``tf.compat.v1``; set by
#: :mod:`ipusim.compat.tf.v1_session`), else absent.
_graph_mode: dict[str, Callable[[], TraceContext]] = {}


def set_graph_mode(opener: Callable[[], TraceContext] | None) -> None:
    """Install (or with None remove) the function opening TF1's default graph."""
    _graph_mode.clear()
    if opener is not None:
        _graph_mode["open"] = opener


def current_or_graph_mode() -> TraceContext | None:
    """The innermost trace, or, outside traces with eager execution disabled, TF1's default
    graph (opened by this call when needed)."""
    ctx = current()
    if ctx is None and "open" in _graph_mode:
        return _graph_mode["open"]()
    return ctx


@contextmanager
def suspended() -> Iterator[None]:
    """Run host code outside every trace of this thread for the block (a TF1 session making a
    call its graph deferred, such as running an ``ipu_compiler.compile`` program)."""
    stack, graphs = _stack(), _graph_stack()
    saved = (list(stack), list(graphs), dict(_graph_mode))
    del stack[:], graphs[:]
    _graph_mode.clear()  # the call runs as eager TF2 code
    try:
        yield
    finally:
        stack[:], graphs[:] = saved[:2]
        _graph_mode.update(saved[2])


@contextmanager
def tracing(ctx: TraceContext) -> Iterator[TraceContext]:
    """Trace into ``ctx`` for the duration of the block."""
    depths = enter(ctx)
    try:
        yield ctx
    finally:
        leave(depths)


@dataclass
class ReplicaState:
    """Set while a replicated loop runs one replica's iteration (see ``loops``).

    Attributes:
        replicas: the replication factor.
        index: the replica being executed.
        outfeed: queue id -> per-replica flat values staged this iteration.
        gradients: apply handle -> per-replica gradients staged this iteration.
        host_updates: host-side updates (host embeddings) to apply once every replica ran the
            iteration: replicas run in lock step, so none reads another's update of the step.
    """

    replicas: int
    index: int = 0
    outfeed: dict[int, list[Any]] = field(default_factory=dict)
    gradients: dict[Any, list[Any]] = field(default_factory=dict)
    host_updates: list[Callable[[], None]] = field(default_factory=list)


def replica_state() -> ReplicaState | None:
    return getattr(_local, "replica", None)


@contextmanager
def _thread_value(attr: str, value: Any, default: Any) -> Iterator[Any]:
    """Set this thread's ``attr`` to ``value`` for the block (``default`` when it was unset)."""
    previous = getattr(_local, attr, default)
    setattr(_local, attr, value)
    try:
        yield value
    finally:
        setattr(_local, attr, previous)


def replicated(state: ReplicaState | None) -> AbstractContextManager[ReplicaState | None]:
    return _thread_value("replica", state, None)


def current_replicas() -> int:
    """The replication factor of the device run executing in this thread (1 outside runs)."""
    return getattr(_local, "replicas", 1)


def device_replicas(replicas: int) -> AbstractContextManager[int]:
    return _thread_value("replicas", replicas, 1)
