"""resize (bilinear and nearest) and its gradient: per-pixel references of TensorFlow's
half-pixel rules, finite differences, and the plan (a depthwise convolution, as tf2xla lowers
the resize)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gradcheck import assert_close, check_gradients, run_op

from ipusim.cost.compute import op_plan
from ipusim.graph.graph import Graph, apply
from ipusim.graph.ops import resize
from ipusim.graph.spec import TensorSpec
from ipusim.hardware import get_chip


def naive_resize(x: np.ndarray, scale: tuple[int, int]) -> np.ndarray:
    """Each output pixel from the four source pixels around ``(o + 0.5) / s − 0.5`` per axis,
    indices clamped to the image (TensorFlow 2's ``tf.image.resize``, bilinear)."""
    n, h, w, c = x.shape
    out = np.zeros((n, h * scale[0], w * scale[1], c))

    def taps(o: int, s: int, size: int) -> list[tuple[int, float]]:
        src = (o + 0.5) / s - 0.5
        lo = math.floor(src)
        frac = src - lo
        return [(min(max(lo, 0), size - 1), 1 - frac), (min(max(lo + 1, 0), size - 1), frac)]

    for i in range(h * scale[0]):
        for j in range(w * scale[1]):
            for a, wa in taps(i, scale[0], h):
                for b, wb in taps(j, scale[1], w):
                    out[:, i, j] += wa * wb * x[:, a, b]
    return out


@pytest.mark.parametrize("shape, scale", [((2, 3, 4, 2), (2, 2)), ((1, 4, 3, 3), (3, 1))])
def test_resize_matches_the_per_pixel_rule(shape, scale):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    assert_close(run_op(lambda a: resize.resize(a, scale), x), naive_resize(x, scale))


def test_resize_gradient_matches_finite_differences_and_is_differentiable_again():
    x = np.random.default_rng(1).standard_normal((1, 3, 4, 2))
    check_gradients(lambda a: resize.resize(a, (2, 3)), x)
    dy = np.random.default_rng(2).standard_normal((1, 6, 12, 2))
    check_gradients(lambda d: apply("resize_grad", d, input_hw=(3, 4), scale=(2, 3)), dy)
    # The two are adjoint: <resize(x), dy> = <x, resize_grad(dy)>.
    y = run_op(lambda a: resize.resize(a, (2, 3)), x)
    dx = run_op(lambda d: apply("resize_grad", d, input_hw=(3, 4), scale=(2, 3)), dy)
    assert np.isclose(np.sum(y * dy), np.sum(x * dx))


def test_resize_grad_checks_dy_against_the_input():
    g = Graph()
    with pytest.raises(ValueError, match="spatial size"):
        apply(
            "resize_grad",
            g.placeholder(TensorSpec((1, 6, 11, 2))),
            input_hw=(3, 4),
            scale=(2, 3),
        )


def test_resize_is_planned_as_a_depthwise_convolution():
    x, y = TensorSpec((8, 32, 32, 16), "float16"), TensorSpec((8, 64, 64, 16), "float16")
    ipu = get_chip("GC200")
    forward = op_plan("resize", [x], [y], {"scale": (2, 2)}, ipu, "fp16.16")
    backward = op_plan("resize_grad", [y], [x], {"scale": (2, 2)}, ipu, "fp16.16")
    for plan, field in ((forward, (64, 64)), (backward, (32, 32))):
        problem = plan.problem
        assert problem.groups == 16 and problem.cin == problem.cout == 1
        assert (problem.batch, problem.out_h, problem.out_w) == (8, *field)
    # Two source pixels per resized axis for every output pixel.
    assert forward.problem.macs == 8 * 64 * 64 * 16 * 4
    rows_only = op_plan(
        "resize",
        [x],
        [TensorSpec((8, 64, 32, 16), "float16")],
        {"scale": (2, 1)},
        ipu,
        "fp16.16",
    )
    assert rows_only.problem.macs == 8 * 64 * 32 * 16 * 2


def test_upsampling2d_resizes_one_axis_at_a_time_as_tf2xla():
    from ipusim import keras

    layer = keras.layers.UpSampling2D((2, 3), interpolation="bilinear")
    g = Graph()
    y = layer(g.placeholder(TensorSpec((1, 4, 5, 2))))
    scales = [n.attrs["scale"] for n in g.nodes if n.op.name == "resize"]
    assert scales == [(2, 1), (1, 3)] and y.shape == (1, 8, 15, 2)


def test_nearest_resize_repeats_pixels_and_sums_their_gradients():
    x = np.random.default_rng(3).standard_normal((2, 3, 4, 2)).astype(np.float32)
    y = run_op(lambda a: resize.resize(a, (2, 3), "nearest"), x)
    # floor((o + 0.5) / s) = o // s: every pixel repeated (exactly, no arithmetic).
    np.testing.assert_array_equal(y, np.repeat(np.repeat(x, 2, axis=1), 3, axis=2))
    check_gradients(lambda a: resize.resize(a, (2, 3), "nearest"), x.astype(np.float64))
    x16, y16 = TensorSpec((8, 32, 32, 16), "float16"), TensorSpec((8, 64, 32, 16), "float16")
    plan = op_plan(
        "resize", [x16], [y16], {"scale": (2, 1), "method": "nearest"}, get_chip("GC200"), "fp16.16"
    )
    assert plan.problem.macs == 8 * 64 * 32 * 16  # one source pixel per output pixel
    with pytest.raises(ValueError, match="method"):
        resize.resize(Graph().placeholder(TensorSpec((1, 2, 2, 1))), 2, "bicubic")


def test_a_non_finite_pixel_reaches_only_the_outputs_that_read_it():
    x = np.zeros((1, 6, 6, 1), np.float32)
    x[0, 0, 0, 0] = np.inf
    y = run_op(lambda a: resize.resize(a, (2, 2)), x)
    reached = ~np.isfinite(y[0, :, :, 0])
    # Output rows / columns 0-2 read source pixel 0 (half-pixel centres, clamped at the edge).
    assert reached[:3, :3].all() and not reached[3:].any() and not reached[:, 3:].any()
