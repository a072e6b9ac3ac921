"""Source ops: graph inputs, variable reads and constants. The executor fills them directly."""

from __future__ import annotations

import numpy as np

from ipusim.graph.execute import ExecContext
from ipusim.graph.op import Op, OpCost, Specs, register
from ipusim.graph.spec import Array, TensorSpec
from ipusim.graph.variable import Variable


class _Source(Op):
    kind = "data_movement"

    def forward(self, ctx: ExecContext, *arrays: Array, **attrs: object) -> Array:
        raise RuntimeError(f"{self.name} nodes are filled by the executor, not computed")

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: object) -> OpCost:
        return OpCost(0, 0, 0, "data_movement")


@register
class Placeholder(_Source):
    """A graph input. Attributes: ``spec`` (its TensorSpec), ``name``."""

    name = "placeholder"

    def infer(self, *, spec: TensorSpec, name: str) -> TensorSpec:
        return TensorSpec(spec.shape, spec.dtype, name)


@register
class ReadVariable(_Source):
    """The current value of a variable. Attribute: ``variable``."""

    name = "variable"

    def infer(self, *, variable: Variable) -> TensorSpec:
        return TensorSpec(variable.shape, variable.dtype, variable.name)


@register
class Constant(_Source):
    """A fixed array. Attribute: ``value`` (a contiguous numpy array)."""

    name = "constant"

    def infer(self, *, value: np.ndarray) -> TensorSpec:
        return TensorSpec(value.shape, value.dtype.name)
