"""GroupNormalization (tf.keras 2.11+): normalise groups of channels per sample.

Composed of reshape, reduce_mean, square and elementwise ops in TensorFlow's order
(``tf.nn.moments`` then ``tf.nn.batch_normalization``), so its gradient and cost are those ops'.
"""

from __future__ import annotations

from typing import Any

from ipusim.errors import ConfigurationError
from ipusim.graph.ops import math as m
from ipusim.graph.ops import shape as s
from ipusim.keras import initializers
from ipusim.keras.layers.core import SameShapeLayer, no_regularizers


class GroupNormalization(SameShapeLayer):
    """Splits the channels on ``axis`` into ``groups`` and normalises each group of each sample
    by its own mean and variance, then scales by ``gamma`` and shifts by ``beta`` per channel.

    Args:
        groups: number of groups (-1: one per channel); must divide the channel count.
        axis: the channel axis. epsilon: added to the variance.
        center / scale: learn beta / gamma.
    """

    def __init__(
        self,
        groups: int = 32,
        axis: int = -1,
        epsilon: float = 1e-3,
        center: bool = True,
        scale: bool = True,
        beta_initializer: Any = "zeros",
        gamma_initializer: Any = "ones",
        beta_regularizer: Any = None,
        gamma_regularizer: Any = None,
        beta_constraint: Any = None,
        gamma_constraint: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        no_regularizers("GroupNormalization", locals())
        self.groups, self.axis, self.epsilon = int(groups), int(axis), float(epsilon)
        self.center, self.scale = bool(center), bool(scale)
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)

    def build(self, input_shape: Any) -> None:
        rank = len(input_shape)
        if not -rank <= self.axis < rank or self.axis % rank == 0:
            raise ConfigurationError(
                f"GroupNormalization: `axis` {self.axis} is not a channel axis of inputs of "
                f"shape {tuple(input_shape)}"
            )
        dim = input_shape[self.axis]
        if dim is None:
            raise ConfigurationError(
                f"GroupNormalization: axis {self.axis} of input shape {tuple(input_shape)} "
                "must have a defined size"
            )
        if self.groups == -1:
            self.groups = dim
        if dim < self.groups or dim % self.groups:
            raise ConfigurationError(
                f"GroupNormalization: groups ({self.groups}) must divide the number of "
                f"channels ({dim}) and not exceed it"
            )
        self.gamma = (
            self.add_weight("gamma", (dim,), initializer=self.gamma_initializer)
            if self.scale
            else None
        )
        self.beta = (
            self.add_weight("beta", (dim,), initializer=self.beta_initializer)
            if self.center
            else None
        )
        self.built = True

    def call(self, inputs: Any) -> Any:
        rank, ax = inputs.ndim, self.axis % inputs.ndim
        dims = list(inputs.shape)
        grouped = [-1 if d is None else d for d in dims]
        grouped[ax : ax + 1] = [self.groups, dims[ax] // self.groups]
        x = s.reshape(inputs, grouped)
        axes = tuple(a for a in range(1, rank + 1) if a != ax)
        mean = m.reduce_mean(x, axis=axes, keepdims=True)
        variance = m.reduce_mean(m.square(m.subtract(x, m.stop_gradient(mean))), axes, True)
        # tf.nn.moments' variance has a gradient into the mean too, but it is zero (the mean of
        # the deviations is 0), so stopping it changes nothing but the graph's size.
        inv = m.divide(1.0, m.sqrt(m.add(variance, self.epsilon)))
        params = [1] * (rank + 1)
        params[ax : ax + 2] = [self.groups, dims[ax] // self.groups]
        if self.gamma is not None:
            inv = m.multiply(inv, s.reshape(self.gamma, params))
        offset = m.negative(m.multiply(mean, inv))
        if self.beta is not None:
            offset = m.add(s.reshape(self.beta, params), offset)
        y = m.add(m.multiply(x, inv), offset)
        return s.reshape(y, [-1 if d is None else d for d in dims])

    _config_names = "groups axis epsilon center scale beta_initializer gamma_initializer"
