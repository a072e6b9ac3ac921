"""``tf.function``, ``strategy.run`` and ``ipu_compiler.compile``: device functions.

A device function is traced once per input signature: tensor arguments (numpy arrays) become
placeholders, dataset iterators become dequeues, and everything else (Python numbers, models,
optimizers) is passed as it is and baked into the trace, as TensorFlow does. The trace is cached
on the function and executed on every call (numerics: the Numba kernels through the graph
executor). Python side effects in the function (``print``) therefore happen when it is traced,
not at every call, exactly as in TensorFlow.

When the function runs on the IPU (``strategy.run(fn)``, a ``tf.function`` called inside
``strategy.scope()``, ``ipu_compiler.compile`` or a loop called eagerly) the run is also
simulated: its loops and pipelines are lowered for the configured system *before* anything
executes (a program that does not fit fails first) and simulated after, and the report is kept
as ``strategy.last_simulation`` (and :func:`ipusim.compat.runtime.simulation.last_simulation`).
A ``tf.function`` called outside any strategy runs the same way without the simulation.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import numpy as np

from ipusim.compat.runtime import context
from ipusim.compat.runtime.compiled import CompiledGraph
from ipusim.compat.runtime.context import Operation, TraceContext
from ipusim.compat.runtime.dispatch import as_list
from ipusim.compat.runtime.feeds import TracedIterator, check_input_dtype
from ipusim.compat.runtime.strings import is_string_array, strings_on_ipu
from ipusim.compat.runtime.tensor import to_eager
from ipusim.data.dataset import DatasetIterator
from ipusim.errors import ConfigurationError, InvalidTypeError
from ipusim.graph.graph import Graph, Symbol
from ipusim.graph.spec import TensorSpec, canonical_dtype
from ipusim.keras.engine.nest import flatten, pack_sequence_as

__all__ = ["Function", "compile", "function", "run_device_callable", "strategy_run"]

_ARRAY_TYPES = (np.ndarray, np.generic)

#: A function's traces: (device, the arguments' leaf keys) -> the trace and its tensor positions.
TraceCache: TypeAlias = "dict[tuple[bool, tuple[Any, ...]], tuple[TracedRun, list[int]]]"


class Function:
    """A Python function compiled for the device (what ``@tf.function`` returns).

    Args:
        python_function: the function.
        input_signature, experimental_compile, jit_compile, autograph, ...: accepted for
            compatibility; every function is compiled (traced) whatever they say.
    """

    def __init__(self, python_function: Callable[..., Any], **options: Any) -> None:
        if not callable(python_function):
            raise InvalidTypeError(
                f"tf.function: expected a callable, received {python_function!r}"
            )
        self._python_function = python_function
        self._options = options
        self._cache: TraceCache = {}
        functools.update_wrapper(self, python_function)

    @property
    def python_function(self) -> Callable[..., Any]:
        return self._python_function

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        return _BoundFunction(self, instance)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if context.is_tracing():  # called from traced code: inline into that trace
            return self._python_function(*args, **kwargs)
        from ipusim._scope import current_strategy

        strategy = current_strategy()
        if any(is_string_array(leaf) for leaf in flatten([list(args), kwargs])):
            if strategy is not None:
                name = getattr(self._python_function, "__name__", "?")
                raise strings_on_ipu(f"tf.function {name!r} called in an IPUStrategy scope")
            # TensorFlow runs string functions on the CPU; ipusim runs them eagerly on the host.
            return self._python_function(*args, **kwargs)
        return execute(
            self._python_function, args, kwargs, self._cache, strategy, strategy is not None
        )

    def __repr__(self) -> str:
        return f"<tf.function {getattr(self._python_function, '__name__', '?')}>"


class _BoundFunction(Function):
    """A ``tf.function`` defined as a method, bound to an instance."""

    def __init__(self, function: Function, instance: Any) -> None:
        self._python_function = functools.partial(function._python_function, instance)
        self._options = function._options
        # Traces of a method belong to the instance they were made for.
        cache = _method_caches.setdefault(function, weakref.WeakKeyDictionary())
        try:
            self._cache = cache.setdefault(instance, {})
        except TypeError:  # instance not weak-referenceable: no caching across calls
            self._cache = {}
        self.__name__ = getattr(function, "__name__", "function")


_method_caches: dict[Function, weakref.WeakKeyDictionary[Any, TraceCache]] = {}


def function(
    func: Callable[..., Any] | None = None,
    input_signature: Any = None,
    autograph: bool = True,
    experimental_compile: bool | None = None,
    jit_compile: bool | None = None,
    **options: Any,
) -> Any:
    """``tf.function``: compile ``func`` for the device (usable as ``@tf.function`` or
    ``@tf.function(experimental_compile=True)``)."""
    settings = dict(
        input_signature=input_signature,
        autograph=autograph,
        experimental_compile=experimental_compile,
        jit_compile=jit_compile,
        **options,
    )
    if func is None:
        return lambda f: Function(f, **settings)
    return Function(func, **settings)


# ---------------------------------------------------------------------- tracing
@dataclass(eq=False)
class TracedRun:
    """One trace of a device function for one input signature.

    Attributes:
        compiled: the executable graph.
        keep: the non-tensor arguments the trace baked in (kept alive so the cache key, which
            uses their ids, stays valid).
        plans: lowered programs of the run, per system (filled by the simulation).
    """

    compiled: CompiledGraph
    keep: list[Any] = field(default_factory=list)
    plans: dict[Any, Any] = field(default_factory=dict)

    @property
    def ctx(self) -> TraceContext:
        return self.compiled.ctx


def _leaf_key(leaf: Any) -> Any:
    if isinstance(leaf, _ARRAY_TYPES):
        array = np.asarray(leaf)
        return ("T", array.shape, array.dtype.name)
    if isinstance(leaf, bool | int | float | str | type(None)):
        return ("P", type(leaf).__name__, leaf)
    return ("O", id(leaf))


def _trace(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], device: bool
) -> tuple[TracedRun, list[int]]:
    flat = flatten([list(args), kwargs])
    name = getattr(fn, "__name__", None) or getattr(getattr(fn, "func", None), "__name__", "fn")
    graph = Graph(str(name))
    ctx = TraceContext(graph, "function")
    placeholders: list[Symbol] = []
    positions: list[int] = []
    traced_leaves: list[Any] = []
    keep: list[Any] = []
    with context.tracing(ctx):
        for i, leaf in enumerate(flat):
            if isinstance(leaf, _ARRAY_TYPES):
                array = np.asarray(leaf)
                if is_string_array(array):
                    raise strings_on_ipu(f"the device function {name!r}")
                dtype = canonical_dtype(array.dtype)
                if device:
                    check_input_dtype(dtype)
                sym = graph.placeholder(TensorSpec(array.shape, dtype))
                placeholders.append(sym)
                positions.append(i)
                traced_leaves.append(sym)
            elif isinstance(leaf, DatasetIterator):
                keep.append(leaf)
                traced_leaves.append(TracedIterator(leaf))
            else:
                keep.append(leaf)
                traced_leaves.append(leaf)
        call_args, call_kwargs = pack_sequence_as([list(args), kwargs], traced_leaves)
        outputs = fn(*call_args, **call_kwargs)
    for leaf in flatten(outputs):
        if isinstance(leaf, Symbol) and leaf.graph is not graph:
            raise InvalidTypeError(
                f"{name} returns {leaf.name}, a tensor of another graph (built outside the "
                "function, e.g. in a TF1 graph); compute it inside the function or pass its "
                "value as an input"
            )
        if isinstance(leaf, Symbol) and device and leaf.dtype == "float64":
            raise InvalidTypeError(
                "Unsupported data type for output: float64. Cast the result to float32 inside "
                "the function."
            )
        if (
            isinstance(leaf, Operation)
            and leaf.symbol is not None
            and leaf.symbol.graph is graph
            and all(s is not leaf.symbol for s in ctx.side_effects)
        ):
            ctx.add_side_effect(leaf.symbol)
    return TracedRun(CompiledGraph(ctx, outputs, placeholders), keep), positions


def execute(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    cache: TraceCache | None,
    strategy: Any,
    device: bool,
) -> Any:
    """Trace (or reuse the trace of) ``fn`` for these arguments, lower and run it, simulate it
    when it runs on the device, and return its outputs as EagerTensors."""
    from ipusim.compat.runtime import simulation
    from ipusim.session import local_replicas

    kwargs = dict(kwargs or {})
    flat = flatten([list(args), kwargs])
    key = (device, tuple(_leaf_key(leaf) for leaf in flat))
    entry = cache.get(key) if cache is not None else None
    if entry is None:
        traced, positions = _trace(fn, args, kwargs, device)
        entry = (traced, positions)
        if cache is not None:
            cache[key] = entry
    traced, positions = entry
    if device and _timing_only():
        return _simulate_only(traced, strategy)
    arrays = [np.asarray(flat[i]) for i in positions]
    session = simulation.prepare(traced) if device else None
    # The replicas whose numbers this process computes (its share under ipusim run --instances).
    replicas = local_replicas(session.replicas) if session is not None else 1
    with context.device_replicas(replicas):
        outputs = traced.compiled.run(arrays)
    if session is not None:
        report = session.simulate()
        if report is not None and strategy is not None:
            strategy.last_simulation = report
    return to_eager(outputs)


def _timing_only() -> bool:
    from ipusim.keras.engine.layer import timing_only

    return timing_only()


def _simulate_only(traced: TracedRun, strategy: Any) -> None:
    """A timing-only run (``IPUConfig.ipusim.numerics = False`` or ``IPUSIM_TIMING_ONLY=1``):
    lower and simulate the traced program without executing it. Every loop runs its static trip
    count; nothing is computed, so the run returns None, outfeeds receive nothing, no weight is
    updated (or allocated) and no dataset element is read.

    Raises:
        ValueError: a ``while_loop`` without ``maximum_iterations`` (its trip count depends on
            the data, which a timing-only run does not compute).
    """
    from ipusim.compat.runtime import simulation

    _set_static_trip_counts(traced.ctx)
    session = simulation.prepare(traced)
    report = session.simulate()
    if report is not None and strategy is not None:
        strategy.last_simulation = report
    return None


def _set_static_trip_counts(ctx: TraceContext) -> None:
    from ipusim.compat.runtime.loops import LoopProgram

    for segment in ctx.segments:
        if not isinstance(segment, LoopProgram):
            continue
        trips = segment.count if segment.count is not None else segment.maximum
        if trips is None:
            raise ConfigurationError(
                f"A timing-only run cannot simulate the {segment.name} loop: it stops on a "
                "tensor condition, whose value is not computed without numerics. Give the "
                "while_loop maximum_iterations=..., or run with numerics."
            )
        segment.iterations_run = int(trips)
        _set_static_trip_counts(segment.body.ctx)


# ---------------------------------------------------------------------- entry points
def run_device_callable(fn: Callable[[], Any], name: str) -> Any:
    """Run a zero-argument callable as one device program (a loop called eagerly)."""
    from ipusim._scope import current_strategy

    return execute(fn, (), {}, None, current_strategy(), True)


def strategy_run(strategy: Any, fn: Any, args: Any = (), kwargs: Any = None) -> Any:
    """``IPUStrategy.run``: run ``fn`` once on the IPU (see the module docstring).

    Raises:
        ValueError: ``fn`` is a plain Python function called eagerly (IPU TensorFlow needs a
            ``tf.function``).
        TypeError: a float64 input or output.
    """
    args = tuple(args) if isinstance(args, list | tuple) else (args,)
    kwargs = dict(kwargs or {})
    if context.is_tracing():  # strategy.run inside a tf.function: part of that trace
        return fn(*args, **kwargs)
    if not isinstance(fn, Function):
        raise ConfigurationError(
            "IPUStrategy.run(fn, ...) does not support eager execution: `fn` is a plain Python "
            f"function ({getattr(fn, '__name__', fn)!r}). Either convert `fn` into a tf.function "
            "(decorate it with @tf.function(experimental_compile=True)) or call strategy.run "
            "inside a tf.function."
        )
    return execute(fn._python_function, args, kwargs, fn._cache, strategy, True)


_compile_cache: weakref.WeakKeyDictionary[Callable[..., Any], TraceCache] = (
    weakref.WeakKeyDictionary()
)


def compile(computation: Callable[..., Any], inputs: Any = None) -> Any:  # noqa: A001
    """``ipu_compiler.compile``: run ``computation(*inputs)`` as one IPU program.

    Returns:
        The outputs as a list (a single value becomes a one-element list), or the operation
        when the computation returns nothing, as IPU TensorFlow's rewrite does.
    """
    if not callable(computation):
        raise InvalidTypeError(f"compile: `computation` must be callable, received {computation!r}")
    inputs = as_list(inputs)
    defer = getattr(context.current_or_graph_mode(), "defer", None)
    if defer is not None:  # a TF1 graph: each Session.run fetching it runs the IPU program
        return defer("compile", lambda *args: compile(computation, list(args)), inputs)
    if context.is_tracing():
        result = computation(*inputs)
    else:
        from ipusim._scope import current_strategy

        target = computation._python_function if isinstance(computation, Function) else computation
        try:
            cache = _compile_cache.setdefault(target, {})
        except TypeError:
            cache = None
        result = execute(target, tuple(inputs), {}, cache, current_strategy(), True)
    if result is None:
        return Operation("compile")
    return result if isinstance(result, Operation) else as_list(result)
