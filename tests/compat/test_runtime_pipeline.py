"""pipelining_ops.pipeline: numerics equal to the unpipelined computation with the same
accumulation (ordinary and concurrent stages, every schedule), outfeed options, and the
validation conditions of reference §4."""

from __future__ import annotations

import numpy as np
import pytest

import ipusim
from ipusim import keras
from ipusim.compat.runtime import loops, ops
from ipusim.compat.runtime.feeds import IPUInfeedQueue, IPUOutfeedMode, IPUOutfeedQueue
from ipusim.compat.runtime.function import function
from ipusim.compat.runtime.optimizers import GradientAccumulationOptimizerV2, MapGradientOptimizer
from ipusim.compat.runtime.pipeline_op import OptimizerFunctionOutput, pipeline
from ipusim.compat.runtime.tape import GradientTape
from ipusim.config import reset_ipu_configuration
from ipusim.data import Dataset
from ipusim.pipelining import PipelineSchedule, PipelineStageOptions
from ipusim.strategy import IPUStrategy

RNG = np.random.default_rng(0)
X = RNG.normal(size=(96, 6)).astype(np.float32)
Y = RNG.integers(0, 3, 96).astype(np.int32)


def _configure(ipus: int) -> None:
    reset_ipu_configuration()
    cfg = ipusim.IPUConfig()
    cfg.auto_select_ipus = ipus
    cfg.configure_ipu_system()


@pytest.fixture(autouse=True)
def _fresh():
    _configure(4)
    yield
    reset_ipu_configuration()


def _dataset() -> Dataset:
    return Dataset.from_tensor_slices((X, Y)).batch(4, drop_remainder=True).repeat()


def _layers(seed: int = 7) -> list:
    keras.utils.set_random_seed(seed)
    sizes = [(6, 8), (8, 5), (8, 5), (10, 3)]
    layers = [
        keras.layers.Dense(n, activation="relu" if i < 3 else None)
        for i, (_, n) in enumerate(sizes)
    ]
    for layer, (m, _) in zip(layers, sizes):
        layer.build((None, m))
    return layers


def _loss(logits, labels):
    return ops.reduce_mean(
        ops.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    )


def _reference(layers, gac: int, runs: int, method: str = "sum") -> list[np.ndarray]:
    """The same model, unpipelined, with a gradient-accumulation optimizer in a loop."""
    _configure(1)
    d0, da, db, d2 = layers
    variables = [w for layer in layers for w in layer.trainable_weights]
    opt = GradientAccumulationOptimizerV2(keras.optimizers.SGD(0.1), gac, reduction_method=method)
    infeed = IPUInfeedQueue(_dataset())

    def body(features, labels):
        with GradientTape() as tape:
            h = d0(features)
            logits = d2(ops.concat([da(h), db(h)], axis=1))
            loss = _loss(logits, labels)
        return opt.apply_gradients(zip(tape.gradient(loss, variables), variables))

    IPUStrategy().run(function(lambda: loops.repeat(gac * runs, body, [], infeed)))
    return [w.numpy() for w in variables]


def _run_pipeline(layers, schedule, concurrent: bool, gac: int, runs: int, opt=None, **kwargs):
    """``opt``: a TF1-style wrapper to train with (every trainable variable); default SGD(0.1)."""
    _configure(4)
    d0, da, db, d2 = layers
    variables = [w for layer in layers for w in layer.trainable_weights]
    outfeed = IPUOutfeedQueue()

    def stage0(features, labels):
        return d0(features), labels

    def stage1a(h, labels):
        return da(h)

    def stage1b(h, labels):
        return db(h), labels

    def stage1(h, labels):
        return da(h), db(h), labels

    def stage2(a, b, labels):
        return _loss(d2(ops.concat([a, b], axis=1)), labels)

    stages = [stage0, [stage1a, stage1b], stage2] if concurrent else [stage0, stage1, stage2]
    mapping = [0, [1, 2], 3] if concurrent else [0, 1, 3]
    infeed = IPUInfeedQueue(_dataset())

    @function(experimental_compile=True)
    def run():
        return pipeline(
            stages,
            gradient_accumulation_count=gac,
            repeat_count=runs,
            infeed_queue=infeed,
            outfeed_queue=outfeed,
            optimizer_function=lambda loss: (
                OptimizerFunctionOutput(keras.optimizers.SGD(0.1), loss, variables=variables)
                if opt is None
                else OptimizerFunctionOutput(opt, loss)
            ),
            device_mapping=mapping,
            pipeline_schedule=schedule,
            **kwargs,
        )

    strategy = IPUStrategy()
    strategy.run(run)
    return [w.numpy() for w in variables], outfeed, strategy.last_simulation


@pytest.mark.parametrize(
    ("schedule", "concurrent"),
    [
        (PipelineSchedule.Grouped, False),
        (PipelineSchedule.Interleaved, False),
        (PipelineSchedule.Sequential, False),
        (PipelineSchedule.Grouped, True),
    ],
)
def test_pipeline_trains_like_accumulation_without_pipelining(schedule, concurrent):
    got, outfeed, report = _run_pipeline(_layers(), schedule, concurrent, gac=6, runs=2)
    want = _reference(_layers(), gac=6, runs=2)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert outfeed.dequeue().shape == (12,)  # the last stage's loss, per micro-batch
    assert report.steps == 12 and report.kind == "train"
    assert report.extra["gradient_accumulation"] == 6


def test_a_gradient_map_of_the_pipeline_optimizer_is_applied():
    # SGD(0.05) on gradients mapped to 2 g is SGD(0.1) on g: the unpipelined reference.
    doubled = MapGradientOptimizer(keras.optimizers.SGD(0.05), lambda g, v: g * 2.0)
    got, _, _ = _run_pipeline(_layers(), PipelineSchedule.Grouped, False, 6, 1, opt=doubled)
    for a, b in zip(got, _reference(_layers(), gac=6, runs=1)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_mean_reduction_and_outfeed_options():
    got, outfeed, _ = _run_pipeline(
        _layers(), PipelineSchedule.Grouped, False, 6, 1, reduction_method="mean", outfeed_loss=True
    )
    want = _reference(_layers(), 6, 1, "mean")
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert outfeed.dequeue().shape == (6,)
    _, accumulated, _ = _run_pipeline(
        _layers(), PipelineSchedule.Grouped, False, 6, 2, accumulate_outfeed=True
    )
    _, per_step, _ = _run_pipeline(_layers(), PipelineSchedule.Grouped, False, 6, 2)
    steps = per_step.dequeue()
    np.testing.assert_allclose(accumulated.dequeue(), [steps[:6].sum(), steps[6:].sum()], rtol=1e-5)


def test_inference_pipeline_outfeeds_the_last_stage_outputs():
    outfeed = IPUOutfeedQueue()
    infeed = IPUInfeedQueue(Dataset.from_tensor_slices(X).batch(4, drop_remainder=True))

    def run():
        return pipeline(
            [lambda x: x * 2.0, lambda y: {"double": y, "triple": y * 1.5}],
            gradient_accumulation_count=4,
            infeed_queue=infeed,
            outfeed_queue=outfeed,
        )

    strategy = IPUStrategy()
    strategy.run(function(run))
    result = outfeed.dequeue()
    # Two stages on a 4-IPU device: 2 replicas; micro-batch m of replica r is batch 2 m + r.
    batches = X[:32].reshape(4, 2, 4, 6)
    np.testing.assert_allclose(result["double"], 2 * batches)
    np.testing.assert_allclose(result["triple"], 3 * batches)
    report = strategy.last_simulation
    assert report.kind == "predict" and report.extra["replicas"] == 2


# ---------------------------------------------------------------------- §4 checks
def _stage(x):
    return x


def _call(**overrides):
    kwargs = dict(computational_stages=[_stage, _stage], gradient_accumulation_count=4)
    kwargs.update(overrides)
    return pipeline(**kwargs)


@pytest.mark.parametrize(
    ("overrides", "error", "message"),
    [
        ({"continuous_weight_updates": True}, NotImplementedError, "Continuous weight updates"),
        ({"computational_stages": _stage}, TypeError, "needs to be a list or a tuple"),
        ({"gradient_accumulation_count": None}, ValueError, "must be specified"),
        ({"gradient_accumulation_count": -1}, ValueError, "must be >= 0"),
        ({"gradient_accumulation_count": 2**31}, ValueError, "max int32"),
        ({"reduction_method": "median"}, ValueError, "GradientAccumulationReductionMethod"),
        (
            {"batch_serialization_iterations": 2, "reduction_method": "mean"},
            ValueError,
            "only supported when reduction_method is GradientAccumulationReductionMethod.SUM",
        ),
        ({"pipeline_schedule": "grouped"}, TypeError, "not a member of the PipelineSchedule"),
        (
            {"batch_serialization_iterations": 2, "pipeline_schedule": PipelineSchedule.Grouped},
            NotImplementedError,
            "only supported with the `Sequential` schedule",
        ),
        ({"recomputation_mode": "auto"}, TypeError, "not a member of the RecomputationMode"),
        ({"infeed_queue": [1]}, TypeError, "not an instance of ipu_infeed_queue.IPUInfeedQueue"),
        ({"outfeed_queue": [1]}, TypeError, "not an instance of ipu_outfeed_queue.IPUOutfeedQueue"),
        ({"computational_stages": [_stage]}, ValueError, "at least two computational stages"),
        ({"device_mapping": 0}, TypeError, "device_mapping argument needs to be a list"),
        ({"device_mapping": [0]}, ValueError, "1 mappings != 2 stages"),
        (
            {
                "device_mapping": [0, 0],
                "pipeline_schedule": PipelineSchedule.Interleaved,
                "optimizer_function": lambda x: None,
            },
            NotImplementedError,
            "'Interleaved' does not currently support multiple pipeline stages on the same device",
        ),
        (
            {"batch_serialization_iterations": 2, "device_mapping": [0, 1]},
            NotImplementedError,
            "mapped to a single IPU",
        ),
        (
            {"forward_propagation_stages_poplar_options": PipelineStageOptions()},
            TypeError,
            "must be a list or a tuple of PipelineStageOptions",
        ),
        (
            {"backward_propagation_stages_poplar_options": [PipelineStageOptions()]},
            ValueError,
            "of length 2",
        ),
        (
            {"forward_propagation_stages_poplar_options": [PipelineStageOptions(), 1]},
            TypeError,
            "Expected all elements of forward_propagation_stages_poplar_options",
        ),
        ({"weight_update_poplar_options": {}}, TypeError, "weight_update_poplar_options"),
        (
            {"outfeed_mask": [True]},
            ValueError,
            "optimizer_function must be provided when outfeed_mask",
        ),
        (
            {"outfeed_loss": True},
            ValueError,
            "optimizer_function must be provided when outfeed_loss",
        ),
        (
            {"outfeed_loss": True, "outfeed_mask": [True], "optimizer_function": lambda x: None},
            ValueError,
            "Only one of `outfeed_loss` and `outfeed_mask`",
        ),
        (
            {"accumulate_outfeed": True},
            ValueError,
            "outfeed_queue must be provided when accumulate",
        ),
        (
            {
                "accumulate_outfeed": True,
                "outfeed_queue": IPUOutfeedQueue(outfeed_mode=IPUOutfeedMode.LAST),
            },
            ValueError,
            "must be in IPUOutfeedMode ALL",
        ),
        ({"gradient_accumulation_count": 3}, ValueError, "must be a multiple of 2, but it is 3"),
        (
            {"gradient_accumulation_count": 6, "optimizer_function": lambda x: None},
            ValueError,
            "must be a multiple of 4, but it is 6",
        ),
        (
            {
                "gradient_accumulation_count": 0,
                "pipeline_schedule": PipelineSchedule.Sequential,
            },
            ValueError,
            "must be at least 1, but it is 0",
        ),
    ],
)
def test_pipeline_argument_checks(overrides, error, message):
    with pytest.raises(error, match=message):
        _call(**overrides)


def test_inference_warnings():
    no_outfeed = pytest.raises(ValueError, match="no outfeed_queue")  # the stages output tensors
    with (
        pytest.warns(UserWarning, match="offload_weight_update_variables will have no effect"),
        no_outfeed,
    ):
        IPUStrategy().run(
            function(
                lambda: _call(offload_weight_update_variables=True, inputs=[np.ones(2, np.float32)])
            )
        )
    sharding = "replicated_optimizer_state_sharding will have no effect"
    with pytest.warns(UserWarning, match=sharding), pytest.raises(ValueError, match="no outfeed"):
        _call(replicated_optimizer_state_sharding=True, inputs=[np.ones(2, np.float32)])


def _trace(**overrides):
    return IPUStrategy().run(function(lambda: _call(**overrides)))


def test_checks_made_while_tracing_the_stages():
    data = np.ones((8, 2), np.float32)
    infeed = IPUInfeedQueue(Dataset.from_tensor_slices(data))
    with pytest.raises(ValueError, match="has tensor outputs: .* but no outfeed_queue"):
        _trace(infeed_queue=infeed)
    sgd = keras.optimizers.SGD()
    w = ops.Variable(np.ones(2, np.float32))
    with pytest.raises(ValueError, match="has 1 outputs, but the `outfeed_mask` has elements 2"):
        _trace(
            computational_stages=[lambda x: x * w, lambda y: ops.reduce_sum(y)],
            infeed_queue=IPUInfeedQueue(Dataset.from_tensor_slices(data)),
            outfeed_queue=IPUOutfeedQueue(),
            outfeed_mask=[True, False],
            optimizer_function=lambda loss: OptimizerFunctionOutput(sgd, loss, variables=[w]),
        )
    with pytest.raises(RuntimeError, match="No variables to optimize"):
        _trace(
            computational_stages=[lambda x: x * w, lambda y: ops.reduce_sum(y)],
            infeed_queue=IPUInfeedQueue(Dataset.from_tensor_slices(data)),
            outfeed_queue=IPUOutfeedQueue(),
            optimizer_function=lambda loss: OptimizerFunctionOutput(sgd, loss),
        )

    def captures():
        traced = ops.identity(ops.Variable(np.ones(2, np.float32)))
        return pipeline(
            [lambda x: x + traced, _stage],
            gradient_accumulation_count=4,
            infeed_queue=IPUInfeedQueue(Dataset.from_tensor_slices(data)),
            outfeed_queue=IPUOutfeedQueue(),
        )

    with pytest.raises(ValueError, match="is not a resource"):
        IPUStrategy().run(function(captures))


def test_optimizer_function_output_checks():
    sgd = keras.optimizers.SGD()
    loss = None

    def traced_loss():
        nonlocal loss
        loss = ops.identity(ops.Variable(np.float32(1.0)))
        with pytest.raises(TypeError, match="opt must be a TensorFlow Optimizer"):
            OptimizerFunctionOutput("sgd", loss)
        with pytest.raises(TypeError, match="loss must be a TensorFlow Tensor"):
            OptimizerFunctionOutput(sgd, 1.0)
        with pytest.raises(ValueError, match="may not be used with OptimizerV2"):
            OptimizerFunctionOutput(sgd, loss, compute_gradients_args=(1,))
        with pytest.raises(TypeError, match="compute_gradients_kwargs must be a dict"):
            OptimizerFunctionOutput(sgd, loss, compute_gradients_kwargs=[1])
        with pytest.raises(TypeError, match="apply_gradients_args must be a tuple"):
            OptimizerFunctionOutput(sgd, loss, apply_gradients_args=[1])
        with pytest.raises(ValueError, match="either `variables` or `tape`"):
            OptimizerFunctionOutput(sgd, loss, variables=[], tape=GradientTape())
        with pytest.raises(TypeError, match="tape must be a GradientTape"):
            OptimizerFunctionOutput(sgd, loss, tape=object())
        wrapped = GradientAccumulationOptimizerV2(sgd, 2)
        with pytest.raises(ValueError, match="variables can only be used with OptimizerV2"):
            OptimizerFunctionOutput(wrapped, loss, variables=[])
        return loss

    IPUStrategy().run(function(traced_loss))
