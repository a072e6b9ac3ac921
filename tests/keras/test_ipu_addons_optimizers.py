"""ipu_tensorflow_addons' SGDIpuOptimizer, AdamIpuOptimizer and LAMBIpuOptimizer against NumPy
transcriptions of Graphcore's update rules (ipu_tensorflow_addons/keras/optimizers, SDK 3.x)."""

from __future__ import annotations

import numpy as np
import pytest

from ipusim import keras
from ipusim.errors import UnsupportedError
from ipusim.graph.variable import Variable

f32 = np.float32
STEPS = 5


def _grads(shape: tuple[int, ...], seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(f32) for _ in range(STEPS)]


def _adam_reference(w, grads, lr, b1, b2, eps, debias=True, m_dtype=f32):
    w = w.astype(f32).copy()
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    for t, g in enumerate(grads, start=1):
        # The step uses the float32 moment; the slot keeps it in m_dtype.
        m_new = m * f32(b1) + g * (f32(1) - f32(b1))
        m = m_new.astype(m_dtype).astype(f32)
        v = v * f32(b2) + g * g * (f32(1) - f32(b2))
        m_hat = m_new / (f32(1) - f32(b1) ** f32(t)) if debias else m_new
        v_hat = v / (f32(1) - f32(b2) ** f32(t)) if debias else v
        w = w - f32(lr) * (m_hat / (np.sqrt(v_hat) + f32(eps)))
    return w


@pytest.mark.parametrize("debiasing", [True, False])
@pytest.mark.parametrize("m_dtype", [None, "float16"])
def test_adam_ipu_optimizer_matches_the_addons_rule(debiasing, m_dtype) -> None:
    w0 = np.random.default_rng(1).standard_normal((4, 3)).astype(f32)
    grads = _grads((4, 3))
    opt = keras.optimizers.AdamIpuOptimizer(0.01, debiasing=debiasing, m_dtype=m_dtype)
    var = Variable(w0.copy(), "w:0")
    for g in grads:
        opt.apply_gradients([(g, var)])
    want = _adam_reference(
        w0, grads, 0.01, 0.9, 0.999, 1e-7, debiasing, np.float16 if m_dtype else f32
    )
    np.testing.assert_allclose(var.numpy(), want, rtol=2e-6, atol=1e-7)
    assert opt.get_slot(var, "m").value.dtype == (np.float16 if m_dtype else np.float32)


def test_adam_ipu_optimizer_updates_float16_variables_in_half() -> None:
    w0 = np.linspace(-1, 1, 6).astype(np.float16)
    grads = _grads((6,), seed=3)
    opt = keras.optimizers.AdamIpuOptimizer(0.1)
    var = Variable(w0.copy(), "h:0")
    for g in grads:
        opt.apply_gradients([(g.astype(np.float16), var)])
    # State in float16 (the variable's dtype), compute in float32, var -= cast(update, half).
    w = w0.copy()
    m = np.zeros(6, np.float16)
    v = np.zeros(6, np.float16)
    for t, g in enumerate(grads, start=1):
        g32 = g.astype(np.float16).astype(f32)
        m32 = m.astype(f32) * f32(0.9) + g32 * (f32(1) - f32(0.9))
        v32 = v.astype(f32) * f32(0.999) + g32 * g32 * (f32(1) - f32(0.999))
        m, v = m32.astype(np.float16), v32.astype(np.float16)
        step = f32(0.1) * (
            (m32 / (f32(1) - f32(0.9) ** f32(t)))
            / (np.sqrt(v32 / (f32(1) - f32(0.999) ** f32(t))) + f32(1e-7))
        )
        w = (w.astype(f32) - step.astype(np.float16).astype(f32)).astype(np.float16)
    np.testing.assert_array_equal(var.numpy(), w)


def test_lamb_ipu_optimizer_applies_the_trust_ratio_and_exclusions() -> None:
    rng = np.random.default_rng(4)
    w0 = {"dense/kernel": rng.standard_normal((3, 2)).astype(f32), "dense/bias": np.ones(2, f32)}
    grads = {k: _grads(v.shape, seed=i) for i, (k, v) in enumerate(w0.items())}
    opt = keras.optimizers.LAMBIpuOptimizer(
        0.05,
        weight_decay_rate=0.01,
        exclude_from_weight_decay=["bias"],
        exclude_from_layer_adaptation=["bias"],
    )
    variables = {k: Variable(v.copy(), f"{k}:0") for k, v in w0.items()}
    for s in range(STEPS):
        opt.apply_gradients([(grads[k][s], variables[k]) for k in w0])
    for name, w in w0.items():
        w = w.astype(np.float64)
        m = np.zeros_like(w)
        v = np.zeros_like(w)
        for t, g in enumerate(grads[name], start=1):
            m = 0.9 * m + 0.1 * g
            v = 0.999 * v + 0.001 * g * g
            update = (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-6)
            ratio = 1.0
            if name == "dense/kernel":
                update = update + 0.01 * w
                ratio = np.linalg.norm(w) / np.linalg.norm(update)
            w = w - 0.05 * ratio * update
        np.testing.assert_allclose(variables[name].numpy(), w, rtol=2e-5)


def test_sgd_ipu_optimizer_with_a_half_accumulator() -> None:
    w0 = np.arange(4, dtype=f32)
    grads = _grads((4,), seed=5)
    same = keras.optimizers.SGDIpuOptimizer(0.1, momentum=0.9)
    keras_sgd = keras.optimizers.SGD(0.1, momentum=0.9)
    half = keras.optimizers.SGDIpuOptimizer(0.1, momentum=0.9, momentum_accum_dtype="float16")
    a, b, c = (Variable(w0.copy(), f"{n}:0") for n in "abc")
    for g in grads:
        same.apply_gradients([(g, a)])
        keras_sgd.apply_gradients([(g, b)])
        half.apply_gradients([(g, c)])
    np.testing.assert_array_equal(a.numpy(), b.numpy())  # a float32 accumulator is Keras' SGD
    w, accum = w0.copy(), np.zeros(4, f32)
    for g in grads:
        new = accum * f32(0.9) - f32(0.1) * g
        w = w + new  # the update uses the float32 value, the slot keeps it in half
        accum = new.astype(np.float16).astype(f32)
    np.testing.assert_allclose(c.numpy(), w, rtol=1e-6)
    assert half.get_slot(c, "momentum").value.dtype == np.float16


def test_only_float32_compute_is_simulated() -> None:
    with pytest.raises(UnsupportedError, match="float32"):
        keras.optimizers.AdamIpuOptimizer(optimizer_compute_precisions=("float16",))
    with pytest.raises(ValueError, match="two elements"):
        keras.optimizers.LAMBIpuOptimizer(optimizer_compute_precisions=("float32",))
