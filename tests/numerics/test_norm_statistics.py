"""Batch-norm statistics as the IPU computes them: one pass by default, two with
``norms.use_stable_statistics``; a half-precision mean where the activations are half.

Expectations are closed forms worked out by hand in the comments (values chosen so that every
intermediate is exact or rounds in a known way), and a bound on the one-pass error derived from
float32's unit roundoff.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipusim import keras
from ipusim.config import IPUConfig, reset_ipu_configuration
from ipusim.graph.execute import ExecContext, Executor
from ipusim.graph.graph import Graph
from ipusim.graph.numerics import Numerics
from ipusim.graph.ops import norm
from ipusim.graph.spec import TensorSpec
from ipusim.kernels.norm import ipu_batch_norm_stats

EPS = 1e-3
#: float32's unit roundoff (half an ulp of 1).
U32 = 2.0**-24


def _run_batch_norm(x: np.ndarray, axis: int, numerics: Numerics) -> list[np.ndarray]:
    """``(y, mean, variance)`` of a training batch norm (gamma 1, beta 0) under ``numerics``."""
    c = x.shape[axis]
    g = Graph()
    px = g.placeholder(TensorSpec(x.shape, "float32"))
    ones, zeros = np.ones(c, np.float32), np.zeros(c, np.float32)
    outs = norm.batch_norm(px, ones, zeros, zeros, ones, training=True, epsilon=EPS, axis=axis)
    return Executor(g, list(outs)).run([x], ExecContext(training=True, numerics=numerics))


def _alternating(layout: str) -> tuple[np.ndarray, int]:
    """4096 ± 1 alternating, 8 values per channel, 3 channels, in the given layout."""
    values = np.where(np.arange(8) % 2 == 0, 4097.0, 4095.0).astype(np.float32)
    if layout == "channels_last":
        return np.repeat(values[:, None], 3, axis=1).reshape(2, 4, 3), 2
    return np.repeat(values[:, None], 3, axis=1).T.reshape(1, 3, 8).copy(), 1


@pytest.mark.parametrize("layout", ["channels_last", "channels_first"])
def test_one_pass_loses_the_variance_that_two_passes_keep(layout: str) -> None:
    # x = 4096 ± 1: mean 4096 and variance 1 exactly. One pass: the power
    # (4097² + 4095²) / 2 = 16,777,217 = 2²⁴ + 1 rounds to 2²⁴ in float32, and
    # 2²⁴ − 4096² = 0. Two passes: the deviations ±1 square to exactly 1.
    x, axis = _alternating(layout)
    y1, mean1, var1 = _run_batch_norm(x, axis, Numerics(stable_norm_statistics=False))
    y2, mean2, var2 = _run_batch_norm(x, axis, Numerics(stable_norm_statistics=True))
    np.testing.assert_array_equal(mean1, [4096.0] * 3)
    np.testing.assert_array_equal(mean2, [4096.0] * 3)
    np.testing.assert_array_equal(var1, [0.0] * 3)
    np.testing.assert_array_equal(var2, [1.0] * 3)
    sign = np.sign(x - 4096.0)
    np.testing.assert_allclose(y1, sign / np.sqrt(EPS), rtol=1e-6)
    np.testing.assert_allclose(y2, sign / np.sqrt(1.0 + EPS), rtol=1e-6)


def test_the_one_pass_variance_is_clamped_at_zero() -> None:
    # x = 3000 + (2, 1, 2)·2⁻⁸: the mean 3000.005208… rounds up to 3000.0066 in float32, whose
    # square (9,000,040 after rounding) exceeds the rounded power (9,000,039): power − mean² is
    # −1 in float32, and the IPU clamps it to 0 (the true variance is 3.4e-6).
    x = np.array([3000.0078125, 3000.00390625, 3000.0078125], np.float32).reshape(3, 1)
    exact = x.astype(np.float64)
    mean32 = np.float32(exact.mean())
    raw = np.float32(np.float32((exact**2).mean()) - np.float32(mean32 * mean32))
    assert raw == -1.0
    _, mean, var = _run_batch_norm(x, 1, Numerics())
    assert mean[0] == mean32
    assert var[0] == 0.0
    _, _, var = _run_batch_norm(x, 1, Numerics(stable_norm_statistics=True))
    np.testing.assert_allclose(var, [exact.var()], rtol=1e-3)


def test_a_half_precision_mean_rounds_before_the_variance() -> None:
    # Half activations 100, 100.0625 ×3 (multiples of 1/16, the half ulp in [64, 128)).
    # The mean 100.046875 rounds to 100.0625 in half. One pass (float32): the power is
    # 10,009.3779296875 (exact), 100.0625² = 10,012.50390625 (exact): negative, clamped to 0.
    # Two passes: deviations −0.0625, 0, 0, 0 (exact in half): variance 0.0625² / 4 = 2⁻¹⁰.
    x = np.array([100.0, 100.0625, 100.0625, 100.0625], np.float32).reshape(4, 1)
    half = {"emulate_half": True}
    _, mean1, var1 = _run_batch_norm(x, 1, Numerics(**half, stable_norm_statistics=False))
    _, mean2, var2 = _run_batch_norm(x, 1, Numerics(**half, stable_norm_statistics=True))
    assert mean1[0] == mean2[0] == 100.0625
    assert var1[0] == 0.0
    assert var2[0] == 2.0**-10
    # The same data in float32: mean 100.046875 (exact); one pass 10,009.3779296875 −
    # fl(100.046875²) = 10,009.3779296875 − 10,009.376953125 = 2⁻¹⁰, where the true variance
    # is 3·2⁻¹²: off by the rounding of the square (2⁻¹², a quarter of float32's ulp there).
    _, mean3, var3 = _run_batch_norm(x, 1, Numerics())
    assert mean3[0] == np.float32(100.046875)
    assert var3[0] == 2.0**-10


@settings(max_examples=150, deadline=None)
@given(
    mean=st.floats(-2.0e4, 2.0e4),
    spread=st.floats(1e-3, 1e2),
    count=st.integers(2, 48),
    seed=st.integers(0, 2**16),
)
def test_one_pass_error_is_within_the_rounding_bound(
    mean: float, spread: float, count: int, seed: int
) -> None:
    # Rounding the power P = M² + V and the mean M (then its square) to float32 costs at most
    # u·P + 3u·M² (u = 2⁻²⁴), the subtraction u·V: |v − V| ≤ u·(4M² + 2V), with a little slack
    # for the float64 sums. Two passes lose only a few ulps of V.
    rng = np.random.default_rng(seed)
    x = (mean + spread * rng.standard_normal((count, 1))).astype(np.float32)
    exact = x.astype(np.float64)
    m, v = exact.mean(), exact.var()
    _, one_pass = ipu_batch_norm_stats(x, 1, stable=False)
    _, two_pass = ipu_batch_norm_stats(x, 1, stable=True)
    assert one_pass[0] >= 0.0
    assert abs(float(one_pass[0]) - v) <= 1.01 * U32 * (4.0 * m * m + 2.0 * v) + 1e-30
    assert abs(float(two_pass[0]) - v) <= 8.0 * U32 * v + 1e-30


@contextlib.contextmanager
def _configured(stable: bool) -> Iterator[None]:
    """An IPU system configured with ``norms.use_stable_statistics = stable`` for the block."""
    reset_ipu_configuration()
    cfg = IPUConfig()
    cfg.ipusim.timing = False
    cfg.norms.use_stable_statistics = stable
    cfg.configure_ipu_system()
    try:
        yield
    finally:
        reset_ipu_configuration()


def test_keras_batch_normalization_follows_norms_use_stable_statistics() -> None:
    # The Keras layer in training mode on the 4096 ± 1 data of the first test: IPUConfig's
    # norms.use_stable_statistics picks two passes (unit outputs) over one (±1/√ε).
    x = np.where(np.arange(16) % 2 == 0, 4097.0, 4095.0).astype(np.float32).reshape(16, 1)
    outputs = {}
    for stable in (False, True):
        with _configured(stable):
            layer = keras.layers.BatchNormalization(epsilon=EPS)
            outputs[stable] = np.asarray(layer(x, training=True))
        moving_variance = layer.get_weights()[3]
        # Keras' moving variance: 0.99·1 + 0.01·(batch variance), the batch variance
        # Bessel-corrected only on the fused (4-D) path, so here the biased one.
        want = 0.99 + 0.01 * (1.0 if stable else 0.0)
        np.testing.assert_allclose(moving_variance, [want], rtol=1e-6)
    sign = np.sign(x - 4096.0)
    np.testing.assert_allclose(outputs[False], sign / np.sqrt(EPS), rtol=1e-6)
    np.testing.assert_allclose(outputs[True], sign / np.sqrt(1.0 + EPS), rtol=1e-6)


def test_well_conditioned_statistics_agree_in_both_modes() -> None:
    # A channel mean comparable to its spread (the usual case): both within 1e-6 of float64.
    rng = np.random.default_rng(7)
    x = (0.5 + 2.0 * rng.standard_normal((8, 6, 6, 5))).astype(np.float32)
    want = x.astype(np.float64).reshape(-1, 5).var(axis=0)
    for stable in (False, True):
        _, var = ipu_batch_norm_stats(x, 3, stable=stable)
        np.testing.assert_allclose(var, want, rtol=1e-6)


def _layer_norm_outputs(epsilon: float, stable: bool) -> np.ndarray:
    """Keras LayerNormalization on rows of 4096 ± 1 (mean 4096, variance 1) under an IPUConfig
    with ``norms.use_stable_statistics = stable``."""
    x = np.where(np.arange(8) % 2 == 0, 4097.0, 4095.0).astype(np.float32).reshape(2, 4)
    with _configured(stable):
        return np.asarray(keras.layers.LayerNormalization(epsilon=epsilon)(x))


def test_keras_layer_normalization_takes_one_pass_on_its_fused_path() -> None:
    # Keras computes LayerNormalization with its fused batch-norm kernel when its variables are
    # float32 and ε ≥ 1.001e-5 (the default 1e-3): on the IPU that is PopLibs' one pass, so the
    # rows' variance of 1 cancels to 0 (outputs ±1/√ε) unless use_stable_statistics.
    sign = np.where(np.arange(8) % 2 == 0, 1.0, -1.0).reshape(2, 4)
    np.testing.assert_allclose(_layer_norm_outputs(1e-3, False), sign / np.sqrt(1e-3), rtol=1e-6)
    np.testing.assert_allclose(_layer_norm_outputs(1e-3, True), sign / np.sqrt(1.001), rtol=1e-6)
    # With ε below 1.001e-5 Keras uses tf.nn.moments (two passes) whatever the setting.
    np.testing.assert_allclose(
        _layer_norm_outputs(1e-6, False), sign / np.sqrt(1.0 + 1e-6), rtol=1e-6
    )


def test_layer_norm_gradients_agree_in_both_modes_on_well_conditioned_rows() -> None:
    from ipusim.kernels.norm import layer_norm_grad

    rng = np.random.default_rng(3)
    x = (0.3 + rng.standard_normal((6, 32))).astype(np.float32)
    dy = rng.standard_normal((6, 32)).astype(np.float32)
    gamma = rng.uniform(0.5, 1.5, 32).astype(np.float32)
    one = layer_norm_grad(dy, x, gamma, 1e-3, 1, one_pass=True)
    two = layer_norm_grad(dy, x, gamma, 1e-3, 1, one_pass=False)
    for a, b in zip(one, two):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
