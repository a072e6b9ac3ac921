"""The op contract: every op keeps spec inference, gradient rule, cost inputs and math apart.

An op is a stateless singleton registered by name. Attributes (``transpose_b=True``, ``strides=2``)
are keyword arguments, stored on the graph node and passed to every method.

- ``infer(*specs, **attrs)`` -> output spec(s): shapes and dtypes before any data exists.
- ``forward(ctx, *arrays, **attrs)`` -> output array(s): the math, done by ``ipusim.kernels``.
- ``gradient(node, *dys)`` -> one gradient Symbol (or None) per input, built from other ops, so the
  backward pass is itself graph nodes that the timing path can cost.
- ``cost(in_specs, out_specs, **attrs)`` -> :class:`OpCost`: FLOPs, bytes, kind of work.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias, TypeVar

from ipusim.errors import InvalidTypeError
from ipusim.graph.spec import TensorSpec

if TYPE_CHECKING:
    from ipusim.graph.graph import Node, Symbol

#: The input or output specs of one op application, in order.
Specs: TypeAlias = Sequence[TensorSpec]

#: ``Op.num_outputs`` of an op whose output count depends on its inputs (``unstack_time``).
VARIADIC = -1

#: The kinds of work the cost model distinguishes.
WORK_KINDS = ("matmul", "conv", "elementwise", "reduction", "data_movement")


@dataclass(frozen=True, slots=True)
class OpCost:
    """Cost inputs of one op execution.

    Attributes:
        flops: floating-point operations (a multiply-add counts as 2).
        bytes_read: bytes of input the op reads.
        bytes_written: bytes of output the op writes.
        kind: one of :data:`WORK_KINDS`; decides which hardware units the cost model uses.
    """

    flops: int
    bytes_read: int
    bytes_written: int
    kind: str

    def __post_init__(self) -> None:
        if self.kind not in WORK_KINDS:
            raise ValueError(f"OpCost kind {self.kind!r} is not one of {WORK_KINDS}")

    def __add__(self, other: OpCost) -> OpCost:
        kind = self.kind if self.flops >= other.flops else other.kind
        return OpCost(
            self.flops + other.flops,
            self.bytes_read + other.bytes_read,
            self.bytes_written + other.bytes_written,
            kind,
        )


def io_bytes(in_specs: Specs, out_specs: Specs) -> tuple[int, int]:
    """Bytes read (all inputs) and written (all outputs); specs must be fully defined."""
    return sum(s.nbytes for s in in_specs), sum(s.nbytes for s in out_specs)


def io_cost(flops: int, in_specs: Specs, out_specs: Specs, kind: str) -> OpCost:
    """An :class:`OpCost` of ``flops`` that reads ``in_specs`` and writes ``out_specs``."""
    return OpCost(flops, *io_bytes(in_specs, out_specs), kind)


class NotDifferentiableError(InvalidTypeError):
    """Raised when a gradient is requested through an op that has no gradient rule."""


def no_gradient(op: Op, node: Node, *dys: Symbol | None) -> list[Symbol | None]:
    """The gradient rule of an op no gradient flows through (``gradient = no_gradient``): None
    for every input."""
    return [None] * len(node.inputs)


class Op:
    """Base class of every op. Subclasses set ``name`` and ``kind`` and implement the methods."""

    name: ClassVar[str] = ""
    kind: ClassVar[str] = "elementwise"
    #: Number of outputs; ops with more than one return tuples from infer/forward.
    #: :data:`VARIADIC`: as many as ``infer`` returns (a tuple, even of one).
    num_outputs: ClassVar[int] = 1

    # The base signatures take ``*args: Any, **kwargs: Any`` so that each op may declare its own
    # inputs and attributes (mypy accepts any override of such a signature).
    def infer(self, *args: Any, **kwargs: Any) -> TensorSpec | tuple[TensorSpec, ...]:
        """Output spec(s) from the input specs (positional) and the node's attributes."""
        raise NotImplementedError(f"op {self.name!r} has no spec inference")

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Output array(s) from an :class:`ExecContext`, the input arrays and the attributes."""
        raise NotImplementedError(f"op {self.name!r} has no forward")

    def gradient(self, *args: Any, **kwargs: Any) -> Sequence[Symbol | None]:
        """Input gradients from the node and its output gradients (None: no gradient)."""
        raise NotDifferentiableError(
            f"op {self.name!r} has no gradient rule, so gradients cannot flow through it"
        )

    def cost(self, *args: Any, **kwargs: Any) -> OpCost:
        """Default: one FLOP per output element, reading every input and writing every output.

        Called as ``cost(in_specs, out_specs, **attrs)``.
        """
        in_specs: Specs = args[0]
        out_specs: Specs = args[1]
        flops = sum(s.size for s in out_specs) if self.kind != "data_movement" else 0
        return io_cost(flops, in_specs, out_specs, self.kind)

    def __repr__(self) -> str:
        return f"<op {self.name}>"


_REGISTRY: dict[str, Op] = {}
OpType = TypeVar("OpType", bound=type[Op])


def register(cls: OpType) -> OpType:
    """Class decorator: instantiate the op once and register it under ``cls.name``."""
    if not cls.name:
        raise TypeError(f"{cls.__name__} must set a non-empty `name`")
    if cls.name in _REGISTRY:
        raise TypeError(f"an op named {cls.name!r} is already registered")
    if cls.kind not in WORK_KINDS:
        raise TypeError(f"{cls.__name__}.kind {cls.kind!r} is not one of {WORK_KINDS}")
    _REGISTRY[cls.name] = cls()
    return cls


def get_op(name: str) -> Op:
    """Return the registered op called ``name``."""
    try:
        return _REGISTRY[name]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(name, _REGISTRY, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise KeyError(f"no op named {name!r} is registered.{hint}") from None


def registered_ops() -> dict[str, Op]:
    """A copy of the registry: op name -> op."""
    return dict(_REGISTRY)
