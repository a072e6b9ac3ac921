"""TensorFlow op cases with subtle semantics, written once against a ``tf`` module argument so
that the same code runs under real TensorFlow (``generate_tf_ops.py`` writes the fixture) and
under ipusim (``tests/numerics/test_tf_ops_parity.py`` compares).

Each case has fixed inputs (a NumPy generator with a fixed seed), a function of ``(tf, K, v)``
(``v`` maps input names to tensors) returning a list of outputs, and the float inputs to
differentiate: :func:`run` returns the outputs and the gradients of ``sum_i sum(w_i * out_i)``
(``w_i`` a fixed ramp) taken with ``tf.GradientTape`` inside a ``tf.function``, as IPU programs
take them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Case:
    inputs: Callable[[np.random.Generator], dict[str, np.ndarray]]
    fn: Callable[[Any, Any, dict[str, Any]], list[Any]]
    wrt: tuple[str, ...] = ()


def _f32(*shape: int, low: float = -2.0, high: float = 2.0) -> Callable[..., np.ndarray]:
    return lambda rng: rng.uniform(low, high, shape).astype(np.float32)


def _ties(rng: np.random.Generator) -> dict[str, np.ndarray]:
    # Few distinct values, so top_k / sort / argsort / in_top_k meet ties.
    return {"x": rng.integers(0, 4, (3, 6)).astype(np.float32)}


CASES: dict[str, Case] = {
    "clip_by_global_norm": Case(
        lambda rng: {"a": _f32(3, 4)(rng), "b": _f32(5)(rng)},
        lambda tf, K, v: [
            *tf.clip_by_global_norm([v["a"], v["b"]], 1.5)[0],
            tf.clip_by_global_norm([v["a"], v["b"]], 1.5)[1],
        ],  # fmt: skip
        ("a", "b"),
    ),
    "clip_by_global_norm_inf": Case(
        lambda rng: {"a": _f32(3)(rng), "b": np.array([np.inf, 1.0], np.float32)},
        lambda tf, K, v: list(tf.clip_by_global_norm([v["a"], v["b"]], 1.0)[0]),
    ),
    "clip_by_norm": Case(
        lambda rng: {"x": _f32(3, 4)(rng)},
        lambda tf, K, v: [tf.clip_by_norm(v["x"], 1.0, axes=[1]), tf.clip_by_norm(v["x"], 50.0)],
        ("x",),
    ),
    "top_k_ties": Case(
        _ties,
        lambda tf, K, v: [tf.math.top_k(v["x"], 4).values, tf.math.top_k(v["x"], 4).indices],
        ("x",),
    ),
    "sort_argsort_ties": Case(
        _ties,
        lambda tf, K, v: [
            tf.sort(v["x"]),
            tf.sort(v["x"], direction="DESCENDING"),
            tf.argsort(v["x"]),
            tf.argsort(v["x"], direction="DESCENDING", stable=True),
            tf.math.in_top_k(tf.constant([0, 3, 5]), v["x"], 2),
            tf.math.argmin(v["x"], 1),
        ],  # fmt: skip
    ),
    "moments": Case(
        lambda rng: {"x": _f32(4, 3, 5)(rng)},
        lambda tf, K, v: [
            *tf.nn.moments(v["x"], axes=[0, 2]),
            *tf.nn.moments(v["x"], axes=[1], keepdims=True),
        ],  # fmt: skip
        ("x",),
    ),
    "softmax_cross_entropy": Case(
        lambda rng: {
            "labels": rng.dirichlet(np.ones(5), 4).astype(np.float32),
            "logits": _f32(4, 5, low=-4, high=4)(rng),
            "ids": rng.integers(0, 5, 4).astype(np.int32),
        },
        lambda tf, K, v: [
            tf.nn.softmax_cross_entropy_with_logits(labels=v["labels"], logits=v["logits"]),
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=v["ids"], logits=v["logits"]),
            tf.nn.sigmoid_cross_entropy_with_logits(labels=v["labels"], logits=v["logits"]),
        ],
        ("labels", "logits"),
    ),
    "l2_normalize_epsilon": Case(
        lambda rng: {"x": np.concatenate([_f32(2, 3)(rng), np.full((1, 3), 1e-4, np.float32)])},
        lambda tf, K, v: [
            tf.math.l2_normalize(v["x"], axis=1),
            tf.math.l2_normalize(v["x"], axis=1, epsilon=1e-3),
        ],  # fmt: skip
        ("x",),
    ),
    "logsumexp_scans": Case(
        lambda rng: {"x": _f32(3, 4)(rng)},
        lambda tf, K, v: [
            tf.math.reduce_logsumexp(v["x"], axis=1),
            tf.math.reduce_logsumexp(v["x"]),
            tf.math.cumsum(v["x"], axis=1, exclusive=True, reverse=True),
            tf.math.cumprod(v["x"], axis=0),
            tf.math.cumprod(v["x"], axis=1, exclusive=True),
            tf.math.reduce_prod(v["x"], axis=1),
            tf.math.reduce_std(v["x"], axis=0),
        ],  # fmt: skip
        ("x",),
    ),
    "rounding_and_division": Case(
        lambda rng: {
            "x": np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.7, -3.7], np.float32),
            "i": np.array([-7, -6, 5, 7], np.int32),
        },
        lambda tf, K, v: [
            tf.math.round(v["x"]),
            tf.math.floor(v["x"]),
            tf.math.ceil(v["x"]),
            tf.math.floormod(v["x"], 2.0),
            tf.math.floordiv(v["x"], 2.0),
            tf.math.floormod(v["i"], 3),
            tf.math.floordiv(v["i"], 3),
            tf.math.sign(v["x"]),
        ],  # fmt: skip
    ),
    "elementwise_gradients": Case(
        lambda rng: {
            "x": _f32(2, 5, low=-0.9, high=0.9)(rng),
            "y": _f32(2, 5, low=0.5, high=2.0)(rng),
        },
        lambda tf, K, v: [
            tf.nn.elu(v["x"]),
            tf.nn.selu(v["x"]),
            tf.nn.softsign(v["x"]),
            tf.nn.leaky_relu(v["x"]),
            tf.nn.swish(v["x"]),
            tf.nn.relu6(v["x"] * 10.0),
            tf.math.atan2(v["x"], v["y"]),
            tf.math.pow(v["y"], v["x"]),
            tf.math.asin(v["x"]),
            tf.math.atanh(v["x"]),
            tf.math.erf(v["x"]),
            tf.math.log1p(v["x"]),
            tf.math.expm1(v["x"]),
            tf.math.rsqrt(v["y"]),
            tf.math.reciprocal(v["y"]),
            tf.math.xlogy(v["x"], v["y"]),
            tf.math.divide_no_nan(v["x"], v["y"] - 1.0),
            tf.math.squared_difference(v["x"], v["y"]),
            tf.math.log_sigmoid(v["x"]),
        ],  # fmt: skip
        ("x", "y"),
    ),
    "gather_scatter_where": Case(
        lambda rng: {"x": _f32(3, 4)(rng)},
        lambda tf, K, v: [
            tf.gather(v["x"], [3, 1, 3], axis=1),
            tf.gather_nd(v["x"], [[2, 1], [0, 0], [2, 1]]),
            tf.tensor_scatter_nd_update(v["x"], [[0, 1]], [5.0]),
            tf.where(tf.greater(v["x"], 0.0), v["x"], tf.square(v["x"])),
            tf.math.unsorted_segment_sum(v["x"], [1, 0, 1], 3),
        ],  # fmt: skip
        ("x",),
    ),
    "einsum_linalg": Case(
        lambda rng: {"a": _f32(2, 3, 4)(rng), "b": _f32(2, 4, 3)(rng)},
        lambda tf, K, v: [
            tf.einsum("bij,bjk->bik", v["a"], v["b"]),
            tf.einsum("bij,bji->b", v["a"], v["b"]),
            tf.tensordot(v["a"], v["b"], [[1, 2], [2, 1]]),
            tf.linalg.trace(tf.matmul(v["a"], v["b"])),
            tf.linalg.band_part(v["a"], 1, 0),
            tf.norm(v["a"], axis=[1, 2]),
            tf.linalg.diag_part(tf.matmul(v["a"], v["b"])),
        ],  # fmt: skip
        ("a", "b"),
    ),
    "keras_backend_losses": Case(
        lambda rng: {
            "t": rng.integers(0, 2, (4, 3)).astype(np.float32),
            "p": rng.uniform(0.0, 1.0, (4, 3)).astype(np.float32),
        },
        lambda tf, K, v: [
            K.binary_crossentropy(v["t"], v["p"]),
            K.categorical_crossentropy(v["t"], v["p"]),
            K.sparse_categorical_crossentropy(tf.constant([0, 2, 1, 1]), v["p"]),
            K.clip(v["p"], 0.2, 0.7),
            K.batch_dot(v["p"], v["t"], axes=1),
        ],  # fmt: skip
        ("p",),
    ),
    "image_basics": Case(
        lambda rng: {"img": rng.uniform(0.0, 1.0, (2, 5, 7, 3)).astype(np.float32)},
        lambda tf, K, v: [
            tf.image.resize(v["img"], [3, 4]),
            tf.image.resize(v["img"], [8, 9]),
            tf.image.resize(v["img"], [4, 10], method="nearest"),
            tf.image.flip_left_right(v["img"]),
            tf.image.flip_up_down(v["img"]),
            tf.image.per_image_standardization(v["img"]),
            tf.image.rgb_to_grayscale(v["img"]),
        ],
        ("img",),
    ),
    "image_crops": Case(
        lambda rng: {"img": rng.uniform(0.0, 1.0, (2, 5, 7, 3)).astype(np.float32)},
        lambda tf, K, v: [
            tf.image.central_crop(v["img"], 0.6),
            tf.image.resize_with_crop_or_pad(v["img"], 4, 9),
            tf.image.rot90(v["img"]),
            tf.image.rot90(v["img"], 3),
            tf.image.adjust_contrast(v["img"], 1.7),  # TensorFlow has no gradient for it
            tf.image.convert_image_dtype(v["img"], tf.uint8, saturate=True),
        ],
    ),
}


def weights(shape: tuple[int, ...]) -> np.ndarray:
    """The fixed ramp an output is weighted by in the differentiated sum."""
    size = int(np.prod(shape, dtype=np.int64))
    return np.linspace(0.5, 1.5, max(size, 1))[:size].reshape(shape).astype(np.float32)


def run(tf: Any, K: Any, name: str, seed: int = 0) -> tuple[dict, list, list]:
    """(inputs, outputs, gradients) of case ``name`` under the given ``tf`` / ``K``."""
    case = CASES[name]
    inputs = case.inputs(np.random.default_rng(seed))
    tensors = {
        k: tf.Variable(a, name=k) if k in case.wrt else tf.constant(a) for k, a in inputs.items()
    }
    if not case.wrt:
        return inputs, [np.asarray(o) for o in case.fn(tf, K, tensors)], []

    @tf.function
    def step() -> Any:
        with tf.GradientTape() as tape:
            outs = case.fn(tf, K, tensors)
            terms = [
                tf.reduce_sum(out * weights(tuple(out.shape)))
                for out in outs
                if out.dtype == tf.float32
            ]
            total = tf.math.add_n(terms)
        grads = tape.gradient(total, [tensors[k] for k in case.wrt])
        return outs, grads

    outs, grads = step()
    return inputs, [np.asarray(o) for o in outs], [np.asarray(g) for g in grads]
