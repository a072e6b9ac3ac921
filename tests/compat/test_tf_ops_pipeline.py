"""New tf ops inside pipeline stages and an on-device loop: a pipelined model whose stages use
einsum, gelu, l2_normalize, cumsum, top_k, logsumexp and moments trains exactly like the same
model with gradient accumulation in ipu.loops.repeat, and is timed."""

from __future__ import annotations

import numpy as np

from ipusim import keras
from ipusim.compat import tf
from ipusim.compat.runtime import loops
from ipusim.compat.runtime.feeds import IPUInfeedQueue, IPUOutfeedQueue
from ipusim.compat.runtime.function import function
from ipusim.compat.runtime.optimizers import GradientAccumulationOptimizerV2
from ipusim.compat.runtime.pipeline_op import OptimizerFunctionOutput, pipeline
from ipusim.pipelining import PipelineSchedule
from ipusim.strategy import IPUStrategy
from tests.compat.test_runtime_pipeline import _configure, _dataset, _fresh  # noqa: F401


def _variables() -> list:
    rng = np.random.default_rng(5)
    return [
        tf.Variable(rng.normal(size=(6, 8)).astype(np.float32) * 0.4, name="w0"),
        tf.Variable(rng.normal(size=(8, 3)).astype(np.float32) * 0.4, name="w1"),
    ]


def _stage0(w0, features):
    h = tf.nn.gelu(tf.einsum("bi,ij->bj", features, w0))
    return tf.math.l2_normalize(h, axis=1) + tf.math.cumsum(h, axis=1) * 0.1


def _stage1(w1, h, labels):
    mean, var = tf.nn.moments(h, axes=[1], keepdims=True)
    h = (h - mean) * tf.math.rsqrt(var + 1e-3)
    logits = tf.matmul(h, w1) + tf.reduce_mean(tf.math.top_k(h, 2).values, axis=1, keepdims=True)
    picked = tf.reduce_sum(tf.one_hot(labels, 3) * logits, axis=1)
    return tf.reduce_mean(tf.math.reduce_logsumexp(logits, axis=1) - picked)


def _reference(gac: int, runs: int) -> list:
    _configure(1)
    w0, w1 = variables = _variables()
    opt = GradientAccumulationOptimizerV2(keras.optimizers.SGD(0.1), gac)
    infeed = IPUInfeedQueue(_dataset())

    def body(features, labels):
        with tf.GradientTape() as tape:
            loss = _stage1(w1, _stage0(w0, features), labels)
        return opt.apply_gradients(zip(tape.gradient(loss, variables), variables))

    IPUStrategy().run(function(lambda: loops.repeat(gac * runs, body, [], infeed)))
    return [w.numpy() for w in variables]


def test_pipeline_stages_with_new_ops_train_like_accumulation():
    _configure(2)
    w0, w1 = variables = _variables()
    infeed = IPUInfeedQueue(_dataset())
    outfeed = IPUOutfeedQueue()

    @function(experimental_compile=True)
    def run():
        return pipeline(
            [lambda f, y: (_stage0(w0, f), y), lambda h, y: _stage1(w1, h, y)],
            gradient_accumulation_count=4,
            repeat_count=2,
            infeed_queue=infeed,
            outfeed_queue=outfeed,
            optimizer_function=lambda loss: OptimizerFunctionOutput(
                keras.optimizers.SGD(0.1), loss, variables=variables
            ),
            device_mapping=[0, 1],
            pipeline_schedule=PipelineSchedule.Grouped,
        )

    strategy = IPUStrategy()
    strategy.run(run)
    got = [w.numpy() for w in variables]
    report = strategy.last_simulation
    assert report.steps == 8 and report.kind == "train"
    assert np.asarray(outfeed.dequeue()).shape == (8,)  # one loss per micro-batch
    want = _reference(4, 2)
    assert not np.allclose(want[0], _variables()[0].numpy())  # training moved the weights
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
