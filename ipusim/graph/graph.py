"""The graph IR: nodes in post-order, symbolic values, and the layer invocations that made them.

A :class:`Graph` is built by calling op functions on :class:`Symbol` values. Nodes are appended in
the order they are created, which is a valid execution (post-) order. Every node is tagged with the
layer invocation and the phase (``"fwd"``, ``"bwd"``, ...) that was active when it was created, so
the numerics path and the timing path read the same, fully attributed program.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Self, TypeAlias, TypeVar, cast

import numpy as np

from ipusim.errors import ConfigurationError, IncompatibleStateError, InvalidTypeError
from ipusim.graph.op import VARIADIC, Op, OpCost, get_op
from ipusim.graph.spec import FLOAT_DTYPES, TensorSpec, canonical_dtype
from ipusim.graph.variable import Variable

#: Phases a node can belong to.
PHASES = ("fwd", "bwd", "loss", "update")

#: What an op function accepts as an input: a :class:`Symbol`, a deferred (Keras) tensor, a
#: :class:`Variable`, a NumPy array or a Python scalar; :func:`to_symbol` converts it.
TensorLike: TypeAlias = object


_T = TypeVar("_T", bound="TensorOperators")


def _operators(op: str) -> tuple[Callable[[_T, TensorLike], _T], Callable[[_T, TensorLike], _T]]:
    """The Python operator ``op(self, other)`` and its reflection ``op(other, self)`` (``op``: as
    :meth:`TensorOperators._binary` takes it)."""

    def operator(self: _T, other: TensorLike) -> _T:
        return self._binary(op, other)

    def reflected(self: _T, other: TensorLike) -> _T:
        return self._binary(op, other, True)

    return operator, reflected


def _comparison(kind: str) -> Callable[[_T, TensorLike], _T]:
    """The Python operator that applies the comparison op of ``kind`` (see ``_compare``)."""

    def compare(self: _T, other: TensorLike) -> _T:
        return self._compare(kind, other)

    return compare


class TensorOperators:
    """Shape properties and Python operators for symbolic tensors that carry a ``spec``.

    The operators build op nodes (``x + 1``, ``a @ b``); shared by graph Symbols and Keras'
    functional-construction tensors.
    """

    __slots__ = ()
    spec: TensorSpec
    # NumPy defers to these operators (``array + x`` calls ``x.__radd__``) instead of building an
    # object array of symbolic elements; TensorFlow's tensors get the same from __array_priority__.
    __array_ufunc__ = None

    @property
    def shape(self) -> tuple[int | None, ...]:
        return self.spec.shape

    @property
    def dtype(self) -> str:
        return self.spec.dtype

    @property
    def ndim(self) -> int:
        return self.spec.rank

    def _result(self, value: object) -> Self:
        """Op functions give back ``self``'s type (a Symbol, or the hook's Keras tensor)."""
        return cast(Self, value)

    def _binary(self, op: str, other: TensorLike, reverse: bool = False) -> Self:
        """``op(self, other)``, or ``op(other, self)`` when ``reverse``; ``op`` names a function of
        :mod:`ipusim.graph.ops.math`, or of another op module as ``"module.function"``."""
        from ipusim.graph import ops

        module, _, name = op.rpartition(".")
        fn = getattr(getattr(ops, module or "math"), name)
        return self._result(fn(other, self) if reverse else fn(self, other))

    __add__, __radd__ = _operators("add")
    __sub__, __rsub__ = _operators("subtract")
    __mul__, __rmul__ = _operators("multiply")
    __truediv__, __rtruediv__ = _operators("divide")
    __matmul__, __rmatmul__ = _operators("nn.matmul")

    def __neg__(self) -> Self:
        from ipusim.graph.ops import math as m

        return self._result(m.negative(self))

    def __pos__(self) -> Self:
        return self

    def __abs__(self) -> Self:
        from ipusim.graph.ops import math as m

        return self._result(m.abs(self))

    __pow__, __rpow__ = _operators("operators.power")
    __floordiv__, __rfloordiv__ = _operators("operators.floordiv")
    __mod__, __rmod__ = _operators("operators.mod")

    def __getitem__(self, key: object) -> Self:
        """``x[key]``: TensorFlow's basic indexing (ints, slices, ``...``, ``tf.newaxis``)."""
        from ipusim.graph.ops.operators import getitem

        return self._result(getitem(self, key))

    def __iter__(self) -> Iterator[Self]:
        """``for row in x`` / ``a, b = x``: the slices along the first axis, as TensorFlow
        unstacks a tensor whose first dimension is known; otherwise TensorFlow's TypeError."""
        if not self.shape or self.shape[0] is None:
            raise InvalidTypeError(
                "Cannot iterate over a symbolic tensor with unknown first dimension (shape "
                f"{self.shape}); index it (x[0], x[:, 1]) instead"
            )
        return iter([self[i] for i in range(self.shape[0])])

    # Ordering comparisons build elementwise bool nodes (``x > 0``), as TensorFlow's tensors do;
    # ``==`` and ``!=`` keep Python's identity meaning (the IR looks symbols up in containers),
    # so elementwise equality is ``tf.equal`` / ``tf.not_equal``. Python reflects ``0 < x`` to
    # ``x > 0``. The comparison op is registered by whoever provides it (the compat runtime).
    def _compare(self, kind: str, other: TensorLike) -> Self:
        if _comparison_op is None:
            raise InvalidTypeError(
                f"'{kind}' comparison of symbolic tensors needs ipusim.compat (import "
                "ipusim.compat.tf); or compare with tf.less / tf.greater"
            )
        return self._result(apply(_comparison_op, self, other, comparison=kind))

    __lt__ = _comparison("less")
    __le__ = _comparison("less_equal")
    __gt__ = _comparison("greater")
    __ge__ = _comparison("greater_equal")
    # ``a & b`` / ``a | b`` of bool tensors (masks built from comparisons), as TensorFlow's.
    __and__ = __rand__ = _comparison("logical_and")
    __or__ = __ror__ = _comparison("logical_or")
    __hash__ = object.__hash__


class Symbol(TensorOperators):
    """A symbolic tensor: output ``index`` of ``node`` in ``graph``. Has a shape and dtype, no data."""

    __slots__ = ("graph", "node", "index", "spec")

    def __init__(self, graph: Graph, node: Node, index: int, spec: TensorSpec) -> None:
        self.graph = graph
        self.node = node
        self.index = index
        self.spec = spec

    @property
    def name(self) -> str:
        return f"{self.node.name}:{self.index}"

    def __repr__(self) -> str:
        return f"<Symbol {self.name} shape={self.shape} dtype={self.dtype}>"

    def __bool__(self) -> bool:
        raise InvalidTypeError(
            f"The truth value of the traced tensor {self.name} is not known while the function "
            "is traced, so it cannot steer Python's `if`, `while` or `break`. For a loop that "
            "stops on a tensor condition use ipu.loops.while_loop(condition, body, inputs); "
            "to choose values, compute both and combine them arithmetically."
        )


@dataclass(eq=False)
class Node:
    """One op application in a graph.

    Attributes:
        id: position in ``graph.nodes`` (post-order).
        op: the registered op.
        inputs: input symbols (from the same graph).
        attrs: op attributes (keyword arguments of the op).
        outputs: output symbols.
        layer: name of the layer whose call created the node, if any.
        invocation: index into ``graph.invocations`` of that layer call, if any.
        phase: one of :data:`PHASES`.
    """

    id: int
    op: Op
    inputs: tuple[Symbol, ...]
    attrs: dict[str, Any]
    outputs: tuple[Symbol, ...] = ()
    layer: str | None = None
    invocation: int | None = None
    phase: str = "fwd"

    @property
    def name(self) -> str:
        prefix = f"{self.layer}/" if self.layer else ""
        return f"{prefix}{self.op.name}_{self.id}"

    @property
    def in_specs(self) -> tuple[TensorSpec, ...]:
        return tuple(s.spec for s in self.inputs)

    @property
    def out_specs(self) -> tuple[TensorSpec, ...]:
        return tuple(s.spec for s in self.outputs)

    def cost(self) -> OpCost:
        """Cost inputs of this node (its specs must be fully defined)."""
        return self.op.cost(self.in_specs, self.out_specs, **self.attrs)

    def __repr__(self) -> str:
        ins = ", ".join(s.name for s in self.inputs)
        return f"<Node {self.name}({ins}) phase={self.phase}>"


@dataclass(eq=False)
class Invocation:
    """One call of a layer while the graph was built.

    Attributes:
        layer: the layer object (anything with a ``name``).
        node_index: how many times this layer had been called in this graph before.
        inputs: the tensor arguments, flattened.
        outputs: the results, flattened.
        parent: index of the enclosing invocation (a layer called inside another layer), or None.
        pipeline_stage: the stage of the ``PipelineStage`` scope the call was made in, or None.
    """

    layer: object
    node_index: int
    inputs: list[Symbol] = field(default_factory=list)
    outputs: list[Symbol] = field(default_factory=list)
    parent: int | None = None
    pipeline_stage: int | None = None

    @property
    def name(self) -> str:
        return str(getattr(self.layer, "name", type(self.layer).__name__))


class _Tag(NamedTuple):
    layer: str | None
    invocation: int | None
    phase: str


class Graph:
    """A graph of op nodes in post-order.

    Attributes:
        nodes: every node, in creation (= execution) order.
        placeholders: the input symbols, in the order they were declared.
        invocations: every layer call recorded while building.
        name: label used in traces and error messages.
    """

    def __init__(self, name: str = "graph") -> None:
        self.name = name
        self.nodes: list[Node] = []
        self.placeholders: list[Symbol] = []
        self.invocations: list[Invocation] = []
        self._variable_reads: dict[int, Symbol] = {}
        self._tags: list[_Tag] = [_Tag(None, None, "fwd")]
        self._call_counts: dict[int, int] = {}
        #: State updates applied after a training step: (variable, symbol of its new value).
        self.updates: list[tuple[Variable, Symbol]] = []
        #: Outputs of nodes that must run at every execution though nothing reads them (an
        #: outfeed enqueue in a Keras layer's call).
        self.side_effects: list[Symbol] = []
        self._autocast: list[str | None] = [None]

    # ------------------------------------------------------------------ building
    def add_node(self, op: Op, inputs: Sequence[Symbol], attrs: dict[str, Any]) -> Node:
        """Infer the output specs of ``op`` on ``inputs`` and append the node."""
        specs = op.infer(*(s.spec for s in inputs), **attrs)
        out_specs = (specs,) if isinstance(specs, TensorSpec) else tuple(specs)
        if op.num_outputs != VARIADIC and len(out_specs) != op.num_outputs:
            raise RuntimeError(
                f"op {op.name!r} inferred {len(out_specs)} outputs but declares {op.num_outputs}"
            )
        node = Node(len(self.nodes), op, tuple(inputs), dict(attrs), (), *self._tags[-1])
        node.outputs = tuple(Symbol(self, node, i, spec) for i, spec in enumerate(out_specs))
        self.nodes.append(node)
        return node

    def placeholder(self, spec: TensorSpec, name: str | None = None) -> Symbol:
        """Declare an input of the graph."""
        label = name or spec.name or f"input_{len(self.placeholders)}"
        sym = apply1("placeholder", graph=self, spec=spec.with_shape(spec.shape), name=label)
        self.placeholders.append(sym)
        return sym

    def read_variable(self, variable: Variable) -> Symbol:
        """The symbol reading ``variable`` (one node per variable per graph)."""
        key = id(variable)
        sym = self._variable_reads.get(key)
        if sym is None:
            with self.tag(layer=None, invocation=None, phase="fwd"):
                sym = apply1("variable", graph=self, variable=variable)
            self._variable_reads[key] = sym
        return sym

    def constant(self, value: object, dtype: object | None = None) -> Symbol:
        """A constant node holding ``value`` (converted to ``dtype`` if given)."""
        array = np.asarray(value, dtype=None if dtype is None else canonical_dtype(dtype))
        if array.dtype == np.float64 and dtype is None and not isinstance(value, np.ndarray):
            array = array.astype(np.float32)  # Python floats are float32 unless asked otherwise
        if array.dtype == np.int64 and dtype is None and not isinstance(value, np.ndarray):
            array = array.astype(np.int32)
        return apply1("constant", graph=self, value=np.array(array, order="C"))

    def add_update(self, variable: Variable, new_value: Symbol) -> None:
        """Assign ``new_value`` to ``variable`` after each training execution (e.g. moving stats)."""
        if tuple(new_value.shape) != tuple(variable.shape):
            raise ConfigurationError(
                f"update of {variable.name!r} has shape {new_value.shape}, expected {variable.shape}"
            )
        self.updates.append((variable, new_value))

    @property
    def variables(self) -> list[Variable]:
        """Variables read by this graph, in first-read order."""
        return [s.node.attrs["variable"] for s in self._variable_reads.values()]

    # ------------------------------------------------------------------ tags
    @contextmanager
    def tag(self, *, layer: str | None, invocation: int | None, phase: str) -> Iterator[None]:
        """Nodes created inside this block carry the given layer, invocation and phase."""
        if phase not in PHASES:
            raise ValueError(f"phase {phase!r} is not one of {PHASES}")
        self._tags.append(_Tag(layer, invocation, phase))
        try:
            yield
        finally:
            self._tags.pop()

    @contextmanager
    def phase(self, phase: str) -> Iterator[None]:
        """Keep the current layer tag, switch the phase."""
        top = self._tags[-1]
        with self.tag(layer=top.layer, invocation=top.invocation, phase=phase):
            yield

    @contextmanager
    def autocast_variables(self, dtype: str | None) -> Iterator[None]:
        """Float variables read inside this block are cast to ``dtype`` (None: read as they are).

        Keras' mixed precision: a layer whose variables are float32 but which computes in float16
        reads them through a cast, as TensorFlow's AutoCastVariable does.
        """
        self._autocast.append(dtype)
        try:
            yield
        finally:
            self._autocast.pop()

    @property
    def autocast_dtype(self) -> str | None:
        """The dtype float variables are cast to when read here (None: no cast)."""
        return self._autocast[-1]

    @property
    def current_invocation(self) -> int | None:
        return self._tags[-1].invocation

    @contextmanager
    def invoke(self, layer: object, inputs: Sequence[Symbol]) -> Iterator[Invocation]:
        """Record a call of ``layer``; nodes created inside are tagged with it."""
        count = self._call_counts.get(id(layer), 0)
        self._call_counts[id(layer)] = count + 1
        inv = Invocation(layer, count, list(inputs), [], self.current_invocation)
        self.invocations.append(inv)
        index = len(self.invocations) - 1
        with self.tag(layer=inv.name, invocation=index, phase=self._tags[-1].phase):
            yield inv

    # ------------------------------------------------------------------ queries
    def nodes_between(self, outputs: Sequence[Symbol]) -> list[Node]:
        """The nodes ``outputs`` depend on, in post-order."""
        needed: set[int] = set()
        stack = [s.node for s in outputs]
        while stack:
            node = stack.pop()
            if node.id in needed:
                continue
            needed.add(node.id)
            stack.extend(s.node for s in node.inputs)
        return [n for n in self.nodes if n.id in needed]

    def __repr__(self) -> str:
        return (
            f"<Graph {self.name!r}: {len(self.nodes)} nodes, {len(self.invocations)} layer calls>"
        )


# ---------------------------------------------------------------------- default graph
_state = threading.local()


def _stack() -> list[Graph]:
    if not hasattr(_state, "graphs"):
        _state.graphs = []
    graphs: list[Graph] = _state.graphs
    return graphs


@contextmanager
def default_graph(graph: Graph) -> Iterator[Graph]:
    """Make ``graph`` the graph that ops with no symbolic inputs are added to."""
    _stack().append(graph)
    try:
        yield graph
    finally:
        _stack().pop()


def current_graph() -> Graph | None:
    stack = _stack()
    return stack[-1] if stack else None


def is_symbolic(value: object) -> bool:
    return isinstance(value, Symbol)


def _find_graph(inputs: Sequence[TensorLike]) -> Graph | None:
    for value in inputs:
        if isinstance(value, Symbol):
            return value.graph
    return current_graph()


def _first_float_dtype(inputs: Sequence[TensorLike]) -> str | None:
    for value in inputs:
        if isinstance(value, Symbol):
            return value.dtype
    return None


def to_symbol(value: TensorLike, graph: Graph, like_dtype: str | None = None) -> Symbol:
    """Turn a Symbol, variable or constant into a Symbol of ``graph``.

    Python scalars take the dtype of the other operands (``like_dtype``), as TensorFlow's weak
    typing does, so ``x * 2.0`` stays float32.
    """
    if isinstance(value, Symbol):
        if value.graph is not graph:
            raise ConfigurationError(
                f"{value!r} belongs to graph {value.graph.name!r}, not {graph.name!r}; "
                "tensors from different models or traces cannot be mixed"
            )
        return value
    if hasattr(value, "_is_ipusim_variable"):
        sym = graph.read_variable(cast(Variable, value))  # the only class with the marker
        target = graph.autocast_dtype
        if target is not None and sym.dtype != target and sym.dtype in FLOAT_DTYPES:
            sym = apply1("cast", sym, graph=graph, dtype=target)
        return sym
    if isinstance(value, bool | int | float) and like_dtype is not None:
        return graph.constant(value, dtype=like_dtype)
    return graph.constant(value)


#: Handles ops applied to deferred symbolic tensors (Keras functional-construction tensors, which
#: belong to no graph). Installed by ``ipusim.keras``; graph/ itself knows nothing of Keras.
DeferredHook: TypeAlias = Callable[[Op, tuple[TensorLike, ...], dict[str, Any]], Any]
_deferred_hook: DeferredHook | None = None
_comparison_op: str | None = None


def set_comparison_op(name: str | None) -> None:
    """Name the op (attribute ``comparison``) that symbolic ``<``, ``<=``, ``>``, ``>=`` apply."""
    global _comparison_op
    _comparison_op = name


def set_deferred_tensor_hook(hook: DeferredHook | None) -> None:
    """Install the handler for ops applied to tensors marked ``_is_deferred_tensor``."""
    global _deferred_hook
    _deferred_hook = hook


def apply(op: Op | str, *inputs: TensorLike, graph: Graph | None = None, **attrs: Any) -> Any:
    """Apply ``op`` to ``inputs``: add a node and return its output Symbol (or tuple of them).

    Args:
        op: an op or a registered op name.
        *inputs: Symbols, variables, numpy arrays or Python scalars.
        graph: the graph to add to; default: the graph of the first Symbol input, else the
            current default graph.
        **attrs: op attributes.
    """
    op = get_op(op) if isinstance(op, str) else op
    if (
        _deferred_hook is not None
        and graph is None
        and any(getattr(v, "_is_deferred_tensor", False) for v in inputs)
    ):
        return _deferred_hook(op, inputs, attrs)
    graph = graph if graph is not None else _find_graph(inputs)
    if graph is None:
        raise IncompatibleStateError(
            f"op {op.name!r} was called with no symbolic input and outside any graph; "
            "call it on a model input or inside a layer's call()"
        )
    like = _first_float_dtype(inputs)
    symbols = tuple(to_symbol(v, graph, like) for v in inputs)
    node = graph.add_node(op, symbols, attrs)
    return node.outputs[0] if op.num_outputs == 1 else node.outputs


def apply1(op: Op | str, *inputs: TensorLike, graph: Graph | None = None, **attrs: Any) -> Symbol:
    """:func:`apply` for an op with one output: its Symbol (on Keras functional-construction
    tensors, the deferred tensor the hook made, which has the same shape, dtype and operators)."""
    out: Symbol = apply(op, *inputs, graph=graph, **attrs)
    return out


def apply_multi(
    op: Op | str, *inputs: TensorLike, graph: Graph | None = None, **attrs: Any
) -> tuple[Symbol, ...]:
    """:func:`apply` for an op with several outputs: one Symbol per output."""
    out: tuple[Symbol, ...] = apply(op, *inputs, graph=graph, **attrs)
    return out
