"""``tf.TensorSpec``: the graph's :class:`~ipusim.graph.spec.TensorSpec`, or a host string spec.

``tf.TensorSpec(shape, tf.float32)`` is exactly ipusim's graph TensorSpec. With ``tf.string``
it is a :class:`StringTensorSpec`: the same fields, dtype ``"string"``, describing a host input
(a serving export's ``preprocessing_step_signature``); strings never reach a graph, so code that
builds a graph from it fails with ipusim's "strings do not exist on the IPU" error.
"""

from __future__ import annotations

from typing import Any

from ipusim.compat.runtime.strings import is_string_dtype, strings_on_ipu
from ipusim.graph.spec import TensorSpec as GraphTensorSpec

__all__ = ["StringTensorSpec", "TensorSpec"]


class StringTensorSpec(GraphTensorSpec):
    """A ``tf.TensorSpec`` of ``tf.string``: shape and name of a host string input."""

    __slots__ = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(None if d is None else int(d) for d in self.shape))
        object.__setattr__(self, "dtype", "string")

    @property
    def itemsize(self) -> int:
        raise strings_on_ipu("a tf.TensorSpec of tf.string")


class _TensorSpecType(type):
    """Builds a graph TensorSpec or a StringTensorSpec; both are ``tf.TensorSpec`` instances."""

    def __call__(cls, shape: Any = None, dtype: Any = "float32", name: str | None = None) -> Any:
        if is_string_dtype(dtype):
            return StringTensorSpec(shape, "string", name)
        return GraphTensorSpec(shape, dtype, name)

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, GraphTensorSpec)

    def __getattr__(cls, name: str) -> Any:
        return getattr(GraphTensorSpec, name)  # classmethods (from_array) of the graph spec


class TensorSpec(metaclass=_TensorSpecType):
    """``tf.TensorSpec(shape, dtype=tf.float32, name=None)``."""
