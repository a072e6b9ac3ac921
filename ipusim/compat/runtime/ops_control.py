"""Graph nodes that run runtime programs: loops, pipelines and optimizer updates.

A traced function that contains a loop holds one ``ipu_repeat`` node whose ``program`` attribute
is the compiled loop (its own body graph): executing the node runs the whole loop. Its single
output holds the tuple of the loop's results; one ``ipu_unpack`` node per result takes it apart,
so the rest of the function reads ordinary Symbols. ``ipu_pipeline`` does the same for
``pipeline()``.

None of these nodes is lowered for timing: the runtime's simulation lowers a loop's body graph (one
step per iteration) or a pipeline's stage graph instead, and lowering adds the weight update of
the optimizers it finds.
"""

from __future__ import annotations

from typing import Any

from ipusim.compat.runtime.ops_outfeed import TOKEN, FreeOp
from ipusim.errors import InvalidTypeError
from ipusim.graph.graph import Symbol, apply, set_comparison_op
from ipusim.graph.op import Op, register
from ipusim.graph.spec import TensorSpec

_HOLDER = TensorSpec((), "int32")


class _ProgramCall(FreeOp):
    """Executes ``program.execute(ctx, arrays)``; the output holds what it returns."""

    def infer(self, *specs: TensorSpec, program: Any) -> TensorSpec:
        return _HOLDER

    def forward(self, ctx: Any, *arrays: Any, program: Any) -> Any:
        result = program.execute(ctx, list(arrays))
        return TOKEN if result is None else result


@register
class Repeat(_ProgramCall):
    name = "ipu_repeat"


@register
class PipelineRun(_ProgramCall):
    name = "ipu_pipeline"


@register
class Unpack(FreeOp):
    """Output ``index`` of a program call. Attributes: ``index``, ``spec``."""

    name = "ipu_unpack"

    def infer(self, holder: TensorSpec, *, index: int, spec: TensorSpec) -> TensorSpec:
        return TensorSpec(spec.shape, spec.dtype)

    def forward(self, ctx: Any, holder: Any, *, index: int, spec: TensorSpec) -> Any:
        return holder[index]


@register
class After(FreeOp):
    """``x`` unchanged, computed after its other inputs (``tf.control_dependencies``)."""

    name = "ipu_after"

    def infer(self, x: TensorSpec, *deps: TensorSpec) -> TensorSpec:
        return TensorSpec(x.shape, x.dtype)

    def forward(self, ctx: Any, x: Any, *deps: Any) -> Any:
        return x

    def gradient(self, node: Any, dy: Symbol) -> list[Symbol | None]:
        return [dy] + [None] * (len(node.inputs) - 1)


def call_program(
    op: str, program: Any, inputs: list[Any], out_specs: list[TensorSpec]
) -> tuple[Symbol, list[Symbol]]:
    """Add a program-call node and its unpack nodes.

    Returns:
        The call node's output (to keep as a side effect) and the unpacked output Symbols.
    """
    holder: Symbol = apply(op, *inputs, program=program)
    outputs: list[Symbol] = [
        apply("ipu_unpack", holder, index=i, spec=spec) for i, spec in enumerate(out_specs)
    ]
    return holder, outputs


_COMPARISONS = {
    "less": lambda a, b: a < b,
    "less_equal": lambda a, b: a <= b,
    "greater": lambda a, b: a > b,
    "greater_equal": lambda a, b: a >= b,
    "not_equal": lambda a, b: a != b,
    "logical_and": lambda a, b: a & b,
    "logical_or": lambda a, b: a | b,
}


@register
class Compare(Op):
    """Elementwise comparison or logical combination (broadcasting); bool result, no gradient.
    Attribute: ``comparison`` (a key of ``_COMPARISONS``)."""

    name = "ipu_compare"
    kind = "elementwise"

    def infer(self, a: TensorSpec, b: TensorSpec, *, comparison: str) -> TensorSpec:
        from ipusim.graph.ops.math import broadcast_shape

        if a.dtype != b.dtype:
            raise InvalidTypeError(
                f"{comparison}: operands have dtypes {a.dtype} and {b.dtype}; cast one so both match"
            )
        if comparison.startswith("logical") and a.dtype != "bool":
            raise InvalidTypeError(f"{comparison}: operands must be bool, received {a.dtype}")
        return TensorSpec(broadcast_shape(comparison, a.shape, b.shape), "bool")

    def forward(self, ctx: Any, a: Any, b: Any, *, comparison: str) -> Any:
        import numpy as np

        return np.ascontiguousarray(_COMPARISONS[comparison](a, b))

    def gradient(self, node: Any, dy: Symbol) -> list[None]:
        return [None, None]


set_comparison_op(Compare.name)  # traced tensors' `<`, `<=`, `>`, `>=` build this op
