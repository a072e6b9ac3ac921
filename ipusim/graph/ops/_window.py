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
#: The spatial axes, for error messages: the last two for 2-D windows, all three for 3-D.
_AXES = ("depth", "height", "width")


def normalize_window(op: str, arg: str, value: Any, n: int) -> tuple[int, ...]:
    """``value`` (an int or ``n`` ints, each ≥ 1) as an ``n``-tuple."""
    items = (value,) * n if isinstance(value, Integral) else value
    try:
        window = tuple(items)
    except TypeError:
        window = ()
    if (
        len(window) != n
        or any(isinstance(v, bool) or not isinstance(v, Integral) for v in window)
        or min(window) < 1
    ):
        ints = "a pair of positive ints" if n == 2 else f"{n} of them"
        raise ConfigurationError(
            f"{op}: {arg} must be a positive int or {ints} ({', '.join(_AXES[-n:])}), "
            f"received {value!r}"
        )
    return tuple(int(v) for v in window)


def normalize_pair(op: str, arg: str, value: Any) -> Pair:
    """``value`` (an int or a pair of ints, each ≥ 1) as a ``(height, width)`` tuple."""
    return cast(Pair, normalize_window(op, arg, value, 2))


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
    op: str,
    hw: Shape,
    kernel_hw: Shape,
    strides: tuple[int, ...],
    padding: str,
    dilation: tuple[int, ...] | None = None,
) -> tuple[tuple[int | None, ...], tuple[int, ...]]:
    """``((Ho, Wo), (pad_top, pad_left))`` for an input of spatial size ``hw``; for a volume
    ``dhw`` (3-D windows), ``((Do, Ho, Wo), (pad_front, pad_top, pad_left))``.

    The output size is None where the input's is (an unknown size); window sizes are always known.
    ``dilation``: 1 along every axis by default.
    """
    outs, pads = [], []
    dilation = dilation or (1,) * len(hw)
    axes = _AXES[-len(hw) :]
    for size, k, s, d, axis in zip(hw, known_dims(kernel_hw), strides, dilation, axes, strict=True):
        out, pad = window_geometry(op, size, (k - 1) * d + 1, s, padding, axis)
        outs.append(out)
        pads.append(pad)
    return tuple(outs), tuple(pads)


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
