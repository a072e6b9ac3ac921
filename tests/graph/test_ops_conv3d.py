"""conv3d and its two backward ops: a direct-loop reference, finite differences, adjointness,
and shape errors."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_close, check_gradients, run_op
from naive_conv import same_or_valid

from ipusim.graph.execute import ExecContext, Executor
from ipusim.graph.graph import Graph
from ipusim.graph.numerics import Numerics
from ipusim.graph.ops import conv
from ipusim.graph.ops import conv3d as c3
from ipusim.graph.spec import TensorSpec


def rand(shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def naive_conv3d(x, w, strides, padding, dilation):
    """``y[n,o,f] = Σ x_pad[n, o·s + t·d, c] · w[t, c, f]`` over the three axes, in float64."""
    outs, pads = [], [(0, 0)]
    for axis in range(3):
        span = (w.shape[axis] - 1) * dilation[axis] + 1
        out, before, after = same_or_valid(x.shape[axis + 1], span, strides[axis], padding)
        outs.append(out)
        pads.append((before, after))
    xp = np.pad(x.astype(np.float64), [*pads, (0, 0)])
    y = np.zeros((x.shape[0], *outs, w.shape[-1]))
    for o in np.ndindex(*outs):
        for t in np.ndindex(*w.shape[:3]):
            at = tuple(o[a] * strides[a] + t[a] * dilation[a] for a in range(3))
            y[(slice(None), *o)] += xp[(slice(None), *at)] @ w[t]
    return y


CASES = [
    ((2, 4, 5, 3, 2), (2, 2, 2, 2, 3), (1, 1, 1), "VALID", (1, 1, 1)),
    ((1, 5, 6, 4, 3), (3, 3, 2, 3, 2), (2, 1, 2), "SAME", (1, 1, 1)),
    ((2, 6, 5, 5, 1), (2, 2, 3, 1, 2), (1, 2, 1), "VALID", (2, 1, 1)),
    ((1, 3, 4, 4, 2), (3, 1, 2, 2, 2), (3, 2, 1), "SAME", (1, 2, 1)),
]


@pytest.mark.parametrize("xs, ws, strides, padding, dilation", CASES)
def test_conv3d_forward_matches_direct_loop(xs, ws, strides, padding, dilation):
    x, w = rand(xs, np.float32, 1), rand(ws, np.float32, 2)
    y = run_op(lambda a, b: c3.conv3d(a, b, strides, padding, dilation), x, w)
    assert_close(y, naive_conv3d(x, w, strides, padding, dilation), rtol=1e-5)


@pytest.mark.parametrize("xs, ws, strides, padding, dilation", CASES[:3])
def test_conv3d_gradients_match_finite_differences(xs, ws, strides, padding, dilation):
    check_gradients(
        lambda a, b: c3.conv3d(a, b, strides, padding, dilation), rand(xs, seed=3), rand(ws, seed=4)
    )


def test_conv3d_backprop_ops_are_differentiable_adjoints():
    x, w = rand((1, 4, 4, 3, 2), seed=5), rand((2, 3, 2, 2, 3), seed=6)
    dy = rand((1, 2, 2, 2, 3), seed=7)
    attrs = {"strides": (2, 2, 2), "padding": "SAME"}
    y = run_op(lambda a, b: c3.conv3d(a, b, **attrs), x, w)
    dx = run_op(lambda d, f: c3.conv3d_backprop_input(d, f, x.shape, **attrs), dy, w)
    dw = run_op(lambda a, d: c3.conv3d_backprop_filter(a, d, w.shape, **attrs), x, dy)
    # <conv(x, w), dy> = <x, dx> = <w, dw>: each backward op is the forward one's adjoint.
    assert np.isclose(np.sum(y * dy), np.sum(x * dx)) and np.isclose(np.sum(y * dy), np.sum(w * dw))
    check_gradients(lambda d, f: c3.conv3d_backprop_input(d, f, x.shape, **attrs), dy, w)
    check_gradients(lambda a, d: c3.conv3d_backprop_filter(a, d, w.shape, **attrs), x, dy)


def test_conv3d_shape_inference_keeps_unknown_batch_and_counts_flops():
    g = Graph()
    x = g.placeholder(TensorSpec((None, 8, 8, 8, 2)))
    w = g.placeholder(TensorSpec((3, 3, 3, 2, 4)))
    y = c3.conv3d(x, w, strides=2, padding="SAME")
    assert y.shape == (None, 4, 4, 4, 4)
    spec = [TensorSpec((2, 8, 8, 8, 2)), w.spec], [TensorSpec((2, 4, 4, 4, 4))]
    cost = y.node.op.cost(*spec, **y.node.attrs)
    assert cost.flops == 2 * 2 * 4 * 4 * 4 * 4 * 27 * 2 and cost.kind == "conv"


@pytest.mark.parametrize(
    "xs, ws, kwargs, match",
    [
        ((1, 4, 4, 4, 2), (2, 2, 2, 3, 1), {}, "channels"),
        ((1, 4, 4, 2), (2, 2, 2, 2, 1), {}, "5-D"),
        ((1, 2, 4, 4, 2), (3, 2, 2, 2, 1), {}, "depth"),
        ((1, 4, 4, 4, 2), (2, 2, 2, 2, 1), {"strides": (1, 1)}, "strides"),
        ((1, 4, 4, 4, 2), (2, 2, 2, 2, 1), {"padding": "CAUSAL"}, "padding"),
    ],
)
def test_conv3d_rejects_bad_arguments(xs, ws, kwargs, match):
    g = Graph()
    with pytest.raises(ValueError, match=match):
        c3.conv3d(g.placeholder(TensorSpec(xs)), g.placeholder(TensorSpec(ws)), **kwargs)


@pytest.mark.parametrize("partials", ["half", "float"])
def test_conv3d_in_half_runs_the_amp_products_of_the_2d_conv(partials):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 1, 7, 6, 20)).astype(np.float16)
    w = (0.2 * rng.standard_normal((1, 3, 3, 20, 8))).astype(np.float16)
    ctx = ExecContext(numerics=Numerics(conv_partials=partials))
    g = Graph()
    px, pw = (
        g.placeholder(TensorSpec(x.shape, "float16")),
        g.placeholder(TensorSpec(w.shape, "float16")),
    )
    px2 = g.placeholder(TensorSpec(x.shape[:1] + x.shape[2:], "float16"))
    pw2 = g.placeholder(TensorSpec(w.shape[1:], "float16"))
    y3, y2 = c3.conv3d(px, pw), conv.conv2d(px2, pw2)
    out3, out2 = Executor(g, [y3, y2], [px, pw, px2, pw2]).run([x, w, x[:, 0], w[0]], ctx)
    assert out3.dtype == np.float16
    # One plane and one depth tap: the same GEMM as the 2-D conv, rounded the same way.
    np.testing.assert_array_equal(out3[:, 0], out2)
    deep = rng.standard_normal((1, 4, 5, 5, 16)).astype(np.float16)
    wd = (0.2 * rng.standard_normal((3, 2, 2, 16, 4))).astype(np.float16)
    got = run_op_ctx(lambda a, b: c3.conv3d(a, b, 1, "SAME"), [deep, wd], ctx)
    want = naive_conv3d(
        deep.astype(np.float64), wd.astype(np.float64), (1, 1, 1), "SAME", (1, 1, 1)
    )
    # 192 products per output; half partials round each of them (2^-11 relative).
    assert np.max(np.abs(got - want)) <= 5e-3 * np.max(np.abs(want))


def run_op_ctx(fn, arrays, ctx):
    g = Graph()
    inputs = [g.placeholder(TensorSpec(a.shape, a.dtype.name)) for a in arrays]
    return Executor(g, [fn(*inputs)], inputs).run(arrays, ctx)[0].astype(np.float64)
