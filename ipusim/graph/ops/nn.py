"""Neural-network ops: dense products and bias, softmax, cross-entropy losses (and, from
:mod:`~ipusim.graph.ops.embedding`, the embedding ops).

``dropout`` lives in :mod:`ipusim.graph.ops.random` and is re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from ipusim.errors import ConfigurationError, InvalidTypeError
from ipusim.graph.execute import ExecContext
from ipusim.graph.graph import Node, Symbol, TensorLike, apply1
from ipusim.graph.numerics import amp_products, computes_half
from ipusim.graph.op import Op, OpCost, Specs, io_cost, register
from ipusim.graph.ops._window import known_dims
from ipusim.graph.ops.embedding import (  # the embedding ops are importable from here
    INT_DTYPES,
    embedding_lookup,
    one_hot,
)
from ipusim.graph.ops.math import merge_shapes, negative, normalize_axes, require_float
from ipusim.graph.ops.random import dropout
from ipusim.graph.spec import Array, Shape, TensorSpec
from ipusim.kernels import amp
from ipusim.kernels import dense as k
from ipusim.kernels import loss as kl
from ipusim.kernels import softmax as ks

#: FLOPs per element of the (logits-shaped) input. Transcendentals count 4, as in
#: :data:`ipusim.graph.ops.math.FLOPS_PER_ELEMENT`: softmax = max + subtract + exp + sum + scale.
FLOPS_PER_ELEMENT: dict[str, int] = {
    "softmax": 8,
    "log_softmax": 8,
    "softmax_grad": 4,
    "log_softmax_grad": 7,
    "sparse_softmax_cross_entropy_with_logits": 7,
    "sparse_softmax_cross_entropy_grad": 14,
    "softmax_cross_entropy_with_logits": 9,
    "softmax_cross_entropy_grad": 14,
    "sigmoid_cross_entropy_with_logits": 12,
    "sigmoid_cross_entropy_grad": 8,
}


def _check_float_pair(op: str, a: TensorSpec, b: TensorSpec) -> None:
    if a.dtype != b.dtype:
        raise InvalidTypeError(
            f"{op}: both operands must have the same dtype, received {a.dtype} and "
            f"{b.dtype}; cast one of them first"
        )


def _matrix(shape: Shape, transpose: bool) -> Shape:
    """The (rows, columns) of ``op(x)`` for a tensor of ``shape`` (its last two dimensions)."""
    return (shape[-1], shape[-2]) if transpose else (shape[-2], shape[-1])


class _Product(Op):
    """``op(a) @ op(b)``: the forward, gradient and cost shared by ``matmul`` and
    ``batch_matmul`` (subclasses check shapes and name the kernels)."""

    kind = "matmul"
    rounds_half_outputs = True
    #: ``(a, b, transpose_a, transpose_b) -> a @ b`` in float32 and, in half precision, the
    #: AMP-unit version that also takes the :class:`~ipusim.kernels.amp.AmpProducts`.
    _kernel: Callable[[Array, Array, bool, bool], Array]
    _amp_kernel: Callable[[Array, Array, bool, bool, amp.AmpProducts], Array]

    def forward(
        self,
        ctx: ExecContext,
        a: Array,
        b: Array,
        *,
        transpose_a: bool = False,
        transpose_b: bool = False,
        **_: float,
    ) -> Array:
        if computes_half(ctx):
            products = amp_products(ctx, "matmul")
            out = self._amp_kernel(a, b, transpose_a, transpose_b, products)
            ctx.overflows = products.overflows
            return out
        return self._kernel(a, b, transpose_a, transpose_b)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        a, b = node.inputs
        ta, tb = node.attrs.get("transpose_a", False), node.attrs.get("transpose_b", False)
        bwd = node.attrs.get("available_memory_proportion_bwd")
        extra: dict[str, Any] = {} if bwd is None else {"available_memory_proportion": bwd}

        def product(
            x: object, y: object, transpose_a: bool = False, transpose_b: bool = False
        ) -> Symbol:
            return apply1(
                self.name, x, y, transpose_a=transpose_a, transpose_b=transpose_b, **extra
            )

        # Standard identities for C = op(A) op(B), written so no explicit transpose node is needed.
        if not ta and not tb:
            return [product(dy, b, transpose_b=True), product(a, dy, transpose_a=True)]
        if ta and not tb:
            return [product(b, dy, transpose_b=True), product(a, dy)]
        if not ta and tb:
            return [product(dy, b), product(dy, a, transpose_a=True)]
        return [
            product(b, dy, transpose_a=True, transpose_b=True),
            product(dy, a, transpose_a=True, transpose_b=True),
        ]

    def cost(
        self,
        in_specs: Specs,
        out_specs: Specs,
        *,
        transpose_a: bool = False,
        transpose_b: bool = False,
        **_: float,
    ) -> OpCost:
        k_dim = known_dims(_matrix(in_specs[0].shape, transpose_a))[1]  # costed shapes are known
        return io_cost(2 * out_specs[0].size * k_dim, in_specs, out_specs, "matmul")


@register
class MatMul(_Product):
    """2-D matrix product ``op(a) @ op(b)``; ``op`` transposes when ``transpose_a/b`` is set.

    In half precision the partial sums follow the AMP unit (:mod:`ipusim.kernels.amp`).

    ``available_memory_proportion`` (optional) plans this product with its own PopLibs
    ``availableMemoryProportion`` instead of ``IPUConfig.matmuls``' (as PopnnLSTM's
    ``available_memory_proportion_fwd`` does); ``available_memory_proportion_bwd`` is the one its
    gradient products get (``_bwd``). Neither changes the numbers.
    """

    name = "matmul"
    _kernel = staticmethod(k.matmul)
    _amp_kernel = staticmethod(amp.matmul)

    def infer(
        self,
        a: TensorSpec,
        b: TensorSpec,
        *,
        transpose_a: bool = False,
        transpose_b: bool = False,
        **proportions: float,
    ) -> TensorSpec:
        _check_proportions(proportions)
        if a.rank != 2 or b.rank != 2:
            raise ConfigurationError(
                f"matmul expects 2-D operands, received shapes {a.shape} and {b.shape}"
            )
        _check_float_pair("matmul", a, b)
        m, ka = _matrix(a.shape, transpose_a)
        kb, n = _matrix(b.shape, transpose_b)
        if ka is not None and kb is not None and ka != kb:
            raise ConfigurationError(
                f"matmul inner dimensions differ: {a.shape}{'ᵀ' if transpose_a else ''} times "
                f"{b.shape}{'ᵀ' if transpose_b else ''} ({ka} != {kb})"
            )
        return TensorSpec((m, n), a.dtype)


def matmul(
    a: TensorLike,
    b: TensorLike,
    *,
    transpose_a: bool = False,
    transpose_b: bool = False,
    available_memory_proportion: float | None = None,
    available_memory_proportion_bwd: float | None = None,
) -> Symbol:
    """Matrix product of two 2-D tensors (the proportions: see :class:`MatMul`)."""
    extra: dict[str, Any] = {}
    if available_memory_proportion is not None:
        extra["available_memory_proportion"] = float(available_memory_proportion)
    if available_memory_proportion_bwd is not None:
        extra["available_memory_proportion_bwd"] = float(available_memory_proportion_bwd)
    return apply1("matmul", a, b, transpose_a=transpose_a, transpose_b=transpose_b, **extra)


_PROPORTIONS = ("available_memory_proportion", "available_memory_proportion_bwd")


def _check_proportions(proportions: dict[str, Any]) -> None:
    for key, value in proportions.items():
        if key not in _PROPORTIONS:
            raise InvalidTypeError(f"matmul got an unexpected attribute {key!r}")
        if not 0 < float(value) <= 1:
            raise ConfigurationError(f"matmul: {key} must be in (0, 1], received {value!r}")


@register
class BiasAdd(Op):
    """``x + bias`` with a 1-D ``bias`` along the last axis of ``x``."""

    name = "bias_add"
    kind = "elementwise"

    def infer(self, x: TensorSpec, bias: TensorSpec) -> TensorSpec:
        if (
            bias.rank != 1
            or x.rank < 1
            or (x.shape[-1] is not None and x.shape[-1] != bias.shape[0])
        ):
            raise ConfigurationError(
                f"bias_add expects a bias of shape ({x.shape[-1] if x.rank else '?'},) "
                f"for input {x.shape}, received {bias.shape}"
            )
        _check_float_pair("bias_add", x, bias)
        return x.with_shape(x.shape)

    def forward(self, ctx: ExecContext, x: Array, bias: Array) -> Array:
        return k.bias_add(x, bias)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        return [dy, apply1("bias_add_grad", dy)]


@register
class BiasAddGrad(Op):
    """Gradient of bias_add w.r.t. the bias: ``dy`` summed over all axes but the last."""

    name = "bias_add_grad"
    kind = "reduction"

    def infer(self, dy: TensorSpec) -> TensorSpec:
        return TensorSpec((dy.shape[-1],), dy.dtype)

    def forward(self, ctx: ExecContext, dy: Array) -> Array:
        return k.bias_add_grad(dy)

    def cost(self, in_specs: Specs, out_specs: Specs) -> OpCost:
        return io_cost(in_specs[0].size, in_specs, out_specs, "reduction")


def bias_add(x: TensorLike, bias: TensorLike) -> Symbol:
    """Add a 1-D bias along the last axis."""
    return apply1("bias_add", x, bias)


class _PerElement(Op):
    """An op costing :data:`FLOPS_PER_ELEMENT` ``[name]`` per element of its output (of input
    ``sized_by_input`` when set: the losses' logits)."""

    sized_by_input: ClassVar[int | None] = None

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: object) -> OpCost:
        sized = out_specs[0] if self.sized_by_input is None else in_specs[self.sized_by_input]
        return io_cost(FLOPS_PER_ELEMENT[self.name] * sized.size, in_specs, out_specs, self.kind)


# ---------------------------------------------------------------------------- softmax
class _Softmax(_PerElement):
    """A softmax op: ``kernel_fn(x, axis)``; its gradient is the op named ``<name>_grad``."""

    kind = "reduction"
    kernel_fn: ClassVar[Callable[..., Array]]

    def infer(self, x: TensorSpec, *, axis: int = -1) -> TensorSpec:
        require_float(self.name, "x", x)
        if x.rank == 0:
            raise ConfigurationError(
                f"{self.name}: x must have at least one axis, received a scalar"
            )
        normalize_axes(self.name, axis, x.rank)
        return TensorSpec(x.shape, x.dtype)

    def forward(self, ctx: ExecContext, x: Array, *, axis: int = -1) -> Array:
        return self.kernel_fn(x, axis % x.ndim)

    def gradient(self, node: Node, dy: Symbol) -> Sequence[Symbol | None]:
        return [apply1(f"{self.name}_grad", dy, node.outputs[0], **node.attrs)]


@register
class Softmax(_Softmax):
    """``exp(x) / sum(exp(x))`` along ``axis``, shifted by the maximum so it never overflows."""

    name = "softmax"
    kernel_fn = staticmethod(ks.softmax)


@register
class LogSoftmax(_Softmax):
    """``x - log(sum(exp(x)))`` along ``axis``, computed without overflow."""

    name = "log_softmax"
    kernel_fn = staticmethod(ks.log_softmax)


class _SoftmaxGrad(_Softmax):
    """Gradient from ``dy`` and the forward output ``y``: ``kernel_fn(dy, y, axis)``."""

    gradient = Op.gradient  # not differentiable again

    # The gradient takes (dy, y) where the softmax takes x: its own inputs, as every op's are.
    def infer(  # type: ignore[override]
        self, dy: TensorSpec, y: TensorSpec, *, axis: int = -1
    ) -> TensorSpec:
        shape = merge_shapes(self.name, dy, y, "dy and y")
        return super().infer(TensorSpec(shape, dy.dtype), axis=axis)

    def forward(  # type: ignore[override]
        self, ctx: ExecContext, dy: Array, y: Array, *, axis: int = -1
    ) -> Array:
        return self.kernel_fn(dy, y, axis % y.ndim)


@register
class SoftmaxGrad(_SoftmaxGrad):
    name = "softmax_grad"
    kernel_fn = staticmethod(ks.softmax_grad)


@register
class LogSoftmaxGrad(_SoftmaxGrad):
    name = "log_softmax_grad"
    kernel_fn = staticmethod(ks.log_softmax_grad)


def softmax(x: TensorLike, axis: int = -1) -> Symbol:
    """Softmax along ``axis``."""
    return apply1("softmax", x, axis=int(axis))


def log_softmax(x: TensorLike, axis: int = -1) -> Symbol:
    """Log-softmax along ``axis``."""
    return apply1("log_softmax", x, axis=int(axis))


# ---------------------------------------------------------------------------- cross-entropy losses
def _check_logits(op: str, logits: TensorSpec) -> None:
    require_float(op, "logits", logits)
    if logits.rank == 0 or logits.shape[-1] == 0:
        raise ConfigurationError(
            f"{op}: logits must have a non-empty class axis last, received shape {logits.shape}"
        )


def _check_sparse(op: str, labels: TensorSpec, logits: TensorSpec) -> Shape:
    _check_logits(op, logits)
    if labels.dtype not in INT_DTYPES:
        raise InvalidTypeError(
            f"{op}: labels must be int32 or int64 class indices, received dtype {labels.dtype}; "
            "cast them with cast(labels, 'int32'), or use softmax_cross_entropy_with_logits "
            "for one-hot or probability labels"
        )
    return merge_shapes(
        op,
        TensorSpec(labels.shape, logits.dtype),
        TensorSpec(logits.shape[:-1], logits.dtype),
        "labels and logits.shape[:-1]",
    )


@register
class SparseSoftmaxCrossEntropy(_PerElement):
    """Per-example ``-log(softmax(logits)[label])``; labels are class indices."""

    name = "sparse_softmax_cross_entropy_with_logits"
    kind = "reduction"
    sized_by_input = 1

    def infer(self, labels: TensorSpec, logits: TensorSpec) -> TensorSpec:
        return TensorSpec(_check_sparse(self.name, labels, logits), logits.dtype)

    def forward(self, ctx: ExecContext, labels: Array, logits: Array) -> Array:
        return kl.sparse_softmax_cross_entropy(labels, logits)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol | None]:
        labels, logits = node.inputs
        return [None, apply1("sparse_softmax_cross_entropy_grad", dy, labels, logits)]


@register
class SparseSoftmaxCrossEntropyGrad(_PerElement):
    """``(softmax(logits) - onehot(labels)) * dy[..., None]``, fused."""

    name = "sparse_softmax_cross_entropy_grad"
    kind = "reduction"

    def infer(self, dy: TensorSpec, labels: TensorSpec, logits: TensorSpec) -> TensorSpec:
        shape = _check_sparse(self.name, labels, logits)
        merge_shapes(self.name, dy, TensorSpec(shape, logits.dtype), "dy and labels")
        return TensorSpec(logits.shape, logits.dtype)

    def forward(self, ctx: ExecContext, dy: Array, labels: Array, logits: Array) -> Array:
        return kl.sparse_softmax_cross_entropy_grad(dy, labels, logits)


def _check_dense(op: str, labels: TensorSpec, logits: TensorSpec) -> Shape:
    _check_logits(op, logits)
    return merge_shapes(op, labels, logits, "labels and logits")


@register
class SoftmaxCrossEntropy(_PerElement):
    """Per-example ``-sum(labels * log_softmax(logits))`` over the last axis."""

    name = "softmax_cross_entropy_with_logits"
    kind = "reduction"
    sized_by_input = 1

    def infer(self, labels: TensorSpec, logits: TensorSpec) -> TensorSpec:
        return TensorSpec(_check_dense(self.name, labels, logits)[:-1], logits.dtype)

    def forward(self, ctx: ExecContext, labels: Array, logits: Array) -> Array:
        return kl.softmax_cross_entropy(labels, logits)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        labels, logits = node.inputs
        return [
            apply1("softmax_cross_entropy_grad", dy, labels, logits, wrt=w)
            for w in ("labels", "logits")
        ]


@register
class SoftmaxCrossEntropyGrad(_PerElement):
    """Gradient w.r.t. ``wrt``: logits ``(softmax * sum(labels) - labels) * dy`` (TF's
    ``softmax - labels`` for labels that sum to 1), or labels ``-log_softmax(logits) * dy``."""

    name = "softmax_cross_entropy_grad"
    kind = "reduction"

    def infer(
        self, dy: TensorSpec, labels: TensorSpec, logits: TensorSpec, *, wrt: str
    ) -> TensorSpec:
        if wrt not in ("labels", "logits"):
            raise ConfigurationError(
                f"{self.name}: wrt must be 'labels' or 'logits', received {wrt!r}"
            )
        shape = _check_dense(self.name, labels, logits)
        merge_shapes(self.name, dy, TensorSpec(shape[:-1], logits.dtype), "dy and the loss")
        return TensorSpec(shape, logits.dtype)

    def forward(
        self, ctx: ExecContext, dy: Array, labels: Array, logits: Array, *, wrt: str
    ) -> Array:
        return kl.softmax_cross_entropy_grad(dy, labels, logits, wrt)


@register
class SigmoidCrossEntropy(_PerElement):
    """Elementwise ``max(x, 0) - x z + log(1 + exp(-|x|))`` for logits x and labels z."""

    name = "sigmoid_cross_entropy_with_logits"
    kind = "elementwise"

    def infer(self, labels: TensorSpec, logits: TensorSpec) -> TensorSpec:
        require_float(self.name, "logits", logits)
        return TensorSpec(
            merge_shapes(self.name, labels, logits, "labels and logits"), logits.dtype
        )

    def forward(self, ctx: ExecContext, labels: Array, logits: Array) -> Array:
        return kl.sigmoid_cross_entropy(labels, logits)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        labels, logits = node.inputs
        return [
            negative(apply1("multiply", dy, logits)),
            apply1("sigmoid_cross_entropy_grad", dy, labels, logits),
        ]


@register
class SigmoidCrossEntropyGrad(_PerElement):
    """``(sigmoid(logits) - labels) * dy``."""

    name = "sigmoid_cross_entropy_grad"
    kind = "elementwise"

    def infer(self, dy: TensorSpec, labels: TensorSpec, logits: TensorSpec) -> TensorSpec:
        shape = merge_shapes(self.name, labels, logits, "labels and logits")
        return TensorSpec(
            merge_shapes(self.name, dy, TensorSpec(shape, logits.dtype)), logits.dtype
        )

    def forward(self, ctx: ExecContext, dy: Array, labels: Array, logits: Array) -> Array:
        return kl.sigmoid_cross_entropy_grad_logits(dy, labels, logits)


def sparse_softmax_cross_entropy_with_logits(labels: TensorLike, logits: TensorLike) -> Symbol:
    """Per-example softmax cross-entropy with integer class ``labels`` of shape
    ``logits.shape[:-1]``. A label outside ``[0, classes)`` raises a ValueError at run time."""
    return apply1("sparse_softmax_cross_entropy_with_logits", labels, logits)


def softmax_cross_entropy_with_logits(labels: TensorLike, logits: TensorLike) -> Symbol:
    """Per-example softmax cross-entropy with one-hot / probability ``labels`` of logits' shape;
    differentiable w.r.t. both (as TF)."""
    return apply1("softmax_cross_entropy_with_logits", labels, logits)


def sigmoid_cross_entropy_with_logits(labels: TensorLike, logits: TensorLike) -> Symbol:
    """Elementwise binary cross-entropy of ``sigmoid(logits)`` against ``labels`` (stable form)."""
    return apply1("sigmoid_cross_entropy_with_logits", labels, logits)


__all__ = [
    "bias_add",
    "dropout",
    "embedding_lookup",
    "log_softmax",
    "matmul",
    "one_hot",
    "sigmoid_cross_entropy_with_logits",
    "softmax",
    "softmax_cross_entropy_with_logits",
    "sparse_softmax_cross_entropy_with_logits",
]
