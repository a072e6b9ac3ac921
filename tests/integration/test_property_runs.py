"""Property: any small model on any configuration either runs or raises one of ipusim's documented
errors, and a run that completes keeps the simulator's invariants (issue 13, "Must show").

Drawn: model kind (Sequential / functional / subclassed), layers, batch size, samples,
steps_per_execution, steps per epoch, gradient accumulation, IPU count, pipeline stages, schedule,
device_mapping, recomputation, offloading, precision, timing-only or numerics, system preset, and
fit / evaluate / predict. Checked on every completed run:

- the records of one track of an IPU never overlap (nor do an IPU's states);
- every micro-batch passes every stage once forward, and once backward when training;
- the utilisation shares of each IPU sum to 1;
- the simulated time is > 0;
- the losses are finite (numerics runs).

CI runs ``IPUSIM_PROPERTY_EXAMPLES`` (default 300) derandomized examples. The 10,000-example
run: ``IPUSIM_PROPERTY_EXAMPLES=10000 IPUSIM_PROPERTY_SUMMARY=summary.json pytest
tests/integration/test_property_runs.py``; the summary counts completed runs and each error type.
"""

from __future__ import annotations

import collections
import json
import math
import os
from dataclasses import asdict, dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ipusim
from ipusim import keras
from ipusim.config import reset_ipu_configuration
from ipusim.errors import USER_ERRORS
from ipusim.lowering.schedules import depth_multiple
from ipusim.lowering.shards import ipus_per_replica
from ipusim.pipelining import PipelineSchedule, RecomputationMode

EXAMPLES = int(os.environ.get("IPUSIM_PROPERTY_EXAMPLES", "300"))
SUMMARY = os.environ.get("IPUSIM_PROPERTY_SUMMARY")
OUTCOMES: collections.Counter[str] = collections.Counter()
COMPLETED: collections.Counter[str] = collections.Counter()  # completed runs, by shape
MESSAGES: dict[str, set[str]] = collections.defaultdict(set)  # distinct messages, for the summary

SYSTEMS = ("", "IPU", "C2", "M2000", "POD16", "Bow-2000")
PRECISIONS = ("fp32", "fp16.16", "fp16.32")
FEATURES, CLASSES = 6, 3


@dataclass(frozen=True)
class Scenario:
    kind: str
    widths: tuple[int, ...]
    stage_of_layer: tuple[int, ...]  # one per layer (the output layer included)
    batch: int
    samples: int
    steps_per_execution: int
    steps_per_epoch: int | None
    accumulation: int
    ipus: int
    schedule: str
    device_mapping: tuple[int, ...] | None
    recompute: bool
    recomputation_mode: str | None
    offload_optimizer_state: bool | None
    offload_activations: bool
    offload_accumulators: bool
    sharding: bool
    precision: str
    timing_only: bool
    system: str
    run: str
    epochs: int
    norm_group: int | None = None  # a BatchNormalization after the first layer, and its group

    @property
    def stages(self) -> int:
        return max(self.stage_of_layer) + 1


@st.composite
def scenarios(draw) -> Scenario:
    hidden = draw(st.integers(0, 3))
    widths = tuple(draw(st.sampled_from([2, 4, 8])) for _ in range(hidden))
    layers = hidden + 1
    stages = draw(st.integers(1, min(4, layers)))
    # Stage of each layer: starts at 0, steps up by 0 or 1, reaches stages - 1.
    steps_up = (
        sorted(draw(st.sets(st.integers(1, layers - 1), min_size=stages - 1, max_size=stages - 1)))
        if stages > 1
        else []
    )
    stage_of_layer = tuple(sum(1 for s in steps_up if s <= i) for i in range(layers))
    mapping = draw(
        st.none() | st.lists(st.integers(0, 3), min_size=stages, max_size=stages).map(tuple)
    )
    batch = draw(st.sampled_from([1, 2, 4, 8]))
    accumulation = draw(st.sampled_from([1, 2, 3, 4, 8]))
    schedule = draw(st.sampled_from(["Grouped", "Interleaved", "Sequential"]))
    # Half the examples are drawn to fit together (so that most of them run and the invariants
    # are checked), the other half freely (so that every rule gets broken).
    if draw(st.booleans()):
        per_replica = ipus_per_replica(mapping or range(stages))
        replicas = draw(st.sampled_from([1, 2]))
        ipus = min(8, per_replica * replicas)
        replicas = ipus // per_replica
        if stages > 1:  # a depth the schedule accepts (2S for Grouped ...)
            distinct = len(set(mapping or range(stages)))
            depth = depth_multiple(schedule.lower(), stages, True, distinct)
            accumulation = depth * draw(st.sampled_from([1, 2]))
        spe = accumulation * draw(st.sampled_from([1, 2]))
        samples = batch * spe * replicas * draw(st.sampled_from([1, 2]))
        steps_per_epoch = None
        system = draw(st.sampled_from(["", "POD16"]))
    else:
        ipus = draw(st.sampled_from([1, 2, 4, 8]))
        spe = draw(st.integers(1, 8))
        samples = draw(st.sampled_from([8, 16, 24, 32, 64]))
        steps_per_epoch = draw(st.none() | st.integers(1, 8))
        system = draw(st.sampled_from(SYSTEMS))
    return Scenario(
        kind=draw(st.sampled_from(["sequential", "functional", "subclassed"])),
        widths=widths,
        stage_of_layer=stage_of_layer,
        batch=batch,
        samples=samples,
        steps_per_execution=spe,
        steps_per_epoch=steps_per_epoch,
        accumulation=accumulation,
        ipus=ipus,
        schedule=schedule,
        device_mapping=mapping,
        recompute=draw(st.booleans()),
        recomputation_mode=draw(st.none() | st.sampled_from([m.name for m in RecomputationMode])),
        offload_optimizer_state=draw(st.sampled_from([None, True, False])),
        offload_activations=draw(st.booleans()),
        offload_accumulators=draw(st.booleans()),
        sharding=draw(st.booleans()),
        precision=draw(st.sampled_from(PRECISIONS)),
        timing_only=draw(st.booleans()),
        system=system,
        run=draw(st.sampled_from(["fit", "fit", "evaluate", "predict"])),
        epochs=draw(st.sampled_from([1, 2])),
        norm_group=draw(st.sampled_from([None, None, 1, 2])),
    )


# ---------------------------------------------------------------------- building a run
def _layers(s: Scenario) -> list[tuple[keras.layers.Layer, int]]:
    """The model's layers with their pipeline stages."""
    hidden = [keras.layers.Dense(w, activation="relu") for w in s.widths]
    stack = list(zip([*hidden, keras.layers.Dense(CLASSES)], s.stage_of_layer))
    if s.norm_group is not None:
        stack.insert(1, (keras.layers.BatchNormalization(), s.stage_of_layer[0]))
    return stack


class _Subclassed(keras.Model):
    def __init__(self, stack: list, pipelined: bool) -> None:
        super().__init__()
        self.stack = [layer for layer, _ in stack]
        self.stages = [stage for _, stage in stack]
        self.pipelined = pipelined

    def call(self, inputs):
        x = inputs
        for layer, stage in zip(self.stack, self.stages):
            if self.pipelined:
                with keras.ipu.PipelineStage(stage):
                    x = layer(x)
            else:
                x = layer(x)
        return x


def _model(s: Scenario) -> keras.Model:
    stack = _layers(s)
    pipelined = s.stages > 1
    if s.kind == "sequential":
        model = keras.Sequential([layer for layer, _ in stack])
        model.build((None, FEATURES))
        if pipelined:
            model.set_pipeline_stage_assignment([stage for _, stage in stack])
        return model
    if s.kind == "functional":
        inputs = keras.Input((FEATURES,))
        x = inputs
        for layer, stage in stack:
            if pipelined:
                with keras.ipu.PipelineStage(stage):
                    x = layer(x)
            else:
                x = layer(x)
        return keras.Model(inputs, x)
    return _Subclassed(stack, pipelined)


def _configure(s: Scenario) -> None:
    cfg = ipusim.IPUConfig()
    cfg.auto_select_ipus = s.ipus
    cfg.allow_recompute = s.recompute
    cfg.ipusim.system = s.system
    cfg.ipusim.precision = s.precision
    cfg.ipusim.numerics = not s.timing_only
    if s.norm_group is not None:
        cfg.norms.experimental.distributed_batch_norm_replica_group_size = s.norm_group
    cfg.configure_ipu_system()


def _options(model: keras.Model, s: Scenario) -> None:
    if s.stages == 1:
        if s.accumulation > 1:
            model.set_gradient_accumulation_options(
                gradient_accumulation_steps_per_replica=s.accumulation
            )
        return
    kwargs = {
        "pipeline_schedule": PipelineSchedule[s.schedule],
        "offload_weight_update_variables": s.offload_optimizer_state,
        "offload_activations": s.offload_activations,
        "offload_gradient_accumulation_buffers": s.offload_accumulators,
        "replicated_optimizer_state_sharding": s.sharding,
    }
    if s.recomputation_mode is not None:
        kwargs["recomputation_mode"] = RecomputationMode[s.recomputation_mode]
    model.set_pipelining_options(
        gradient_accumulation_steps_per_replica=s.accumulation,
        device_mapping=None if s.device_mapping is None else list(s.device_mapping),
        **kwargs,
    )


def _data(s: Scenario) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(s.samples)
    x = rng.normal(size=(s.samples, FEATURES)).astype(np.float32)
    return x, rng.integers(0, CLASSES, s.samples).astype(np.int32)


def _execute(s: Scenario):
    """Run the scenario; returns (model, report, history or None)."""
    reset_ipu_configuration()
    keras.utils.set_random_seed(0)
    _configure(s)
    x, y = _data(s)
    with ipusim.IPUStrategy().scope():
        model = _model(s)
        _options(model, s)
        model.compile(
            optimizer=keras.optimizers.SGD(0.01),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            steps_per_execution=s.steps_per_execution,
        )
        history = None
        if s.run == "fit":
            history = model.fit(
                x,
                y,
                batch_size=s.batch,
                epochs=s.epochs,
                steps_per_epoch=s.steps_per_epoch,
                shuffle=False,
                verbose=0,
            )
        elif s.run == "evaluate":
            model.evaluate(x, y, batch_size=s.batch, steps=s.steps_per_epoch, verbose=0)
        else:
            model.predict(x, batch_size=s.batch, steps=s.steps_per_epoch)
    return model, model.last_simulation, history


# ---------------------------------------------------------------------- invariants
def _check_tracks(report) -> None:
    trace = report.trace
    trace.check_ipu_states()
    frame = trace.to_dataframe()
    device = frame[(frame["ipu"] >= 0) & (frame["end_ps"] > frame["start_ps"])]
    for (ipu, track), rows in device.groupby(["ipu", "track"]):
        rows = rows.sort_values(["start_ps", "end_ps"])
        starts, ends = rows["start_ps"].to_numpy(), rows["end_ps"].to_numpy()
        assert (starts[1:] >= ends[:-1]).all(), f"IPU {ipu} {track}: records overlap"


def _stage_blocks(program) -> list[tuple[int, list[str], list[str]]]:
    """(IPU, forward compute names, backward compute names) of every stage of replica 0 (a
    single IPU's step is one stage whose forward block holds its backward supersteps too)."""
    out = []
    for stage in program.pipeline.stages:
        passes = stage.forward.supersteps + stage.backward.supersteps
        out.append(
            (
                stage.ipu,
                [x.name for x in stage.forward.supersteps if x.compute_ps > 0 and x.phase == "fwd"],
                [x.name for x in passes if x.compute_ps > 0 and x.phase == "bwd"],
            )
        )
    return out


def _check_every_micro_batch_passes_every_stage_once(model, report) -> None:
    program = model.last_program
    training = program.kind == "train"
    frame = report.trace.to_dataframe()
    compute = frame[(frame["track"] == "compute") & (frame["end_ps"] > frame["start_ps"])]
    steps = report.steps
    assert steps > 0
    for ipu, fwd, bwd in _stage_blocks(program):
        on_ipu = compute[compute["ipu"] == ipu]
        for phase, names in (("fwd", fwd), ("bwd", bwd if training else [])):
            if not names:
                continue
            rows = on_ipu[(on_ipu["phase"] == phase) & on_ipu["name"].isin(names)]
            counts = rows.groupby(["step", "name"]).size()
            assert (counts == 1).all(), f"IPU {ipu} {phase}: a micro-batch ran a stage twice"
            per_step = rows.groupby("step")["name"].nunique()
            assert sorted(per_step.index) == list(range(steps)), f"IPU {ipu} {phase}: steps"
            assert (per_step == len(set(names))).all(), f"IPU {ipu} {phase}: a stage skipped"


def _check_invariants(s: Scenario, model, report, history) -> None:
    assert report.seconds > 0
    _check_tracks(report)
    shares = report.utilisation.filter(like="_share").sum(axis=1).to_numpy()
    np.testing.assert_allclose(shares, 1.0, rtol=0, atol=1e-12)
    _check_every_micro_batch_passes_every_stage_once(model, report)
    if history is not None and not s.timing_only:
        losses = history.history["loss"]
        assert losses and all(math.isfinite(v) for v in losses), losses


@pytest.fixture(scope="module", autouse=True)
def _summary():
    yield
    reset_ipu_configuration()
    if SUMMARY:
        with open(SUMMARY, "w", encoding="utf-8") as handle:
            json.dump(
                {
                    "outcomes": dict(sorted(OUTCOMES.items())),
                    "completed": dict(sorted(COMPLETED.items())),
                    "messages": {k: sorted(v) for k, v in sorted(MESSAGES.items())},
                },
                handle,
                indent=2,
            )


@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(scenarios())
def test_every_run_completes_or_raises_a_documented_error(s: Scenario) -> None:
    try:
        model, report, history = _execute(s)
    except USER_ERRORS as error:
        OUTCOMES[type(error).__name__] += 1
        message = str(error)
        MESSAGES[type(error).__name__].add(message.split(":")[0][:90])
        assert len(message) > 40, f"{type(error).__name__} says too little: {message!r}"
        return
    except Exception as error:  # anything else is a bug: show the scenario
        OUTCOMES[f"BUG {type(error).__name__}"] += 1
        raise AssertionError(f"{type(error).__name__}: {error}\n{asdict(s)}") from error
    OUTCOMES["completed"] += 1
    replicas = report.extra.get("replicas", 1)
    COMPLETED[
        f"{s.run} {'pipelined' if s.stages > 1 else 'single-stage'} "
        f"{'replicated' if replicas > 1 else 'one replica'} "
        f"{'timing-only' if s.timing_only else 'numerics'}"
    ] += 1
    _check_invariants(s, model, report, history)
