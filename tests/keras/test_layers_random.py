"""The random layers (noise, spatial dropout, image augmentation): statistics and structure
against hand-derived expectations, determinism from the seed stream, identity at inference."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ipusim import keras
from ipusim.graph.autodiff import gradients
from ipusim.graph.execute import ExecContext, Executor
from ipusim.graph.graph import Graph
from ipusim.graph.ops import math as m
from ipusim.graph.spec import TensorSpec

L = keras.layers
N = 200_000  # samples for the statistical checks: 5 standard errors is a tight bound


@pytest.fixture(autouse=True)
def _seed():
    keras.utils.set_random_seed(0)


def _within(value: float, expected: float, standard_error: float) -> bool:
    return abs(value - expected) <= 5 * standard_error


def test_gaussian_noise_has_the_stddev_asked_for_and_is_identity_at_inference():
    x = np.full((N // 100, 100), 3.0, np.float32)
    layer = L.GaussianNoise(0.5)
    noise = layer(x, training=True) - 3.0
    assert _within(noise.mean(), 0.0, 0.5 / math.sqrt(N))
    # The sample variance of N normal draws has standard error sigma^2 sqrt(2 / N).
    assert _within(noise.var(), 0.25, 0.25 * math.sqrt(2 / N))
    np.testing.assert_array_equal(layer(x, training=False), x)
    np.testing.assert_array_equal(layer(x), x)  # Keras' default for noise layers: inference


def test_gaussian_dropout_mean_one_variance_rate_over_one_minus_rate():
    x = np.ones((N // 100, 100), np.float32)
    y = L.GaussianDropout(0.2)(x, training=True)
    variance = 0.2 / 0.8
    assert _within(y.mean(), 1.0, math.sqrt(variance / N))
    assert _within(y.var(), variance, variance * math.sqrt(2 / N))


def test_alpha_dropout_keeps_zero_mean_unit_variance_and_sets_dropped_to_one_value():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((N // 100, 100)).astype(np.float32)
    rate = 0.3
    y = L.AlphaDropout(rate)(x, training=True)
    # SELU's self-normalisation: for inputs of mean 0 and variance 1, the affine correction
    # a = ((1-r)(1 + r alpha'^2))^-1/2, b = -a alpha' r keeps mean 0 and variance 1.
    assert _within(y.mean(), 0.0, 1 / math.sqrt(N))
    # Standard error of a sample variance: sqrt((fourth central moment - variance^2) / N).
    centred = y - y.mean()
    variance_se = math.sqrt((np.mean(centred**4) - np.mean(centred**2) ** 2) / N)
    assert _within(y.var(), 1.0, variance_se)
    alpha_p = -1.6732632423543772 * 1.0507009873554805
    a = ((1 - rate) * (1 + rate * alpha_p**2)) ** -0.5
    b = -a * alpha_p * rate
    dropped = np.isclose(y, a * alpha_p + b, rtol=0, atol=1e-6)
    kept = np.isclose(y, a * x + b, rtol=0, atol=1e-5)
    assert np.all(dropped | kept)
    assert _within(dropped.mean(), rate, math.sqrt(rate * (1 - rate) / N))


@pytest.mark.parametrize(
    ("cls", "shape", "map_axes"),
    [
        (L.SpatialDropout1D, (400, 7, 50), (1,)),
        (L.SpatialDropout2D, (400, 3, 4, 50), (1, 2)),
        (L.SpatialDropout3D, (200, 2, 3, 2, 50), (1, 2, 3)),
    ],
)
def test_spatial_dropout_drops_whole_feature_maps(cls, shape, map_axes):
    x = np.random.default_rng(2).uniform(1, 2, shape).astype(np.float32)
    rate = 0.4
    y = cls(rate)(x, training=True)
    zero = np.all(y == 0, axis=map_axes)
    scaled = np.all(np.isclose(y, x / (1 - rate), rtol=1e-6), axis=map_axes)
    assert np.all(zero ^ scaled)  # every (sample, channel) map is dropped or kept whole
    maps = zero.size
    assert _within(zero.mean(), rate, math.sqrt(rate * (1 - rate) / maps))


def test_spatial_dropout_2d_channels_first_shares_along_rows_and_columns():
    x = np.ones((300, 20, 3, 4), np.float32)
    y = L.SpatialDropout2D(0.5, data_format="channels_first")(x, training=True)
    assert np.all(np.ptp(y, axis=(2, 3)) == 0)
    assert 0 < (y == 0).mean() < 1


def test_same_seed_same_noise_new_step_new_noise():
    x = np.zeros((8, 16), np.float32)
    a, b = L.GaussianNoise(1.0, seed=7), L.GaussianNoise(1.0, seed=7)
    first = a(x, training=True)
    np.testing.assert_array_equal(first, b(x, training=True))
    assert not np.array_equal(first, a(x, training=True))  # the layer's second step


# ------------------------------------------------------------------------------ augmentation
def _images(batch: int = 64) -> np.ndarray:
    return np.random.default_rng(3).uniform(0, 255, (batch, 5, 6, 3)).astype(np.float32)


def test_random_flip_gives_exact_mirror_images_in_all_four_combinations():
    x = _images(400)
    y = L.RandomFlip(seed=5)(x)  # outside a model, Keras' call default training=True applies
    outcomes = {
        "none": x,
        "left_right": x[:, :, ::-1],
        "up_down": x[:, ::-1],
        "both": x[:, ::-1, ::-1],
    }
    counts = dict.fromkeys(outcomes, 0)
    for i in range(len(x)):
        matches = [k for k, v in outcomes.items() if np.array_equal(y[i], v[i])]
        assert matches, f"image {i} is not a mirror image of its input"
        counts[matches[0]] += 1
    for count in counts.values():  # each with probability 1/4
        assert _within(count / len(x), 0.25, math.sqrt(0.25 * 0.75 / len(x)))


def test_random_flip_horizontal_only_flips_left_right_and_is_identity_at_inference():
    x = _images()
    layer = L.RandomFlip("horizontal", seed=1)
    y = layer(x, training=True)
    for i in range(len(x)):
        assert np.array_equal(y[i], x[i]) or np.array_equal(y[i], x[i, :, ::-1])
    np.testing.assert_array_equal(layer(x, training=False), x)


def test_random_crop_is_one_window_of_the_batch_and_its_gradient_lands_there():
    x = _images(4)
    layer = L.RandomCrop(3, 4, seed=11)
    graph = Graph("crop")
    xs = graph.placeholder(TensorSpec(x.shape, "float32"))
    y = layer(xs, training=True)
    dy = np.random.default_rng(4).standard_normal((4, 3, 4, 3)).astype(np.float32)
    (grad,) = gradients(m.reduce_sum(m.multiply(y, dy)), [xs])
    run = Executor(graph, [y, grad], [xs])
    offsets = set()
    for step in range(12):
        out, dx = run.run([x], ExecContext(training=True, step=step))
        found = [
            (r, c)
            for r in range(3)
            for c in range(3)
            if np.array_equal(out, x[:, r : r + 3, c : c + 4])
        ]
        assert len(found) == 1, "the crop is not a single window shared by the batch"
        r, c = found[0]
        expected = np.zeros_like(x)
        expected[:, r : r + 3, c : c + 4] = dy
        np.testing.assert_array_equal(dx, expected)
        offsets.add((r, c))
    assert len(offsets) > 3  # new steps, new offsets


def test_random_contrast_applies_one_factor_in_range_per_step():
    x = np.random.default_rng(6).uniform(100, 150, (8, 5, 6, 3)).astype(np.float32)
    y = L.RandomContrast((0.2, 0.3), seed=2)(x)
    mean = x.mean(axis=(1, 2), keepdims=True)
    factors = (y - mean) / (x - mean)
    factor = float(np.median(factors))
    assert 0.8 <= factor <= 1.3
    np.testing.assert_allclose(y, np.clip((x - mean) * factor + mean, 0, 255), rtol=1e-5)


def test_random_brightness_shifts_each_image_by_one_delta_within_the_factor():
    x = np.random.default_rng(7).uniform(100, 150, (32, 5, 6, 3)).astype(np.float32)
    y = L.RandomBrightness(0.1, seed=3)(x)
    delta = (y - x).reshape(32, -1)
    np.testing.assert_allclose(delta, delta[:, :1].repeat(delta.shape[1], 1), atol=1e-4)
    assert np.all(np.abs(delta) <= 0.1 * 255 + 1e-3)
    assert np.ptp(delta[:, 0]) > 0  # a delta per image, not one for the batch


def test_random_brightness_clips_to_the_value_range():
    x = np.full((4, 2, 2, 1), 0.95, np.float32)
    y = L.RandomBrightness((0.5, 0.6), value_range=(0, 1), seed=1)(x)
    np.testing.assert_array_equal(y, 1.0)


def test_random_rotation_by_a_quarter_turn_is_numpys_rot90():
    x = np.random.default_rng(8).uniform(0, 1, (3, 5, 5, 2)).astype(np.float32)
    y = L.RandomRotation((0.25, 0.25), seed=1)(x)  # exactly 2 pi / 4, counter-clockwise
    np.testing.assert_allclose(y, np.rot90(x, k=1, axes=(1, 2)), atol=1e-5)


def test_random_translation_by_one_row_shifts_and_fills():
    x = np.random.default_rng(9).uniform(0, 1, (2, 5, 4, 1)).astype(np.float32)
    layer = L.RandomTranslation((0.2, 0.2), (0.0, 0.0), fill_mode="constant", fill_value=-1.0)
    y = layer(x)  # down by 0.2 x 5 = 1 row
    np.testing.assert_allclose(y[:, 1:], x[:, :-1], atol=1e-6)
    np.testing.assert_array_equal(y[:, 0], -1.0)


def test_random_zoom_draws_factors_in_range_and_changes_each_step():
    x = np.random.default_rng(10).uniform(0, 1, (4, 8, 8, 1)).astype(np.float32)
    layer = L.RandomZoom((0.0, 0.0), seed=2)  # zoom factor exactly 1: the identity map
    np.testing.assert_allclose(layer(x), x, atol=1e-6)
    zoom = L.RandomZoom(0.5, seed=2)
    first, second = zoom(x), zoom(x)
    assert not np.allclose(first, second)


@pytest.mark.parametrize("layer", [lambda: L.RandomHeight(0.1), lambda: L.RandomWidth(0.1)])
def test_size_changing_augmentations_are_identity_at_inference_and_refuse_training(layer):
    x = _images(2)
    instance = layer()
    np.testing.assert_array_equal(instance(x, training=False), x)
    with pytest.raises(NotImplementedError, match=type(instance).__name__):
        instance(x, training=True)
