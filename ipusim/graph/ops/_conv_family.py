"""What every convolution family shares: three ops that are adjoints of one another.

A family (``conv2d``, ``conv3d``, ``depthwise_conv2d``, ``grouped_conv2d``) is a forward op
``(x, filters) -> y`` and its two backward ops: ``<stem>_backprop_input`` ``(dy, filters) -> dx``
(attribute ``input_shape``) and ``<stem>_backprop_filter`` ``(x, dy) -> dfilters`` (attribute
``filter_shape``). Each op's gradient is built from the other two, so every one is differentiable
again. The classes here normalise the attributes, apply the ops in the graph, compute the window
geometry, call the kernel, build the gradients and pick the operands the FLOPs are counted from;
a family sets its rank, its kernels, its spec inference and its FLOP formula.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, NamedTuple

from ipusim.errors import ConfigurationError
from ipusim.graph.execute import ExecContext
from ipusim.graph.graph import Node, Symbol, TensorLike, apply1
from ipusim.graph.op import Op, OpCost, Specs, io_cost, register
from ipusim.graph.ops._window import (
    known_dims,
    known_eq,
    normalize_padding,
    normalize_window,
    spatial_geometry,
)
from ipusim.graph.spec import Array, Shape, TensorSpec

#: Each role's op name after the family's stem: forward, input gradient, filter gradient.
_SUFFIXES = ("", "_backprop_input", "_backprop_filter")
#: The size attribute of each role's op (the forward has none).
_SIZE_ATTRS = ("", "input_shape", "filter_shape")


class Window(NamedTuple):
    """A convolution's window attributes, normalised: ``nd``-tuples and an upper-case padding."""

    strides: tuple[int, ...]
    padding: str
    dilation: tuple[int, ...]


class Placement(NamedTuple):
    """Where a convolution's windows fall: strides, dilation and the padding before the first
    element along each spatial axis (the kernels' geometry arguments, in their order)."""

    strides: tuple[int, ...]
    dilation: tuple[int, ...]
    pads: tuple[int, ...]


def check_channels(
    op: str, what: str, got: int | None, filters: str, shape: Shape, axis: int
) -> None:
    """Raise unless ``got`` channels agree with ``shape[axis]`` (``filters`` names the filters)."""
    if not known_eq(got, shape[axis]):
        raise ConfigurationError(
            f"{op}: {what} has {got} channels but {filters}{tuple(shape)} expect "
            f"{shape[axis]}; make them agree"
        )


def check_dy(op: str, dy: TensorSpec, out: Shape, gives: str) -> None:
    """Raise unless ``dy``'s spatial size agrees with the forward output's ``out``.

    Args:
        gives: what computed ``out``, ending the message before it (e.g. ``"the forward
            convolution gives "``).
    """
    spatial = dy.shape[1 : 1 + len(out)]
    if not all(known_eq(a, b) for a, b in zip(out, spatial, strict=True)):
        raise ConfigurationError(f"{op}: dy has spatial size {spatial} but {gives}{out}")


class ConvFamilyOp(Op):
    """One op of a convolution family; a role class below (forward or a gradient) completes it.

    A family sets ``stem`` (the forward op's name) and ``nd``, each op its ``kernel``;
    :meth:`_kernel` says how it is called.
    """

    kind = "conv"
    stem: ClassVar[str]
    #: Spatial dimensions of the activations (NHWC: 2).
    nd: ClassVar[int] = 2
    kernel: ClassVar[Callable[..., Array]]
    #: The family's FLOPs from (the forward output or dy, the filter shape).
    _flops: Callable[[TensorSpec, Shape], int]
    #: This role's (forward output or dy, filter shape) among its (input, output) specs.
    _operands: Callable[[Specs, Specs], tuple[TensorSpec, Shape]]

    @classmethod
    def _attrs(
        cls, op: str, strides: object = 1, padding: object = "VALID", dilation_rate: object = 1
    ) -> Window:
        """The window attributes of every op of a family, with their defaults (``**window`` in
        the ops' methods), normalised."""
        return Window(
            normalize_window(op, "strides", strides, cls.nd),
            normalize_padding(op, padding),
            normalize_window(op, "dilation_rate", dilation_rate, cls.nd),
        )

    @classmethod
    def _extra(cls, op: str, groups: object) -> dict[str, Any]:
        """The family's attributes besides the window's (``groups`` of the grouped ops)."""
        return {}

    @classmethod
    def _apply(
        cls,
        op: str,
        a: TensorLike,
        b: TensorLike,
        strides: object,
        padding: object,
        dilation_rate: object,
        groups: object = None,
        **shape: Shape,
    ) -> Symbol:
        """``op(a, b)`` in the graph with normalised attributes; ``shape`` is the backward ops'
        ``input_shape`` / ``filter_shape`` (stored as a tuple)."""
        strides, padding, dilation = cls._attrs(op, strides, padding, dilation_rate)
        sizes: dict[str, Any] = {name: tuple(size) for name, size in shape.items()}
        return apply1(
            op,
            a,
            b,
            **sizes,
            **cls._extra(op, groups),
            strides=strides,
            padding=padding,
            dilation_rate=dilation,
        )

    def _build(
        self, role: int, a: TensorLike, b: TensorLike, attrs: Mapping[str, Any], size: Shape = ()
    ) -> Symbol:
        """The family's op of ``role`` on ``(a, b)`` with this node's window ``attrs``; ``size``
        is its input or filter shape (unused by the forward op)."""
        window = {k: v for k, v in attrs.items() if k not in _SIZE_ATTRS}
        shape = {_SIZE_ATTRS[role]: size} if role else {}
        return self._apply(self.stem + _SUFFIXES[role], a, b, **window, **shape)

    def _kernel(
        self,
        ctx: ExecContext,
        a: Array,
        b: Array,
        groups: int,
        size: Shape,
        placement: Placement,
    ) -> Array:
        """Run ``kernel(a, b, size, strides, dilation, pads)`` (the depthwise ops' call)."""
        return self.kernel(a, b, size, *placement)

    def _run(
        self,
        ctx: ExecContext,
        operands: tuple[Array, Array],
        shapes: tuple[Shape, Shape],
        size: Shape | None,
        groups: int = 1,
        **window_attrs: object,
    ) -> Array:
        """The kernel on ``operands``; ``shapes`` is (the forward input's shape, the filter shape),
        which give the padding; ``size`` the kernel's size argument, None for the forward output's
        spatial size."""
        strides, padding, dilation = self._attrs(self.name, **window_attrs)
        nd = self.nd
        out, pads = spatial_geometry(
            self.name, shapes[0][1 : 1 + nd], shapes[1][:nd], strides, padding, dilation
        )
        size = known_dims(out) if size is None else size
        return self._kernel(ctx, *operands, groups, size, Placement(strides, dilation, pads))

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: Any) -> OpCost:
        flops = self._flops(*self._operands(in_specs, out_specs))
        return io_cost(flops, in_specs, out_specs, "conv")


class ConvForward(ConvFamilyOp):
    """The convolution itself: ``(x, filters) -> y``."""

    def forward(self, ctx: ExecContext, x: Array, filters: Array, **attrs: Any) -> Array:
        return self._run(ctx, (x, filters), (x.shape, filters.shape), None, **attrs)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        x, filters = node.inputs
        return [
            self._build(1, dy, filters, node.attrs, x.shape),
            self._build(2, x, dy, node.attrs, filters.shape),
        ]

    def _operands(self, in_specs: Specs, out_specs: Specs) -> tuple[TensorSpec, Shape]:
        return out_specs[0], in_specs[1].shape


class ConvBackpropInput(ConvFamilyOp):
    """Gradient w.r.t. the input: ``(dy, filters) -> dx`` (a transposed convolution)."""

    def forward(
        self, ctx: ExecContext, dy: Array, filters: Array, *, input_shape: Shape, **attrs: Any
    ) -> Array:
        shapes = (input_shape, filters.shape)
        return self._run(ctx, (dy, filters), shapes, tuple(input_shape[1:]), **attrs)

    def gradient(self, node: Node, g: Symbol) -> list[Symbol]:
        dy, filters = node.inputs
        return [
            self._build(0, g, filters, node.attrs),
            self._build(2, g, dy, node.attrs, filters.shape),
        ]

    def _operands(self, in_specs: Specs, out_specs: Specs) -> tuple[TensorSpec, Shape]:
        return in_specs[0], in_specs[1].shape


class ConvBackpropFilter(ConvFamilyOp):
    """Gradient w.r.t. the filters: ``(x, dy) -> dfilters``."""

    def _filter_size(self, filter_shape: Shape) -> Shape:
        """The kernel's size argument: the window's ``nd`` sizes."""
        return tuple(filter_shape[: self.nd])

    def forward(
        self, ctx: ExecContext, x: Array, dy: Array, *, filter_shape: Shape, **attrs: Any
    ) -> Array:
        size = self._filter_size(filter_shape)
        return self._run(ctx, (x, dy), (x.shape, filter_shape), size, **attrs)

    def gradient(self, node: Node, g: Symbol) -> list[Symbol]:
        x, dy = node.inputs
        return [self._build(1, dy, g, node.attrs, x.shape), self._build(0, x, g, node.attrs)]

    def _operands(self, in_specs: Specs, out_specs: Specs) -> tuple[TensorSpec, Shape]:
        return in_specs[1], out_specs[0].shape


def register_family(
    class_stem: str,
    family: type[ConvFamilyOp] | None,
    roles: tuple[type[ConvFamilyOp], type[ConvFamilyOp], type[ConvFamilyOp]],
    kernels: tuple[Callable[..., Array], Callable[..., Array], Callable[..., Array]],
    docs: tuple[str, str, str],
) -> tuple[type[ConvFamilyOp], type[ConvFamilyOp], type[ConvFamilyOp]]:
    """Register a family's forward, input-gradient and filter-gradient ops.

    Role ``i`` is a subclass of ``family`` (when given) and ``roles[i]``, named ``class_stem`` +
    ``""`` / ``"BackpropInput"`` / ``"BackpropFilter"`` (its op: the family's ``stem`` + the
    role's suffix), that runs ``kernels[i]`` and is documented by ``docs[i]``.
    """
    ops = []
    for role, (base, kernel, doc) in enumerate(zip(roles, kernels, docs, strict=True)):
        bases = (base,) if family is None else (family, base)
        attrs = {
            "name": bases[0].stem + _SUFFIXES[role],
            "kernel": staticmethod(kernel),
            "__doc__": doc,
            "__module__": bases[0].__module__,
        }
        ops.append(
            register(type(class_stem + _SUFFIXES[role].title().replace("_", ""), bases, attrs))
        )
    return ops[0], ops[1], ops[2]
