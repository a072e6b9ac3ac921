"""max_pool3d / avg_pool3d and their gradients: a direct-loop reference, TensorFlow's tie rule
for 3-D max pooling, finite differences, and shape errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from gradcheck import assert_close, check_gradients, run_op
from naive_conv import same_or_valid

from ipusim.graph.autodiff import gradients
from ipusim.graph.execute import ExecContext, Executor
from ipusim.graph.graph import Graph
from ipusim.graph.ops import pool3d
from ipusim.graph.spec import TensorSpec


def naive_pool3d(x, pool, strides, padding, reduce):
    """Each window clipped to the volume (padding never counts), reduced with ``reduce``."""
    geo = [same_or_valid(x.shape[a + 1], pool[a], strides[a], padding) for a in range(3)]
    out = np.zeros((x.shape[0], *(g[0] for g in geo), x.shape[4]))
    for o in itertools.product(*(range(g[0]) for g in geo)):
        box = tuple(
            slice(max(o[a] * strides[a] - geo[a][1], 0), o[a] * strides[a] - geo[a][1] + pool[a])
            for a in range(3)
        )
        window = x[(slice(None), *box)].reshape(x.shape[0], -1, x.shape[4])
        out[(slice(None), *o)] = reduce(window, axis=1)
    return out


CASES = [
    ((2, 4, 5, 6, 3), (2, 2, 2), (2, 2, 2), "VALID"),
    ((1, 5, 4, 7, 2), (3, 2, 3), (2, 1, 2), "SAME"),
    ((2, 3, 6, 5, 1), (1, 3, 2), (1, 2, 2), "SAME"),
]


@pytest.mark.parametrize("shape, pool, strides, padding", CASES)
def test_pool3d_matches_direct_loops(shape, pool, strides, padding):
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    for op, reduce in ((pool3d.max_pool3d, np.max), (pool3d.avg_pool3d, np.mean)):
        got = run_op(lambda a, op=op: op(a, pool, strides, padding), x)
        assert_close(got, naive_pool3d(x.astype(np.float64), pool, strides, padding, reduce))


@pytest.mark.parametrize("shape, pool, strides, padding", CASES[1:])
def test_pool3d_gradients_match_finite_differences(shape, pool, strides, padding):
    # Distinct values, so no max is tied and the max pool is differentiable at x.
    x = np.random.default_rng(2).permutation(np.prod(shape)).reshape(shape) / 7.0
    check_gradients(lambda a: pool3d.avg_pool3d(a, pool, strides, padding), x)
    check_gradients(lambda a: pool3d.max_pool3d(a, pool, strides, padding), x)


def test_max_pool3d_gradient_goes_to_every_tied_maximum():
    # TensorFlow's MaxPool3DGrad (and popnn's MaxPoolingGrad) give the window's gradient to
    # every element equal to its maximum: a box of zeros passes the gradient to all 8 voxels
    # (tf.nn.max_pool3d on zeros((1, 2, 2, 2, 1)) gives a gradient of ones).
    x = np.zeros((1, 2, 2, 2, 1), np.float32)
    x_tied = x.copy()
    x_tied[0, 1, 0, 1, 0] = -1.0
    g = Graph()
    px = g.placeholder(TensorSpec(x.shape))
    (dx,) = gradients(
        pool3d.max_pool3d(px, 2), [px], seed=g.constant(np.full((1, 1, 1, 1, 1), 3.0, np.float32))
    )
    for value, want in ((x, np.full(8, 3.0)), (x_tied, np.where(x_tied.ravel() == 0, 3.0, 0.0))):
        got = Executor(g, [dx], [px]).run([value], ExecContext())[0]
        np.testing.assert_array_equal(got.ravel(), want)


def test_pool3d_rejects_bad_arguments():
    g = Graph()
    with pytest.raises(ValueError, match="5-D"):
        pool3d.max_pool3d(g.placeholder(TensorSpec((1, 4, 4, 2))), 2)
    with pytest.raises(ValueError, match="pool_size"):
        pool3d.avg_pool3d(g.placeholder(TensorSpec((1, 4, 4, 4, 2))), (2, 2))
    with pytest.raises(ValueError, match="depth"):
        pool3d.max_pool3d(g.placeholder(TensorSpec((1, 1, 4, 4, 2))), 2)
