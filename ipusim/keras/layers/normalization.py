"""BatchNormalization and LayerNormalization.

In half precision both keep float32 parameters (and moving statistics) and normalise in float32,
casting a float16 input up and the result back to the compute dtype: tf.keras' choice for float16
and mixed_float16 layers, and how Graphcore's port computes norms internally.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError, UnsupportedError
from ipusim.graph.ops import math as m
from ipusim.graph.ops import norm as norm_ops
from ipusim.keras import initializers
from ipusim.keras.engine.layer import Layer
from ipusim.keras.layers.core import no_regularizers


class _Normalization(Layer):
    """What both normalisation layers share: float32 parameters and arithmetic for float16."""

    _autocast_variables = False
    gamma_initializer: Any
    beta_initializer: Any
    scale: bool
    center: bool

    def _widen(self, inputs: Any) -> Any:
        return m.cast(inputs, "float32") if inputs.dtype == "float16" else inputs

    def _narrow(self, y: Any) -> Any:
        return m.cast(y, self._compute_dtype) if y.dtype != self._compute_dtype else y

    def _add_param(self, name: str, channels: int, trainable: bool) -> Any:
        """The ``(channels,)`` weight ``name``, initialised by the layer's ``<name>_initializer``."""
        initializer = getattr(self, f"{name}_initializer")
        dtype = "float32" if self._dtype == "float16" else self._dtype
        return self.add_weight(name, (channels,), dtype, initializer, trainable=trainable)

    def _add_gamma_beta(self, channels: int) -> None:
        """The scale and offset weights (frozen, not absent, when ``scale`` / ``center`` is off)."""
        self.gamma = self._add_param("gamma", channels, self.scale)
        self.beta = self._add_param("beta", channels, self.center)


class BatchNormalization(_Normalization):
    """Normalise with batch statistics in training and moving statistics in inference.

    The moving averages follow ``moving = moving * momentum + batch * (1 - momentum)`` after each
    training step, using the batch mean and the batch variance: biased for 2-D/3-D inputs (tf.keras'
    non-fused path), unbiased (times ``n / (n - 1)``) for 4-D/5-D inputs, which tf.keras sends to
    the fused kernel. The normalisation itself always uses the biased variance.

    Args:
        axis: the feature axis (only the last axis is supported).
        momentum: momentum of the moving averages.
        epsilon: added to the variance for stability.
        center / scale: learn ``beta`` / ``gamma``.
    """

    def __init__(
        self,
        axis: int = -1,
        momentum: float = 0.99,
        epsilon: float = 0.001,
        center: bool = True,
        scale: bool = True,
        beta_initializer: Any = "zeros",
        gamma_initializer: Any = "ones",
        moving_mean_initializer: Any = "zeros",
        moving_variance_initializer: Any = "ones",
        beta_regularizer: Any = None,
        gamma_regularizer: Any = None,
        beta_constraint: Any = None,
        gamma_constraint: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        no_regularizers("BatchNormalization", locals())
        if not 0 <= momentum <= 1:
            raise ConfigurationError(
                f"BatchNormalization: `momentum` must be in [0, 1], received {momentum}"
            )
        if epsilon <= 0:
            raise ConfigurationError(
                f"BatchNormalization: `epsilon` must be positive, received {epsilon}"
            )
        self.axis, self.momentum, self.epsilon = axis, float(momentum), float(epsilon)
        self.center, self.scale = center, scale
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.moving_mean_initializer = initializers.get(moving_mean_initializer)
        self.moving_variance_initializer = initializers.get(moving_variance_initializer)

    def build(self, input_shape: Any) -> None:
        rank = len(input_shape)
        if self.axis not in (-1, rank - 1):
            raise UnsupportedError(
                f"BatchNormalization: only the last axis is supported, "
                f"received axis={self.axis} for rank-{rank} inputs"
            )
        channels = input_shape[-1]
        if channels is None:
            raise ConfigurationError(
                f"BatchNormalization {self.name!r}: the feature axis of input shape "
                f"{input_shape} must be known"
            )
        self._add_gamma_beta(channels)
        self.moving_mean = self._add_param("moving_mean", channels, False)
        self.moving_variance = self._add_param("moving_variance", channels, False)
        self.built = True

    def call(self, inputs: Any, training: bool | None = None) -> Any:
        training = bool(training) and self.trainable
        inputs = self._widen(inputs)
        y, mean, variance = norm_ops.batch_norm(
            inputs,
            self.gamma,
            self.beta,
            self.moving_mean,
            self.moving_variance,
            training=training,
            epsilon=self.epsilon,
            axis=-1,
        )
        if training:
            graph = inputs.graph
            with graph.phase("update"):
                known = all(d is not None for d in inputs.shape[:-1])
                count = int(np.prod(inputs.shape[:-1])) if known else 0
                if inputs.ndim in (4, 5) and count > 1:
                    # tf.keras normalises 4-D/5-D inputs with the fused kernel, whose moving
                    # variance takes the Bessel-corrected (unbiased) batch variance.
                    variance = m.multiply(variance, count / (count - 1))
                keep, take = self.momentum, 1.0 - self.momentum
                new_mean = m.add(m.multiply(self.moving_mean, keep), m.multiply(mean, take))
                new_var = m.add(m.multiply(self.moving_variance, keep), m.multiply(variance, take))
            graph.add_update(self.moving_mean, new_mean)
            graph.add_update(self.moving_variance, new_var)
        return self._narrow(y)

    _config_names = "axis momentum epsilon center scale"


class LayerNormalization(_Normalization):
    """Normalise each example over its last axis, then scale and shift.

    Args:
        axis: the axis to normalise (only the last axis is supported).
        epsilon: added to the variance for stability.
    """

    def __init__(
        self,
        axis: int = -1,
        epsilon: float = 0.001,
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
        no_regularizers("LayerNormalization", locals())
        if epsilon <= 0:
            raise ConfigurationError(
                f"LayerNormalization: `epsilon` must be positive, received {epsilon}"
            )
        self.axis, self.epsilon = axis, float(epsilon)
        self.center, self.scale = center, scale
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)

    def build(self, input_shape: Any) -> None:
        rank = len(input_shape)
        if self.axis not in (-1, rank - 1):
            raise UnsupportedError(
                f"LayerNormalization: only the last axis is supported, received axis={self.axis}"
            )
        self._add_gamma_beta(input_shape[-1])
        self.built = True

    def call(self, inputs: Any) -> Any:
        y = norm_ops.layer_norm(
            self._widen(inputs),
            self.gamma,
            self.beta,
            axis=-1,
            epsilon=self.epsilon,
            fused=self._fused,
        )
        return self._narrow(y)

    @property
    def _fused(self) -> bool:
        """Whether Keras computes this layer with its fused batch-norm kernel: float32 variables
        and ε ≥ 1.001e-5 (below that the fused kernel would raise ε, so Keras uses
        ``tf.nn.moments``). On the IPU the fused kernel's statistics take one pass unless
        ``norms.use_stable_statistics`` (see ``docs/numerics.md``)."""
        return self.dtype == "float32" and self.epsilon >= 1.001e-5

    _config_names = "axis epsilon center scale"
