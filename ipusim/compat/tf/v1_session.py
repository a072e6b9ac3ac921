"""TF1 graphs and sessions (``tf.compat.v1.Graph``, ``placeholder``, ``Session``,
``global_variables_initializer``) on ipusim's tracing runtime.

A TF1 :class:`Graph` is a trace kept open: inside ``with graph.as_default():`` every op builds a
node of its graph instead of computing (as inside a ``tf.function``), ``placeholder`` adds an
input, and variables are read as graph tensors. :meth:`Session.run` executes the part of the
graph the fetches need (the graph executor, Numba kernels) with the ``feed_dict`` values for its
placeholders, and returns NumPy values in the fetches' structure (None for an operation). An
optimizer's ``minimize`` in the graph adds its update, which runs when the session fetches it.

TF1's variable life cycle holds: a variable of the graph (created while it is the default, or
read by it) must be initialised by running ``global_variables_initializer()`` (or
``variables_initializer``) in the session before a fetch reads it (else
:class:`FailedPreconditionError`); running the initializer again restores the initial values.
Differences from TensorFlow, by design: the variables' values live on the variables, so two
sessions of one graph share them (TF keeps a copy per session), and an initializer restores the
value a variable was created with (TF draws a random initializer again). After
``disable_eager_execution()`` / ``disable_v2_behavior()`` the first TF1 graph call
(``placeholder``, ``tf.Variable`` or ``ipu_compiler.compile`` outside any trace, ``Session``,
an initializer) opens a global default graph, as TF1's implicit one; from then on the script's
ops build that graph. Estimators and Keras are unaffected (they call none of these on the host),
and ``ipusim run`` restores eager execution when the script ends.
``ipu_compiler.compile`` inside a TF1 graph returns an op the session runs as the IPU program
it is (the TF2 device path: traced, executed and simulated, with a report) each time a run
fetches it, its placeholder inputs replaced by their fed values; its outputs (``result[i]``)
are fetched from it, not used by other graph ops. ``outfeed_queue.dequeue()`` in the graph
likewise dequeues on the host when fetched. IPU loops or infeeds built directly into the graph
(outside ``ipu_compiler.compile``) are refused.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypedDict

import numpy as np

from ipusim.compat.runtime import context
from ipusim.compat.runtime.compiled import CompiledGraph
from ipusim.compat.runtime.context import Operation, TraceContext
from ipusim.compat.tf.v1_graph import FailedPreconditionError
from ipusim.errors import (
    IncompatibleStateError,
    InputDataError,
    InvalidTypeError,
    UnsupportedError,
)
from ipusim.graph.graph import Graph as _IRGraph
from ipusim.graph.graph import Node, Symbol
from ipusim.graph.spec import TensorSpec, canonical_dtype
from ipusim.keras.engine.nest import flatten, pack_sequence_as

__all__ = [
    "FailedPreconditionError",
    "Graph",
    "Session",
    "disable_eager_execution",
    "enable_eager_execution",
    "global_variables",
    "global_variables_initializer",
    "placeholder",
    "reset_default_graph",
    "trainable_variables",
    "variables_initializer",
]

_graph_ids = itertools.count()
#: IR graph -> its TF1 Graph (what get_default_graph returns inside ``as_default``).
_TF1_GRAPHS: weakref.WeakKeyDictionary[_IRGraph, Graph] = weakref.WeakKeyDictionary()


class _State(TypedDict):
    """Graph mode: whether eager execution is disabled, the global default graph (opened by the
    first TF1 graph call then) and the trace depths to restore when it is closed."""

    eager_disabled: bool
    default: Graph | None
    depths: tuple[int, int] | None


_STATE: _State = {"eager_disabled": False, "default": None, "depths": None}


class _Deferred(Operation):
    """A host call a TF1 graph records (running an ``ipu_compiler.compile`` program, dequeuing
    an outfeed) and a session makes at each run that fetches it, with placeholder inputs
    replaced by their fed values. Its result is a list (``result[i]`` fetches one item)."""

    def __init__(self, name: str, call: Any, inputs: list[Any]) -> None:
        super().__init__(name)
        self.call = call
        self.inputs = list(inputs)

    def __getitem__(self, index: int) -> _DeferredItem:
        return _DeferredItem(self, index)

    def run(self, feeds: dict[Symbol, np.ndarray]) -> Any:
        for value in self.inputs:
            if isinstance(value, Symbol) and value not in feeds:
                raise InputDataError(
                    f"{self.name}: its input {value.name} must be a placeholder fed by "
                    "feed_dict (graph tensors computed by the session cannot be inputs of "
                    "an IPU program in ipusim)"
                )
        args = [feeds[v] if isinstance(v, Symbol) else v for v in self.inputs]
        with context.suspended():
            return self.call(*args)


class _DeferredItem:
    """``deferred[index]``: one output of a deferred call."""

    def __init__(self, parent: _Deferred, index: int) -> None:
        self.parent, self.index = parent, index

    def __repr__(self) -> str:
        return f"<{self.parent.name} output {self.index}>"


class _GraphContext(TraceContext):
    """The trace of a TF1 graph: also lists the variables created while it is the default, and
    records the host calls sessions make (:attr:`defer`)."""

    #: ``defer(name, call, inputs)``: a fetchable op that runs ``call(*inputs)`` outside the
    #: graph at each session run.
    defer = _Deferred

    def __init__(self, graph: _IRGraph) -> None:
        super().__init__(graph, "tf1_graph")
        self.created_variables: list[Any] = []


class Graph:
    """``tf.Graph`` / ``tf.compat.v1.Graph``: a TF1 graph (see the module docstring)."""

    def __init__(self) -> None:
        self._ctx = _GraphContext(_IRGraph(f"tf1_graph_{next(_graph_ids)}"))
        _TF1_GRAPHS[self._ctx.graph] = self
        self.finalized = False

    @contextmanager
    def as_default(self) -> Iterator[Graph]:
        """Build ops into this graph for the duration of the block."""
        depths = context.enter(self._ctx)
        try:
            yield self
        finally:
            context.leave(depths)

    def variables(self) -> list[Any]:
        """The graph's variables: created while it was the default, or read by it."""
        found = {id(v): v for v in self._ctx.created_variables}
        found.update((id(v), v) for v in self._ctx.graph.variables)
        return list(found.values())

    def get_operations(self) -> list[Any]:
        """The nodes built so far (ipusim's graph nodes)."""
        return list(self._ctx.graph.nodes)

    def finalize(self) -> None:
        self.finalized = True

    def __repr__(self) -> str:
        return f"<tf.Graph {self._ctx.graph.name}: {len(self._ctx.graph.nodes)} nodes>"


def tf1_graph_of(ir_graph: _IRGraph | None) -> Graph | None:
    """The TF1 Graph whose trace ``ir_graph`` is, if any."""
    return None if ir_graph is None else _TF1_GRAPHS.get(ir_graph)


def disable_eager_execution() -> None:
    """``tf.compat.v1.disable_eager_execution``: TF1 graph calls outside ``as_default`` use a
    global default graph, opened by the first of them (Keras and tf.function are unaffected)."""
    _STATE["eager_disabled"] = True
    context.set_graph_mode(lambda: _default_graph("TF1 graph mode")._ctx)


def enable_eager_execution(*args: Any, **kwargs: Any) -> None:
    """``tf.compat.v1.enable_eager_execution``: TF1 graph calls need ``Graph.as_default`` again
    (and the global default graph is closed)."""
    del args, kwargs
    reset_default_graph()
    _STATE["eager_disabled"] = False
    context.set_graph_mode(None)


def _default_graph(caller: str) -> Graph:
    """The TF1 graph being built: the innermost ``as_default`` one, or the global default one
    when eager execution is disabled.

    Raises:
        IncompatibleStateError: (a RuntimeError) in eager code (TensorFlow's message).
    """
    ctx = context.current()
    if isinstance(ctx, _GraphContext):
        return _TF1_GRAPHS[ctx.graph]
    if ctx is None and _STATE["eager_disabled"]:
        default = _STATE["default"]
        if default is None:
            default = _STATE["default"] = Graph()
            _STATE["depths"] = context.enter(default._ctx)
        return default
    raise IncompatibleStateError(f"{caller} is not compatible with eager execution.")


def reset_default_graph() -> None:
    """``tf.compat.v1.reset_default_graph``: forget the global default graph."""
    if _STATE["depths"] is not None:
        context.leave(_STATE["depths"])
    _STATE["default"], _STATE["depths"] = None, None


def placeholder(dtype: Any, shape: Any = None, name: str | None = None) -> Symbol:
    """``tf.compat.v1.placeholder(dtype, shape, name)``: an input fed by ``feed_dict``.

    Raises:
        IncompatibleStateError: (a RuntimeError) outside a TF1 graph (eager code), as TF.
        UnsupportedError: ``shape=None`` (a tensor of unknown rank, which ipusim's graphs do not
            hold): give the shape, with None for unknown dimensions.
    """
    graph = _default_graph("tf.placeholder()")
    if shape is None:
        raise UnsupportedError(
            "tf.compat.v1.placeholder(shape=None): tensors of unknown rank are not simulated by "
            "ipusim; give the shape, with None for the dimensions that vary (e.g. [None, 784])"
        )
    dims = tuple(None if d is None or d == -1 else int(d) for d in shape)
    label = name or "Placeholder"
    return graph._ctx.graph.placeholder(TensorSpec(dims, canonical_dtype(dtype)), label)


class _Initializer(Operation):
    """An initializer op: running it assigns each variable its initial value."""

    def __init__(self, graph: Graph, variables: list[Any]) -> None:
        super().__init__("init")
        self.graph = graph
        self.initial = [(v, np.array(v.numpy(), copy=True)) for v in variables]

    def run_in(self, session: Session) -> None:
        for variable, value in self.initial:
            variable.assign(value)
            session._initialised.add(id(variable))


def _graph_or_eager(caller: str) -> Graph | None:
    """The TF1 graph being built, or None in eager TF2 code (no trace, eager enabled)."""
    if context.current() is None and not _STATE["eager_disabled"]:
        return None
    return _default_graph(caller)


def global_variables_initializer() -> Operation:
    """``tf.compat.v1.global_variables_initializer()``: initialises the graph's variables (in
    eager code a no-op, as TensorFlow's: eager variables start initialised)."""
    graph = _graph_or_eager("tf.global_variables_initializer()")
    if graph is None:
        return Operation("global_variables_initializer")
    return _Initializer(graph, graph.variables())


def variables_initializer(var_list: Any, name: str = "init") -> Operation:
    """``tf.compat.v1.variables_initializer(var_list)``: initialises the variables given (a
    no-op in eager code)."""
    graph = _graph_or_eager("tf.variables_initializer()")
    return Operation(name) if graph is None else _Initializer(graph, list(var_list))


def global_variables() -> list[Any]:
    """``tf.compat.v1.global_variables()``: the default graph's variables (see
    :meth:`Graph.variables`); ``[]`` in eager code, which keeps no collections."""
    graph = _graph_or_eager("tf.global_variables()")
    return [] if graph is None else graph.variables()


def trainable_variables() -> list[Any]:
    """``tf.compat.v1.trainable_variables()``: the default graph's trainable variables."""
    return [v for v in global_variables() if v.trainable]


#: A compiled fetch: the ids of the fetched symbols and of the fed placeholders.
_RunKey = tuple[tuple[int, ...], tuple[int, ...]]


class Session:
    """``tf.compat.v1.Session(target='', graph=None, config=None)`` (see the module docstring).

    Raises:
        UnsupportedError: a ``target`` (a remote TensorFlow server).
    """

    def __init__(self, target: str = "", graph: Graph | None = None, config: Any = None) -> None:
        if target:
            raise UnsupportedError(
                f"tf.compat.v1.Session(target={target!r}): remote TensorFlow servers are not "
                "simulated by ipusim; use target='' (in process)"
            )
        self.graph = graph if graph is not None else _default_graph("tf.Session()")
        self.config = config
        self._initialised: set[int] = set()
        self._compiled: dict[_RunKey, tuple[CompiledGraph, list[Node]]] = {}
        self._closed = False
        self._scope: Any = None

    def __enter__(self) -> Session:
        self._scope = self.graph.as_default()
        self._scope.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        scope, self._scope = self._scope, None
        if scope is not None:
            scope.__exit__(*exc)
        self.close()

    def close(self) -> None:
        self._closed = True
        self._compiled.clear()

    def run(
        self, fetches: Any, feed_dict: Any = None, options: Any = None, run_metadata: Any = None
    ) -> Any:
        """Execute what ``fetches`` need with ``feed_dict``; returns their values (see the
        module docstring).

        Raises:
            IncompatibleStateError: (a RuntimeError) the session is closed.
            TypeError: a fetch is not a tensor, operation or variable of this session's graph.
            InputDataError: a needed placeholder is not fed, or a fed value does not fit it.
            FailedPreconditionError: a fetch reads a variable that is not initialised.
        """
        if self._closed:
            raise IncompatibleStateError("Attempted to use a closed Session.")
        leaves = flatten(fetches)
        feeds = self._feeds(feed_dict)
        hosted = self._host_calls(leaves, feeds)
        symbols = [None if id(leaf) in hosted else self._symbol(leaf) for leaf in leaves]
        wanted = [s for s in symbols if s is not None]
        values = iter(self._execute(wanted, feeds) if wanted else [])
        out = [
            hosted[id(leaf)] if id(leaf) in hosted else None if s is None else _host(next(values))
            for leaf, s in zip(leaves, symbols, strict=True)
        ]
        if isinstance(fetches, list | tuple | dict):
            return pack_sequence_as(fetches, out)
        return out[0]

    # ------------------------------------------------------------------ helpers
    def _host_calls(self, leaves: list[Any], feeds: dict[Symbol, np.ndarray]) -> dict[int, Any]:
        """Run the initializers and deferred calls among the fetches (each call once, in fetch
        order); returns fetch id -> its value."""
        results: dict[int, Any] = {}
        done: dict[int, Any] = {}
        for leaf in leaves:
            if isinstance(leaf, _Initializer):
                leaf.run_in(self)
                results[id(leaf)] = None
                continue
            call = leaf.parent if isinstance(leaf, _DeferredItem) else leaf
            if not isinstance(call, _Deferred):
                continue
            if id(call) not in done:
                done[id(call)] = call.run(feeds)
            value = done[id(call)]
            if isinstance(leaf, _DeferredItem):
                value = value[leaf.index]
            elif isinstance(value, Operation):
                value = None  # an operation fetches as None
            results[id(leaf)] = _host_nest(value)
        return results

    def _symbol(self, leaf: Any) -> Symbol | None:
        graph = self.graph._ctx.graph
        if isinstance(leaf, _Initializer):
            return None
        if isinstance(leaf, Operation):
            return leaf.symbol if leaf.symbol is not None and leaf.symbol.graph is graph else None
        if getattr(leaf, "_is_ipusim_variable", False):
            return graph.read_variable(leaf)
        if isinstance(leaf, Symbol):
            if leaf.graph is not graph:
                raise InvalidTypeError(
                    f"Fetch argument {leaf!r} cannot be interpreted as a Tensor. (Tensor "
                    f"{leaf.name} is not an element of this graph.)"
                )
            return leaf
        raise InvalidTypeError(
            f"Fetch argument {leaf!r} has invalid type {type(leaf).__name__}, must be a tensor, "
            "an operation or a variable of the session's graph (tensor names are not simulated)"
        )

    def _feeds(self, feed_dict: Any) -> dict[Symbol, np.ndarray]:
        feeds: dict[Symbol, np.ndarray] = {}
        for key, value in dict(feed_dict or {}).items():
            if not isinstance(key, Symbol) or key.graph is not self.graph._ctx.graph:
                raise InvalidTypeError(
                    f"Cannot interpret feed_dict key {key!r} as a Tensor of this session's graph"
                )
            array = np.asarray(value, dtype=key.dtype)
            spec = key.spec.shape
            if len(spec) != array.ndim or any(
                d is not None and d != n for d, n in zip(spec, array.shape, strict=True)
            ):
                raise InputDataError(
                    f"Cannot feed value of shape {array.shape} for Tensor {key.name}, which has "
                    f"shape {tuple(spec)}"
                )
            feeds[key] = array
        return feeds

    def _execute(self, wanted: list[Symbol], feeds: dict[Symbol, np.ndarray]) -> list[Any]:
        graph = self.graph._ctx.graph
        key = (tuple(id(s) for s in wanted), tuple(id(s) for s in feeds))
        if key not in self._compiled:
            needed = graph.nodes_between(wanted)
            self._check_needed(needed, feeds)
            view = TraceContext(graph, "session")
            fed = list(feeds)
            self._compiled[key] = (CompiledGraph(view, list(wanted), fed), needed)
        compiled, needed = self._compiled[key]
        self._check_initialised(needed)
        outputs: list[Any] = compiled.run([feeds[p] for p in compiled.arg_placeholders])
        return outputs

    def _check_needed(self, needed: list[Node], feeds: dict[Symbol, np.ndarray]) -> None:
        if self.graph._ctx.segments or self.graph._ctx.dequeues:
            raise UnsupportedError(
                "Session.run: the graph holds IPU loops or infeeds; running IPU programs from a "
                "TF1 session is not simulated by ipusim. Run them from TF2 code: IPUStrategy.run "
                "of a tf.function"
            )
        for node in needed:
            if node.op.name == "placeholder" and node.outputs[0] not in feeds:
                sym = node.outputs[0]
                raise InputDataError(
                    f"You must feed a value for placeholder tensor "
                    f"{node.attrs.get('name') or sym.name!r} with dtype {sym.dtype} and shape "
                    f"{tuple(sym.shape)}"
                )

    def _check_initialised(self, needed: list[Node]) -> None:
        ours = {id(v) for v in self.graph.variables()}
        for node in needed:
            if node.op.name != "variable":
                continue
            variable = node.attrs["variable"]
            if id(variable) in ours and id(variable) not in self._initialised:
                raise FailedPreconditionError(
                    f"Attempting to use uninitialized value {variable.name.split(':')[0]}: run "
                    "tf.compat.v1.global_variables_initializer() in the session first"
                )


def _host_nest(value: Any) -> Any:
    """:func:`_host` of every array in ``value`` (a deferred call's result)."""
    if isinstance(value, np.ndarray | np.generic):
        return _host(value)
    if isinstance(value, list | tuple):
        return type(value)(_host_nest(v) for v in value)
    if isinstance(value, dict):
        return {k: _host_nest(v) for k, v in value.items()}
    return None if isinstance(value, Operation) else value


def _host(value: Any) -> Any:
    """A fetched value as TF1 returns it: a NumPy array, or a NumPy scalar for rank 0."""
    # a copy: a variable's fetched value must not follow its later in-place updates
    array = np.array(np.asarray(value), copy=True)
    return array[()] if array.ndim == 0 else array
