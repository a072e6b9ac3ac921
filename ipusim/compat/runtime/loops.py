"""On-device loops (``ipu.loops.repeat`` and ``while_loop``, IPU TensorFlow 2.5).

The body is traced once into its own graph: its arguments are the loop-carried values followed by
one element of the infeed (a dict element is passed as keyword arguments). Executing the loop
runs the body graph once per iteration, pulling a fresh infeed element each time and carrying the
body's results into the next iteration; outfeed enqueues and optimizer updates in the body take
effect as each iteration completes. Inside a traced function the loop is one node of the
function's graph (see :mod:`ipusim.compat.runtime.ops_control`); called outside any, it runs at
once as its own device program.

For the timing model a loop of n iterations is n steps of its body graph (one execution).

With replication (more configured IPUs than the program's shards), every iteration runs the body
once per replica, each on its own infeed element; outfeed elements gain a replica axis and the
replicas' gradients are averaged by the cross-replica optimizer before one update.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from ipusim.compat.runtime import context
from ipusim.compat.runtime.compiled import CompiledGraph
from ipusim.compat.runtime.context import Operation, TraceContext
from ipusim.compat.runtime.dispatch import as_list, is_int
from ipusim.compat.runtime.ops_control import call_program
from ipusim.compat.runtime.ops_outfeed import lookup_queue
from ipusim.errors import ConfigurationError, InvalidTypeError
from ipusim.graph.graph import Graph, Symbol, to_symbol
from ipusim.graph.spec import TensorSpec

__all__ = ["repeat", "while_loop"]


def repeat(
    n: int,
    body: Callable[..., Any],
    inputs: Any = None,
    infeed_queue: Any = None,
    use_while_v1: bool = True,
) -> Any:
    """Run ``body`` ``n`` times on the IPU.

    Args:
        n: number of iterations (a positive int).
        body: ``body(*inputs, *infeed_element)`` returning new values for ``inputs`` (same
            dtypes), optionally followed by operations such as an outfeed enqueue.
        inputs: initial loop-carried values (a list; a single tensor is accepted).
        infeed_queue: an ``IPUInfeedQueue`` dequeued once per iteration.
        use_while_v1: accepted for compatibility.

    Returns:
        The final loop-carried values: one tensor, a list of them, or an operation when there
        are none.
    """
    if not is_int(n) or n < 1:
        raise ConfigurationError(
            f"repeat: `n` must be a positive int (the iteration count), received {n!r}"
        )
    return _loop("repeat", body, inputs, infeed_queue, int(n), None, None)


def while_loop(
    condition: Callable[..., Any],
    body: Callable[..., Any],
    inputs: Any = None,
    infeed_queue: Any = None,
    maximum_iterations: int | None = None,
    use_while_v1: bool = True,
) -> Any:
    """Run ``body`` while ``condition(*inputs)`` is true (at most ``maximum_iterations`` times).

    ``condition`` receives the loop-carried values (not the infeed element) and returns a
    boolean scalar. See :func:`repeat` for ``body``, ``inputs`` and ``infeed_queue``.
    """
    if not callable(condition):
        raise InvalidTypeError(f"while_loop: `condition` must be callable, received {condition!r}")
    if maximum_iterations is not None and (
        not is_int(maximum_iterations) or maximum_iterations < 0
    ):
        raise ConfigurationError(
            f"while_loop: `maximum_iterations` must be None or an int >= 0, received "
            f"{maximum_iterations!r}"
        )
    maximum = None if maximum_iterations is None else int(maximum_iterations)
    return _loop("while_loop", body, inputs, infeed_queue, None, condition, maximum)


# ---------------------------------------------------------------------- tracing
def infeed_args(element: Any) -> tuple[list[Any], dict[str, Any]]:
    if isinstance(element, dict) and all(isinstance(k, str) for k in element):
        return [], dict(element)
    if isinstance(element, tuple):
        return list(element), {}
    return [element], {}


def _describe(values: list[Any]) -> str:
    return "[" + ", ".join(_spec_text(v) for v in values) + "]"


def _spec_text(value: Any) -> str:
    spec = getattr(value, "spec", None)
    if isinstance(spec, TensorSpec):
        return f"{spec.dtype}{list(spec.shape)}"
    return type(value).__name__


def _check_signature(
    body: Callable[..., Any], args: list[Any], kwargs: dict[str, Any], n_inputs: int, infeed: Any
) -> None:
    try:
        signature = inspect.signature(body)
    except (TypeError, ValueError):  # builtins: let the call itself fail
        return
    try:
        signature.bind(*args, **kwargs)
    except TypeError:
        needs = str(signature)
        if infeed is None:
            raise InvalidTypeError(
                f"Supplied loop body function cannot be called with the specified inputs. You "
                f"specified {n_inputs} inputs: {_describe(args[:n_inputs])}, but the loop body "
                f"needs {needs}. Make the body take one argument per input."
            ) from None
        extra = len(args) - n_inputs + len(kwargs)
        raise InvalidTypeError(
            f"Supplied loop body function cannot be called with the specified inputs. You "
            f"specified {n_inputs} inputs: {_describe(args[:n_inputs])} and {extra} additional "
            f"inputs from infeed, but the computation needs {needs}. The body takes the inputs "
            "first, then the infeed element (a dict element as keyword arguments)."
        ) from None


def _split_outputs(outputs: Any) -> tuple[list[Any], list[Operation]]:
    items = as_list(outputs)
    tensors: list[Any] = []
    operations: list[Operation] = []
    for item in items:
        if isinstance(item, Operation):
            operations.append(item)
        elif item is not None:
            if operations:
                raise ConfigurationError(
                    "IPU loop body must return zero or more Tensor values followed by zero or "
                    f"more Operations; it returned a tensor after an operation: {items!r}"
                )
            tensors.append(item)
    return tensors, operations


def _trace_body(
    name: str,
    body: Callable[..., Any],
    specs: list[TensorSpec],
    infeed_queue: Any,
    parent: TraceContext | None,
) -> tuple[TraceContext, list[Symbol], list[Any]]:
    graph = Graph(f"{name} body")
    ctx = TraceContext(graph, "loop", parent=parent)
    with context.tracing(ctx):
        carried = [graph.placeholder(TensorSpec(s.shape, s.dtype)) for s in specs]
        args: list[Any] = list(carried)
        kwargs: dict[str, Any] = {}
        if infeed_queue is not None:
            extra_args, kwargs = infeed_args(infeed_queue._dequeue())
            args += extra_args
        _check_signature(body, args, kwargs, len(specs), infeed_queue)
        try:
            outputs = body(*args, **kwargs)
        except ValueError as exc:
            if "belongs to graph" in str(exc):
                raise ConfigurationError(
                    f"The loop body uses a tensor computed outside the loop ({exc}). Pass such "
                    "values to the loop through `inputs`."
                ) from None
            raise
        if infeed_queue is not None and not infeed_queue.dequeued:
            raise ConfigurationError("The infeed queue has not been dequeued.")
        tensors, _ = _split_outputs(outputs)
        results = [to_symbol(t, graph, spec.dtype) for t, spec in zip(tensors, specs)]
    if len(tensors) != len(specs) or any(r.dtype != s.dtype for r, s in zip(results, specs)):
        raise InvalidTypeError(
            f"Mismatch between input types and output types for loop body: "
            f"{[s.dtype for s in specs]} vs {[_spec_text(t) for t in tensors]}. The body must "
            "return one value per input, with the input's dtype."
        )
    for result, spec in zip(results, specs):
        if tuple(result.shape) != tuple(spec.shape):
            raise ConfigurationError(
                f"The loop body changes the shape of a loop-carried value from {list(spec.shape)} "
                f"to {list(result.shape)}; loop-carried values must keep their shapes."
            )
    return ctx, carried, results


def _trace_condition(condition: Callable[..., Any], specs: list[TensorSpec]) -> CompiledGraph:
    graph = Graph("loop condition")
    ctx = TraceContext(graph, "loop")
    with context.tracing(ctx):
        carried = [graph.placeholder(TensorSpec(s.shape, s.dtype)) for s in specs]
        result = condition(*carried)
        result = to_symbol(result, graph) if not isinstance(result, Symbol) else result
    if result.shape != () or result.dtype != "bool":
        raise InvalidTypeError(
            f"while_loop: `condition` must return a boolean scalar, returned {_spec_text(result)}"
        )
    return CompiledGraph(ctx, result, carried)


def _loop(
    name: str,
    body: Callable[..., Any],
    inputs: Any,
    infeed_queue: Any,
    count: int | None,
    condition: Callable[..., Any] | None,
    maximum: int | None,
) -> Any:
    from ipusim.compat.runtime.feeds import IPUInfeedQueue

    if not callable(body):
        raise InvalidTypeError(f"{name}: `body` must be callable, received {body!r}")
    if infeed_queue is not None and not isinstance(infeed_queue, IPUInfeedQueue):
        raise InvalidTypeError(
            f"{name}: infeed_queue is not an instance of ipu_infeed_queue.IPUInfeedQueue "
            f"(received {type(infeed_queue).__name__})"
        )
    outer = context.current()
    if outer is None:  # called eagerly: run the loop as its own device program
        from ipusim.compat.runtime.function import run_device_callable

        return run_device_callable(
            lambda: _loop(name, body, inputs, infeed_queue, count, condition, maximum), name
        )
    values = [to_symbol(v, outer.graph) for v in as_list(inputs)]
    specs = [TensorSpec(v.shape, v.dtype) for v in values]
    body_ctx, carried, results = _trace_body(name, body, specs, infeed_queue, outer)
    body_graph = CompiledGraph(body_ctx, results, carried)
    test = None if condition is None else _trace_condition(condition, specs)
    program = LoopProgram(name, body_graph, count, test, maximum, infeed_queue)
    holder, outputs = call_program("ipu_repeat", program, values, specs)
    outer.add_side_effect(holder)
    outer.segments.append(program)
    if not outputs:
        return Operation(name, holder)
    return outputs[0] if len(outputs) == 1 else list(outputs)


# ---------------------------------------------------------------------- execution
class LoopProgram:
    """A traced loop: its body graph, how many times to run it, and what it reads.

    Attributes:
        name: ``"repeat"`` or ``"while_loop"``.
        body: the compiled body (carried values in, carried values out).
        count: iterations of ``repeat``; None for ``while_loop``.
        condition: the compiled condition of ``while_loop``.
        maximum: ``maximum_iterations`` of ``while_loop``.
        infeed: the infeed queue, if any.
        iterations_run: iterations of the last execution (the steps the timing model runs).
    """

    def __init__(
        self,
        name: str,
        body: CompiledGraph,
        count: int | None,
        condition: CompiledGraph | None,
        maximum: int | None,
        infeed: Any,
    ) -> None:
        self.name = name
        self.body = body
        self.count = count
        self.condition = condition
        self.maximum = maximum
        self.infeed = infeed
        self.iterations_run = 0

    @property
    def graph(self) -> Graph:
        return self.body.graph

    def _keep_going(self, done: int, carried: list[Any]) -> bool:
        if self.count is not None:
            return done < self.count
        if self.maximum is not None and done >= self.maximum:
            return False
        assert self.condition is not None  # a loop without a count is a while_loop
        return bool(self.condition.run(list(carried)))

    def execute(self, ctx: Any, initial: list[Any]) -> tuple[Any, ...]:
        """Run the loop from ``initial`` values; return the final ones (replica 0's)."""
        replicas = context.current_replicas()
        carried = [list(initial) for _ in range(replicas)]
        done = 0
        while self._keep_going(done, carried[0]):
            if replicas == 1:
                carried[0] = list(self.body.run(carried[0]))
            else:
                carried = self._replicated_iteration(carried, replicas)
            done += 1
        self.iterations_run = done
        return tuple(carried[0])

    def _replicated_iteration(self, carried: list[list[Any]], replicas: int) -> list[list[Any]]:
        state = context.ReplicaState(replicas)
        out = []
        with context.replicated(state):
            for index in range(replicas):
                state.index = index
                out.append(list(self.body.run(carried[index])))
        for queue_id, staged in state.outfeed.items():
            lookup_queue(queue_id)._flush_replicas(staged)
        for handle, staged in state.gradients.items():
            handle.apply_replicated(staged)
        for update in state.host_updates:
            update()
        return out


# ---------------------------------------------------------------------- tf.range loops
def traced_range_loop(values: np.ndarray) -> Any:
    """Iterate ``tf.range(...)`` in a traced function: an on-device loop, as autograph makes.

    The Python loop body runs once, traced into a loop-body graph whose argument is the
    iteration's value; the loop node then runs that body once per element. The body may use
    infeeds, iterators, optimizers and outfeeds (one enqueue per loop, as in TensorFlow), and
    values it computes stay inside the loop.

    ``break`` taken while tracing (a Python condition, as autograph evaluates it once at trace
    time) ends the loop after the iteration it is in: the loop runs its body once. A ``break``
    steered by a traced tensor cannot be traced (its truth value is unknown; the tensor says so
    and points to ``while_loop``).
    """
    outer = context.current()
    assert outer is not None  # RangeTensor.__iter__ iterates this only while tracing
    count = int(values.shape[0]) if values.ndim == 1 else 0
    if values.ndim != 1:
        raise InvalidTypeError(
            f"tf.range produced a {values.ndim}-d value; only 1-d ranges iterate"
        )
    if count == 0:
        return
    start = values[0]
    delta = values[1] - values[0] if count > 1 else values.dtype.type(1)
    if count > 2 and not np.allclose(np.diff(values), delta):
        raise InvalidTypeError(
            "iterating a traced tensor that is not an arithmetic progression is not supported; "
            "iterate tf.range(...) itself"
        )
    graph = Graph("range loop body")
    ctx = TraceContext(graph, "loop", parent=outer)
    depths = context.enter(ctx)
    completed = broke = False
    try:
        counter = graph.placeholder(TensorSpec((), "int32"), "iteration")
        if values.dtype.kind in "iu" and start == 0 and delta == 1:
            value = counter if values.dtype == np.int32 else _cast(counter, values.dtype.name)
        else:
            scaled = _cast(counter, values.dtype.name) * values.dtype.type(delta)
            value = scaled + values.dtype.type(start)
        yield value
        completed = True
    except GeneratorExit:
        # The Python loop left at `break` (CPython closes the range generator as the loop
        # exits): the traced iteration is the only one that runs.
        broke = True
    finally:
        context.leave(depths)
    if not (completed or broke):
        return
    if broke:
        count = 1
    with context.tracing(ctx):
        following = counter + 1
    body = CompiledGraph(ctx, [following], [counter])
    program = LoopProgram("range loop", body, count, None, None, _first_infeed(ctx))
    initial = outer.graph.constant(0, dtype="int32")
    holder, _ = call_program("ipu_repeat", program, [initial], [TensorSpec((), "int32")])
    outer.add_side_effect(holder)
    outer.segments.append(program)


def _cast(x: Symbol, dtype: str) -> Symbol:
    from ipusim.graph.ops.math import cast

    return cast(x, dtype)


def _first_infeed(ctx: TraceContext) -> Any:
    from ipusim.compat.runtime.feeds import IPUInfeedQueue

    for dequeue in ctx.dequeues:
        owner = getattr(dequeue.source, "owner", None)
        if isinstance(owner, IPUInfeedQueue):
            return owner
    return None
