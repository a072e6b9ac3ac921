"""``keras.ipu.layers.CaptureActivationGradients`` / ``CaptureUpstreamGradients``: the gradients
an optimizer receives as ``captured_grads`` during ``fit``, against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from ipusim import keras
from ipusim.errors import ConfigurationError
from ipusim.keras.ipu.layers import CaptureActivationGradients, CaptureUpstreamGradients
from ipusim.keras.ipu.optimizers import ALSOptimizer


class _Recorder(keras.optimizers.SGD):
    supports_captured_grads = True

    def __init__(self) -> None:
        super().__init__(0.1)
        self.seen: list[dict] = []

    def apply_gradients(self, grads_and_vars, captured_grads=None, **kwargs):
        self.seen.append(captured_grads)
        return super().apply_gradients(grads_and_vars)


def _model() -> keras.Sequential:
    return keras.Sequential(
        [
            CaptureActivationGradients(keras.layers.Dense(4, activation="relu"), tag="hidden"),
            CaptureUpstreamGradients(keras.layers.Dense(1), tag="out"),
        ]
    )


def test_fit_passes_the_activation_and_upstream_gradients_to_the_optimizer() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    y = rng.standard_normal((2, 1)).astype(np.float32)
    w1 = rng.standard_normal((3, 4)).astype(np.float32)
    b1 = rng.standard_normal(4).astype(np.float32) * 0.1
    w2 = rng.standard_normal((4, 1)).astype(np.float32)
    b2 = np.zeros(1, np.float32)
    model = _model()
    model.build((None, 3))
    model.set_weights([w1, b1, w2, b2])
    opt = _Recorder()
    model.compile(optimizer=opt, loss="mse")
    z = x.astype(np.float64) @ w1 + b1
    pred = np.maximum(z, 0) @ w2 + b2
    # The wrappers leave the forward pass as it is.
    np.testing.assert_allclose(model.predict(x), pred, rtol=1e-5)
    model.train_on_batch(x, y)
    d_pred = 2 * (pred - y) / 2  # mean over the 2 samples of one output
    d_z = (d_pred @ w2.T) * (z > 0)
    (captured,) = opt.seen
    assert set(captured) == {"hidden_activation", "out"}
    np.testing.assert_allclose(captured["out"], d_pred, rtol=1e-5)
    np.testing.assert_allclose(captured["hidden_activation"], d_z, rtol=1e-5, atol=1e-7)


def test_optimizers_without_support_get_no_captured_gradients() -> None:
    model = _model()
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    model.train_on_batch(np.ones((2, 3), np.float32), np.ones((2, 1), np.float32))


def test_als_counts_captured_float16_gradients_only() -> None:
    model = keras.Sequential(
        [CaptureUpstreamGradients(keras.layers.Dense(2, dtype="float16"), tag="d")]
    )
    model.build((None, 3))
    opt = ALSOptimizer(keras.optimizers.SGD(0.0), update_frequency=4, captured_grads_only=True)
    model.compile(optimizer=opt, loss="mse")
    model.train_on_batch(np.ones((5, 3), np.float32), np.zeros((5, 2), np.float32))
    # Only the captured (5, 2) output gradient is counted, not the 8 weight gradients.
    assert opt.histogram.sum() == 10


def test_activation_capture_needs_an_activation() -> None:
    with pytest.raises(ConfigurationError, match="does not use an activation function"):
        CaptureActivationGradients(keras.layers.Flatten())
