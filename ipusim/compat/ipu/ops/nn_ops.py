"""``ipu.ops.nn_ops`` (also ``ipu.nn_ops``): Popnn's activation functions (IPU TensorFlow 2.x,
``tensorflow/python/ipu/ops/nn_ops.py``), on the runtime's ops (traced or eager).

``gelu`` (``approximate=True``: the tanh form, Popnn's ``ipu_gelu``; else the erf form),
``swish`` (``x * sigmoid(x)``) and ``hard_sigmoid`` (``clip(0.2 x + 0.5, 0, 1)``, Popnn's
definition). ``multi_conv`` runs the decorated convolutions as they are (the parallel
multi-convolution schedule is not modelled).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ipusim.compat.runtime import ops
from ipusim.compat.runtime.dispatch import run_op
from ipusim.errors import InvalidTypeError
from ipusim.graph.ops import math as gm

__all__ = ["gelu", "hard_sigmoid", "multi_conv", "swish"]


def gelu(x: Any, approximate: bool = True, name: str | None = None) -> Any:
    """The Gaussian error linear unit of ``x``."""
    return run_op(gm.gelu, x, approximate=bool(approximate))


def swish(x: Any, name: str | None = None) -> Any:
    """``x * sigmoid(x)``."""
    return ops.multiply(x, ops.sigmoid(x))


def hard_sigmoid(x: Any, name: str | None = None) -> Any:
    """``clip(0.2 * x + 0.5, 0, 1)``."""
    return ops.minimum(ops.maximum(ops.add(ops.multiply(x, 0.2), 0.5), 0.0), 1.0)


def multi_conv(func: Callable[..., Any] | None = None, options: Any = None) -> Any:
    """Decorator marking a function's convolutions as one multi-convolution (run as written).

    Raises:
        TypeError: ``options`` is not a dict (IPU TensorFlow's check).
    """
    if options is not None and not isinstance(options, dict):
        raise InvalidTypeError(
            f"Expected the multi_conv `options` to be a `dict`, but got {options} instead."
        )

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any) -> Any:
            return fn(*args)

        return wrapper

    return decorate if func is None else decorate(func)
