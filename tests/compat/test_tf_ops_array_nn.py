"""tf array ops, tf.nn and tf.linalg additions against NumPy, eagerly and inside tf.function,
with gradients from GradientTape checked against finite differences of the eager function."""

from __future__ import annotations

import numpy as np
import pytest

from ipusim.compat import tf
from ipusim.errors import UnsupportedError

RNG = np.random.default_rng(3)
X = RNG.normal(size=(2, 3, 4)).astype(np.float32)
M = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 5.0]], np.float32)


def numeric_grad(f, x0, eps=1e-6):
    base = np.asarray(x0, np.float64)
    out = np.zeros_like(base)
    for i in np.ndindex(base.shape):
        plus, minus = base.copy(), base.copy()
        plus[i] += eps
        minus[i] -= eps
        out[i] = (float(f(plus)) - float(f(minus))) / (2 * eps)
    return out


def tape_grad(f, x0):
    v = tf.Variable(np.asarray(x0, np.float32))

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = f(v)
        return loss, tape.gradient(loss, v)

    return step()


def test_shape_ops_match_numpy():
    np.testing.assert_array_equal(tf.stack([M, M], axis=1), np.stack([M, M], 1))
    parts = tf.unstack(X, axis=2)
    assert len(parts) == 4
    np.testing.assert_array_equal(parts[1], X[:, :, 1])
    a, b = tf.split(X, [1, 3], axis=2)
    np.testing.assert_array_equal(b, X[:, :, 1:])
    np.testing.assert_array_equal(tf.tile(M, [2, 1]), np.tile(M, (2, 1)))
    np.testing.assert_array_equal(
        tf.pad(M, [[1, 0], [0, 2]], constant_values=7),
        np.pad(M, ((1, 0), (0, 2)), constant_values=7),
    )
    np.testing.assert_array_equal(tf.slice(X, [0, 1, 1], [-1, 2, 2]), X[:, 1:3, 1:3])
    np.testing.assert_array_equal(tf.reverse(M, [1]), M[:, ::-1])
    np.testing.assert_array_equal(tf.roll(M, 1, axis=1), np.roll(M, 1, 1))
    np.testing.assert_array_equal(tf.repeat(M, 2, axis=0), np.repeat(M, 2, 0))
    np.testing.assert_array_equal(
        tf.broadcast_to([1.0, 2.0], [3, 2]), np.broadcast_to([1, 2], (3, 2))
    )
    np.testing.assert_array_equal(tf.shape(X), [2, 3, 4])
    assert int(tf.size(X)) == 24 and int(tf.rank(X)) == 3
    np.testing.assert_array_equal(tf.fill([2, 2], 3.0), np.full((2, 2), 3.0))
    np.testing.assert_allclose(tf.linspace(0.0, 1.0, 5), np.linspace(0, 1, 5))
    np.testing.assert_array_equal(tf.sequence_mask([1, 3], 4), np.arange(4) < np.array([[1], [3]]))
    np.testing.assert_array_equal(tf.saturate_cast([300.0, -5.0, 7.6], tf.uint8), [255, 0, 7])


def test_gather_scatter_and_where():
    np.testing.assert_array_equal(tf.gather(X, [3, 0, 3], axis=2), X[:, :, [3, 0, 3]])
    np.testing.assert_array_equal(tf.gather(X, [[1, 0]], axis=1), X[:, [[1, 0]]])
    np.testing.assert_array_equal(tf.gather_nd(M, [[1, 2], [0, 0]]), [5.0, 3.0])
    np.testing.assert_array_equal(tf.gather_nd(X, [[1, 2]]), X[[1], [2]])
    np.testing.assert_array_equal(
        tf.scatter_nd([[1], [3], [1]], [9.0, 8.0, 1.0], [5]), [0, 10, 0, 8, 0]
    )
    np.testing.assert_array_equal(
        tf.tensor_scatter_nd_update(M, [[0, 0], [1, 2]], [7.0, -1.0]), [[7, 1, 2], [0, 5, -1]]
    )
    np.testing.assert_array_equal(
        tf.tensor_scatter_nd_add(M, [[0, 1]], [1.0]), M + [[0, 1, 0], [0, 0, 0]]
    )
    np.testing.assert_array_equal(tf.where(M > 2, M, -M), np.where(M > 2, M, -M))
    np.testing.assert_array_equal(tf.where(M > 2), np.argwhere(M > 2))
    np.testing.assert_array_equal(tf.boolean_mask(M, [True, False]), M[:1])
    values, idx = tf.unique([3, 1, 3, 2, 1])
    np.testing.assert_array_equal(values, [3, 1, 2])
    np.testing.assert_array_equal(idx, [0, 1, 0, 2, 1])
    np.testing.assert_array_equal(tf.sort(M, direction="DESCENDING"), -np.sort(-M, 1))
    np.testing.assert_array_equal(tf.argsort(M), np.argsort(M, 1, kind="stable"))
    np.testing.assert_array_equal(
        tf.searchsorted([[1.0, 2.0, 3.0]], [[2.5, 0.0, 3.0]]), [[2, 0, 2]]
    )
    np.testing.assert_array_equal(tf.searchsorted([[1.0, 2.0, 3.0]], [[3.0]], side="right"), [[3]])


def test_value_dependent_shapes_are_refused_when_traced():
    @tf.function
    def masked(v):
        return tf.boolean_mask(v, v > 0)

    with pytest.raises(UnsupportedError, match="boolean_mask"):
        masked(M)


def test_einsum_tensordot_and_linalg_match_numpy():
    a, b = RNG.normal(size=(2, 3, 4)), RNG.normal(size=(2, 4, 5))
    for eq, ops in [
        ("bij,bjk->bik", (a, b)), ("bij,bjk->bki", (a, b)), ("bij->bj", (a,)),
        ("bij,bjk->", (a, b)), ("ij,kj->ik", (a[0], a[1])), ("bij,bkj->bik", (a, a)),
        ("ij,j->i", (a[0], b[0, :, 0])), ("ijk->kji", (a,)), ("ij,jk,kl->il", (a[0], b[0], b[1].T)),
    ]:  # fmt: skip
        np.testing.assert_allclose(tf.einsum(eq, *ops), np.einsum(eq, *ops), rtol=1e-10, err_msg=eq)
    np.testing.assert_allclose(tf.tensordot(a, b, [[2], [1]]), np.tensordot(a, b, [[2], [1]]))
    np.testing.assert_allclose(tf.tensordot(a[0], b[0], 1), a[0] @ b[0])
    sq = RNG.normal(size=(2, 3, 3))
    np.testing.assert_allclose(tf.linalg.diag_part(sq), np.diagonal(sq, axis1=1, axis2=2))
    np.testing.assert_allclose(tf.linalg.trace(sq), np.trace(sq, axis1=1, axis2=2))
    np.testing.assert_allclose(tf.linalg.diag([1.0, 2.0]), np.diag([1.0, 2.0]))
    np.testing.assert_allclose(tf.linalg.band_part(sq, 1, 0), np.tril(np.triu(sq, -1)))
    np.testing.assert_allclose(tf.linalg.band_part(sq, -1, 0), np.tril(sq))
    np.testing.assert_allclose(
        tf.linalg.matvec(sq, sq[:, 0]), np.einsum("bij,bj->bi", sq, sq[:, 0])
    )
    np.testing.assert_allclose(tf.linalg.matrix_transpose(sq), sq.transpose(0, 2, 1))
    np.testing.assert_allclose(
        tf.linalg.set_diag(sq[0], [7.0, 8.0, 9.0]),
        sq[0] - np.diag(np.diag(sq[0])) + np.diag([7, 8, 9]),
    )
    np.testing.assert_allclose(tf.linalg.cross([1.0, 0, 0], [0, 1.0, 0]), [0, 0, 1.0])
    np.testing.assert_allclose(tf.norm(sq), np.linalg.norm(sq))
    np.testing.assert_allclose(tf.norm(sq, ord=1, axis=-1), np.abs(sq).sum(-1))
    np.testing.assert_allclose(
        tf.linalg.eye(2, batch_shape=[3]), np.broadcast_to(np.eye(2), (3, 2, 2))
    )
    with pytest.raises(UnsupportedError):
        tf.einsum("ii->i", sq[0])


def test_clipping_follows_tensorflow():
    np.testing.assert_allclose(tf.clip_by_value(M, 1.0, 4.0), np.clip(M, 1, 4))
    np.testing.assert_allclose(tf.clip_by_norm(M, 2.0), M * 2.0 / np.linalg.norm(M), rtol=1e-6)
    np.testing.assert_allclose(tf.clip_by_norm(M, 100.0), M)
    g1, g2 = np.array([3.0, 4.0], np.float32), np.array([[12.0]], np.float32)  # global norm 13
    clipped, norm = tf.clip_by_global_norm([g1, None, g2], 6.5)
    assert clipped[1] is None
    np.testing.assert_allclose(norm, 13.0)
    np.testing.assert_allclose(clipped[0], g1 / 2)
    np.testing.assert_allclose(clipped[2], g2 / 2)
    clipped, _ = tf.clip_by_global_norm([g1, np.array([np.inf], np.float32)], 1.0)
    assert np.isnan(clipped[0]).all()  # a non-finite global norm poisons every entry, as TF


def test_nn_functions_match_numpy():
    x = M - 2.5
    np.testing.assert_allclose(tf.nn.relu6(x * 4), np.clip(x * 4, 0, 6))
    np.testing.assert_allclose(tf.nn.elu(x), np.where(x > 0, x, np.expm1(x)), rtol=1e-6)
    np.testing.assert_allclose(tf.nn.leaky_relu(x, 0.1), np.where(x > 0, x, 0.1 * x))
    np.testing.assert_allclose(tf.nn.swish(x), x / (1 + np.exp(-x)), rtol=1e-6)
    np.testing.assert_allclose(tf.nn.silu(x), x / (1 + np.exp(-x)), rtol=1e-6)
    np.testing.assert_allclose(tf.nn.softsign(x), x / (1 + np.abs(x)), rtol=1e-6)
    np.testing.assert_allclose(tf.nn.l2_loss(x), (x**2).sum() / 2, rtol=1e-6)
    mean, var = tf.nn.moments(X, axes=[0, 1])
    np.testing.assert_allclose(mean, X.mean((0, 1)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(var, X.var((0, 1)), rtol=1e-5)
    mean, var = tf.nn.moments(X, axes=[1], keepdims=True)
    assert mean.shape == (2, 1, 4) and var.shape == (2, 1, 4)
    out = tf.nn.batch_normalization(X, X.mean(0), X.var(0), 0.5, 2.0, 1e-3)
    np.testing.assert_allclose(
        out, (X - X.mean(0)) * 2.0 / np.sqrt(X.var(0) + 1e-3) + 0.5, rtol=1e-5, atol=1e-5
    )
    table = RNG.normal(size=(5, 2)).astype(np.float32)
    np.testing.assert_array_equal(tf.nn.embedding_lookup(table, [[4, 0]]), table[[[4, 0]]])
    kept = tf.nn.dropout(np.ones((200, 50), np.float32), rate=0.25, seed=1)
    assert set(np.unique(kept)) <= {0.0, np.float32(1 / 0.75)}
    assert abs(float(np.mean(kept == 0)) - 0.25) < 0.02
    z, logits = np.array([1.0, 0.0], np.float32), np.array([0.3, -1.2], np.float32)
    expected = (1 - z) * logits + (1 + 2.0 * z) * np.log1p(np.exp(-logits))
    np.testing.assert_allclose(
        tf.nn.weighted_cross_entropy_with_logits(z, logits, 3.0), expected, rtol=1e-6
    )
    np.testing.assert_allclose(tf.nn.compute_average_loss([1.0, 3.0], global_batch_size=4), 1.0)


def _conv_reference(x, w, stride):
    n, h, wd, c = x.shape
    kh, kw, _, o = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, oh, ow, o))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride : i * stride + kh, j * stride : j * stride + kw, :]
            out[:, i, j, :] = np.tensordot(patch, w, axes=3)
    return out


def test_convolution_and_pooling_wrappers():
    x = RNG.normal(size=(1, 5, 5, 2)).astype(np.float32)
    w = RNG.normal(size=(3, 3, 2, 4)).astype(np.float32)
    np.testing.assert_allclose(
        tf.nn.conv2d(x, w, 2, "VALID"), _conv_reference(x, w, 2), rtol=1e-4, atol=1e-5
    )
    np.testing.assert_allclose(
        tf.nn.conv2d(x, w, [1, 1, 1, 1], "VALID"), _conv_reference(x, w, 1), rtol=1e-4, atol=1e-5
    )
    seq, k1 = x[:, 0], w[0]
    np.testing.assert_allclose(
        tf.nn.conv1d(seq, k1, 1, "VALID"),
        _conv_reference(seq[:, None], k1[None], 1)[:, 0],
        rtol=1e-4,
        atol=1e-5,
    )
    pooled = tf.nn.max_pool2d(x, 2, 2, "VALID")
    np.testing.assert_allclose(pooled, x[:, :4, :4].reshape(1, 2, 2, 2, 2, 2).max((2, 4)))
    pooled = tf.nn.avg_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    np.testing.assert_allclose(
        pooled, x[:, :4, :4].reshape(1, 2, 2, 2, 2, 2).mean((2, 4)), rtol=1e-6
    )
    dw = RNG.normal(size=(3, 3, 2, 1)).astype(np.float32)
    ref = np.concatenate(
        [_conv_reference(x[..., c : c + 1], dw[:, :, c : c + 1], 1) for c in range(2)], -1
    )
    np.testing.assert_allclose(
        tf.nn.depthwise_conv2d(x, dw, [1, 1, 1, 1], "VALID"), ref, rtol=1e-4, atol=1e-5
    )
    # conv2d_transpose is the adjoint of conv2d: <conv(x), y> == <x, conv_transpose(y)>
    y = RNG.normal(size=(1, 2, 2, 4)).astype(np.float32)
    back = tf.nn.conv2d_transpose(y, w, [1, 5, 5, 2], 2, "VALID")
    lhs = float(np.sum(_conv_reference(x, w, 2) * y))
    assert abs(lhs - float(np.sum(x * back))) < 1e-3 * max(1.0, abs(lhs))


@pytest.mark.parametrize(
    "f",
    [
        lambda a: tf.reduce_sum(tf.gather(a, [2, 0, 2], axis=1) * np.arange(3.0, dtype=a.dtype)),
        lambda a: tf.reduce_sum(tf.gather_nd(a, [[1, 2], [0, 0], [1, 2]])),
        lambda a: tf.reduce_sum(tf.einsum("ij,kj->ik", a, a * a)),
        lambda a: tf.reduce_sum(tf.linalg.trace(tf.einsum("ij,kj->ik", a, a))),
        lambda a: tf.reduce_sum(
            tf.stack(tf.unstack(a, axis=1)[::-1], axis=0) * tf.gather_nd(a, [[0, 0]])
        ),
        lambda a: tf.reduce_sum(tf.nn.moments(a, axes=[1])[1]),
        lambda a: tf.reduce_sum(
            tf.nn.elu(a) + tf.nn.selu(a) + tf.nn.leaky_relu(a) + tf.nn.swish(a)
        ),
        lambda a: tf.reduce_sum(tf.clip_by_norm(a, 1.0) * np.array([1.0, 2.0, 3.0], a.dtype)),
        lambda a: tf.reduce_sum(tf.where(tf.greater(a, 0.2), a * a, -a)),
        lambda a: tf.reduce_sum(tf.square(tf.tile(tf.pad(a, [[1, 0], [0, 1]]), [1, 2]))),
        lambda a: tf.reduce_sum(tf.clip_by_global_norm([a, a * 2.0], 1.0)[0][1] * a),
        lambda a: tf.reduce_sum(tf.reverse(a, [0, -1]) * np.array([1.0, 2.0, 3.0], a.dtype)),
    ],
)
def test_gradients_in_tf_function_match_finite_differences(f):
    x0 = np.array([[0.3, -0.2, 0.9], [1.5, 0.1, -0.7]], np.float32)
    loss, grad = tape_grad(f, x0)
    np.testing.assert_allclose(loss, f(x0.astype(np.float64)), rtol=1e-5)
    np.testing.assert_allclose(grad, numeric_grad(f, x0), rtol=2e-3, atol=2e-4)
