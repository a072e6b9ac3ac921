"""Window geometry shared by the convolution and pooling ops (TensorFlow's padding rules).

``"VALID"`` uses no padding (the window must fit in the input). ``"SAME"`` gives
``out = ceil(in / stride)`` and pads ``max((out − 1)·stride + k_eff − in, 0)`` pixels, the smaller
half before the first pixel, where ``k_eff = (k − 1)·dilation + 1``.
"""

from __future__ import annotations

from numbers import Integral
from typing import Any, cast

from ipusim.errors import ConfigurationError, InvalidTypeError
from ipusim.graph.spec import Shape, TensorSpec

#: Padding modes accepted by every windowed op (case-insensitive).
PADDINGS = ("VALID", "SAME")

Pair = tuple[int, int]


def normalize_pair(op: str, arg: str, value: Any) -> Pair:
    """``value`` (an int or a pair of ints, each ≥ 1) as a ``(height, width)`` tuple."""
    items = (value, value) if isinstance(value, Integral) else value
    try:
        pair = tuple(items)
    except TypeError:
        pair = ()
    if (
        len(pair) != 2
        or any(isinstance(v, bool) or not isinstance(v, Integral) for v in pair)
        or min(pair) < 1
    ):
        raise ConfigurationError(
            f"{op}: {arg} must be a positive int or a pair of positive ints "
            f"(height, width), received {value!r}"
        )
    return (int(pair[0]), int(pair[1]))


def normalize_padding(op: str, padding: object) -> str:
    """``padding`` upper-cased, checked against :data:`PADDINGS`."""
    if not isinstance(padding, str) or padding.upper() not in PADDINGS:
        raise ConfigurationError(
            f"{op}: padding must be 'VALID' or 'SAME' (case-insensitive), received {padding!r}"
        )
    return padding.upper()


def window_geometry(
    op: str, size: int | None, window: int, stride: int, padding: str, axis: str
) -> tuple[int | None, int]:
    """Output size and padding before the first pixel along one spatial axis.

    Args:
        op: op name for error messages.
        size: input size in pixels (None when unknown, giving an unknown output).
        window: effective window size in pixels (dilation applied).
        stride: step in pixels.
        padding: ``"VALID"`` or ``"SAME"``.
        axis: ``"height"`` or ``"width"``, for error messages.
    """
    if size is None:
        return None, 0
    if padding == "VALID":
        if window > size:
            raise ConfigurationError(
                f"{op}: the window {axis} ({window}) is larger than the input {axis} "
                f"({size}) with padding='VALID'; use padding='SAME', a smaller window "
                "or a larger input"
            )
        return (size - window) // stride + 1, 0
    out = -(-size // stride)
    return out, max((out - 1) * stride + window - size, 0) // 2


def spatial_geometry(
    op: str, hw: Shape, kernel_hw: Shape, strides: Pair, padding: str, dilation: Pair = (1, 1)
) -> tuple[tuple[int | None, int | None], Pair]:
    """``((Ho, Wo), (pad_top, pad_left))`` for an input of spatial size ``hw``.

    The output size is None where the input's is (an unknown size); window sizes are always known.
    """
    kh, kw = cast(Pair, kernel_hw)
    ho, pt = window_geometry(op, hw[0], (kh - 1) * dilation[0] + 1, strides[0], padding, "height")
    wo, pl = window_geometry(op, hw[1], (kw - 1) * dilation[1] + 1, strides[1], padding, "width")
    return (ho, wo), (pt, pl)


def check_nhwc(
    op: str,
    arg: str,
    spec: TensorSpec,
    layout: str = "(batch, height, width, channels)",
    rank: int = 4,
) -> None:
    """Raise unless ``spec`` is a float tensor of ``rank`` (4: NHWC; ``layout`` names its axes)."""
    if spec.rank != rank:
        raise ConfigurationError(
            f"{op}: {arg} must be a {rank}-D tensor {layout}, received shape {spec.shape}"
        )
    if spec.dtype not in ("float16", "float32", "float64"):
        raise InvalidTypeError(
            f"{op}: {arg} must be float16, float32 or float64, received {spec.dtype}"
        )


def check_same_dtype(op: str, a: TensorSpec, b: TensorSpec) -> None:
    """Raise unless both operands have the same dtype."""
    if a.dtype != b.dtype:
        raise InvalidTypeError(
            f"{op}: operands have dtypes {a.dtype} and {b.dtype}; cast one so both match"
        )


def known_hw(hw: Shape) -> Pair:
    """``hw`` as the pair of ints it is when it comes from a real array (run time, no None)."""
    return cast(Pair, hw)


def known_dims(shape: Shape) -> tuple[int, ...]:
    """``shape`` of a tensor whose sizes are all known (weights, run-time arrays): no None."""
    return cast(tuple[int, ...], shape)


def known_eq(a: int | None, b: int | None) -> bool:
    """True unless both sizes are known and differ."""
    return a is None or b is None or a == b
