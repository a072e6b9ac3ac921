"""Shapes as the cost model reads them: every dimension known (lowering costs only fully defined
specs, the batch resolved)."""

from __future__ import annotations

from typing import cast

from ipusim.errors import ConfigurationError
from ipusim.graph.spec import TensorSpec

__all__ = ["dims"]


def dims(spec: TensorSpec) -> tuple[int, ...]:
    """The sizes of ``spec``'s dimensions.

    Raises:
        ConfigurationError: a dimension is unknown (``None``): such a spec cannot be costed.
    """
    if None in spec.shape:
        raise ConfigurationError(
            f"shape {spec.shape} is not fully defined, so it cannot be costed; give the model's "
            "inputs a batch size"
        )
    return cast(tuple[int, ...], spec.shape)
