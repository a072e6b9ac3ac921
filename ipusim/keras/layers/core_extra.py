"""Small core layers: Identity, Masking, ActivityRegularization, UnitNormalization, and the l2
normalisation UnitNormalization and the Dot merge layer use.

Masks: ipusim has no Keras mask propagation (``compute_mask`` / ``_keras_mask``). ``Masking``
computes what tf.keras computes for its own output (time steps whose features all equal
``mask_value`` are zeroed), but no later layer receives the mask; layers that accept an explicit
mask argument (Attention, AdditiveAttention, MultiHeadAttention's ``attention_mask``) take it
when it is passed to them directly.
"""

from __future__ import annotations

import logging
from typing import Any

from ipusim.errors import ConfigurationError, UnsupportedError
from ipusim.graph.ops import math as m
from ipusim.keras.layers.core import SameShapeLayer

log = logging.getLogger("ipusim")

#: tf.math.l2_normalize's default floor on the squared norm. S (tensorflow/python/ops/nn_impl.py)
L2_EPSILON = 1e-12


def l2_normalize(x: Any, axis: Any) -> Any:
    """``x / sqrt(max(sum(x**2, axis), 1e-12))``, as ``tf.math.l2_normalize``."""
    squared = m.reduce_sum(m.square(x), axis=axis, keepdims=True)
    return m.divide(x, m.sqrt(m.maximum(squared, L2_EPSILON)))


class Identity(SameShapeLayer):
    """Returns its input unchanged."""

    def call(self, inputs: Any) -> Any:
        return m.identity(inputs)


class Masking(SameShapeLayer):
    """Zeroes the time steps whose features all equal ``mask_value`` (tf.keras' output).

    ipusim does not propagate the mask to later layers (see the module docstring): a recurrent
    or attention layer after it sees the zeroed steps, not a mask.
    """

    def __init__(self, mask_value: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.mask_value = float(mask_value)
        log.warning(
            "Masking %r: ipusim zeroes the masked time steps as tf.keras does but does not pass "
            "the mask on to later layers (no Keras mask propagation); pass masks explicitly "
            "to the attention layers that take them",
            self.name,
        )

    def call(self, inputs: Any) -> Any:
        differs = m.subtract(1.0, m.cast(m.equal(inputs, self.mask_value), inputs.dtype))
        keep = m.reduce_max(differs, axis=-1, keepdims=True)
        return m.multiply(inputs, m.stop_gradient(keep))

    _config_names = "mask_value"


class ActivityRegularization(SameShapeLayer):
    """Passes its input through; with ``l1`` or ``l2`` above 0 tf.keras adds an activity penalty
    to the loss with ``add_loss``, which ipusim does not simulate (UnsupportedError)."""

    def __init__(self, l1: float = 0.0, l2: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if l1 or l2:
            raise UnsupportedError(
                f"ActivityRegularization(l1={l1}, l2={l2}): ipusim does not simulate layer losses "
                "(add_loss), so an activity penalty cannot be added to the loss; use l1=l2=0 "
                "or add the penalty to the loss function"
            )
        self.l1, self.l2 = float(l1), float(l2)

    def call(self, inputs: Any) -> Any:
        return m.identity(inputs)

    _config_names = "l1 l2"


class UnitNormalization(SameShapeLayer):
    """Scales each input to unit l2 norm along ``axis`` (int or list; default -1)."""

    def __init__(self, axis: Any = -1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(axis, list | tuple):
            self.axis: list[int] | int = [int(a) for a in axis]
        elif isinstance(axis, int):
            self.axis = axis
        else:
            raise ConfigurationError(
                f"UnitNormalization: `axis` must be an int or a list of ints, received {axis!r}"
            )

    def call(self, inputs: Any) -> Any:
        axis = tuple(self.axis) if isinstance(self.axis, list) else self.axis
        return l2_normalize(inputs, axis)

    _config_names = "axis"
