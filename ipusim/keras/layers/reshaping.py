"""ZeroPadding2D: zeros around the spatial axes of NHWC images (as Keras)."""

from __future__ import annotations

from typing import Any

from ipusim.errors import ConfigurationError
from ipusim.graph.ops import shape as shape_ops
from ipusim.keras.engine.layer import Layer
from ipusim.keras.layers.conv import check_data_format


def normalize_padding_2d(padding: Any) -> tuple[tuple[int, int], tuple[int, int]]:
    """Keras' three spellings: ``p``, ``(ph, pw)`` or ``((top, bottom), (left, right))``."""

    def amount(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise TypeError
        return value

    try:
        if isinstance(padding, int) and not isinstance(padding, bool):
            p = amount(padding)
            return ((p, p), (p, p))
        first, second = padding
        if isinstance(first, int) and isinstance(second, int):
            return ((amount(first), amount(first)), (amount(second), amount(second)))
        (top, bottom), (left, right) = first, second
        return ((amount(top), amount(bottom)), (amount(left), amount(right)))
    except (TypeError, ValueError):
        raise ConfigurationError(
            "ZeroPadding2D: `padding` must be a non-negative int, a pair (rows, columns) or a "
            f"pair of pairs ((top, bottom), (left, right)), received {padding!r}"
        ) from None


class ZeroPadding2D(Layer):
    """Pad height and width with zeros.

    Args:
        padding: ``p``, ``(rows, columns)`` or ``((top, bottom), (left, right))``, in pixels.
    """

    def __init__(self, padding: Any = (1, 1), data_format: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        check_data_format(data_format, "ZeroPadding2D")
        self.padding = normalize_padding_2d(padding)

    def call(self, inputs: Any) -> Any:
        if inputs.ndim != 4:
            raise ConfigurationError(
                f"ZeroPadding2D {self.name!r} expects 4-D inputs (batch, height, width, "
                f"channels), received shape {inputs.shape}"
            )
        return shape_ops.pad(inputs, ((0, 0), *self.padding, (0, 0)))

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "padding": [list(p) for p in self.padding]}
