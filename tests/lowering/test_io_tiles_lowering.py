"""A pipeline with I/O tiles is lowered once, each IPU on its own tiles, each with its own
linear-mapping cursor.

Only the IPUs with host I/O (stage 0's and the last stage's) reserve I/O tiles, so:

- a stage on another IPU is exactly what the same step lowered without I/O tiles makes of it
  (its supersteps, transfers and its IPU's memory plan, bit for bit);
- a stage on a host-I/O IPU is exactly what the step lowered on a system whose every IPU has
  ``tiles - io_tiles`` tiles makes of it (each node is costed on its own IPU's tiles; an IPU's
  memory plan depends only on its own nodes and tiles);
- each IPU's linear mapping starts at tile 0 (graphcore/tensorflow
  ``poplar/driver/tools/mapping_helper.h``: ``LinearMapperState`` keeps the next tile per
  ``poplar::Graph*``, and each IPU's virtual graph is a graph of its own).

The model: 3 stages on IPUs 0, 1, 2, training, fp32, micro-batch 8. Stage 0 runs a ReLU over
the ``8 x 16384`` input (131,072 elements, spread over every tile it has) and Dense "a"; stage
1 Dense "b"; stage 2 Dense "c" back to 16,384 wide, Dense "d" and the loss.
"""

from __future__ import annotations

import importlib
from dataclasses import fields

import numpy as np
import pytest

import ipusim
from ipusim import keras, session
from ipusim.hardware import load_system
from ipusim.lowering import lower
from ipusim.lowering.context import compute_system
from ipusim.lowering.program import PipelineProgram

FEATURES, BATCH, IO_TILES = 16384, 8, 32
GC200 = load_system("M2000").ipu
_lower_module = importlib.import_module("ipusim.lowering.lower")


@pytest.fixture(scope="module")
def traced():
    """The traced training step, its pipeline layout and its system, as the session has them."""
    reports: list = []
    session.ON_REPORT.append(reports.append)
    ipusim.config.reset_ipu_configuration()
    cfg = ipusim.IPUConfig()
    cfg.auto_select_ipus = 4
    cfg.configure_ipu_system()
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6 * BATCH, FEATURES)).astype(np.float32)
    y = rng.integers(0, 10, 6 * BATCH).astype(np.int32)
    try:
        with ipusim.IPUStrategy().scope():
            keras.utils.set_random_seed(1)
            inp = keras.Input((FEATURES,))
            with keras.ipu.PipelineStage(0):
                h = keras.layers.Activation("relu", name="r")(inp)
                h = keras.layers.Dense(16, name="a")(h)
            with keras.ipu.PipelineStage(1):
                h = keras.layers.Dense(16, name="b")(h)
            with keras.ipu.PipelineStage(2):
                h = keras.layers.Dense(FEATURES, name="c")(h)
                out = keras.layers.Dense(10, name="d")(h)
            model = keras.Model(inp, out)
            model.set_pipelining_options(gradient_accumulation_steps_per_replica=6)
            loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
            model.compile(optimizer="sgd", loss=loss, steps_per_execution=6)
            model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)
    finally:
        session.ON_REPORT.remove(reports.append)
        ipusim.config.reset_ipu_configuration()
    lowered = reports[-1].what_if.lowered
    description = lowered.description
    assert description.pipeline is not None
    assert description.pipeline.device_mapping == (0, 1, 2)
    return description.step, description.pipeline, lowered.system


def _lower(step, system, pipeline, io_tiles=0):
    return lower(step, system, pipeline=pipeline, gradient_accumulation=6, io_tiles=io_tiles)


def test_only_the_host_io_ipus_are_lowered_on_fewer_tiles(traced) -> None:
    step, spec, system = traced
    assert spec.io_ipus == {0, 2}
    plain = _lower(step, system, spec)
    with_io = _lower(step, system, spec, IO_TILES)
    # Every IPU reduced: the reference for the host-I/O IPUs.
    reduced = _lower(step, compute_system(system, IO_TILES), spec)
    stages = with_io.pipeline.stages
    memory = {m.ipu: m for m in with_io.memory}
    assert stages[1] == plain.pipeline.stages[1]
    assert memory[1] == next(m for m in plain.memory if m.ipu == 1)
    for s in (0, 2):
        assert stages[s] == reduced.pipeline.stages[s]
        assert memory[s] == next(m for m in reduced.memory if m.ipu == s)
        assert memory[s].budget_bytes == (GC200.tiles - IO_TILES) * GC200.sram_bytes_per_tile
    assert memory[1].budget_bytes == GC200.tiles * GC200.sram_bytes_per_tile
    # The comparison tells the two apart: stage 0's ReLU and stage 2's Dense "c" span every
    # tile their IPU's compute graph has (1,440 with the I/O tiles, 1,472 without).
    for s in (0, 2):
        widest = max(x.tiles for x in stages[s].forward.supersteps)
        assert widest == GC200.tiles - IO_TILES
        assert max(x.tiles for x in plain.pipeline.stages[s].forward.supersteps) == GC200.tiles
        assert stages[s] != plain.pipeline.stages[s]
    # The pipeline-wide figures are the whole system's either way.
    others = [f.name for f in fields(PipelineProgram) if f.name != "stages"]
    assert [getattr(with_io.pipeline, n) for n in others] == [
        getattr(plain.pipeline, n) for n in others
    ]


def test_each_ipu_maps_linearly_from_tile_0(traced, monkeypatch) -> None:
    """Each stage's first bias is the first tensor of its IPU mapped by the linear-mapping cursor
    (the kernels go on their matmul plans' tiles from tile 0, the ReLU's output clones its
    input's mapping), so each starts at tile 0; one cursor for all IPUs would start stage 1's
    bias where stage 0's ended. On IPU 2 the cursor then moves on past "c"'s bias (16,384
    floats, 65,536 bytes in 128-byte grains: 512 tiles), where "d"'s starts."""
    step, spec, system = traced
    contexts: list = []
    build = _lower_module.build_program

    def spy(ctx):
        contexts.append(ctx)
        return build(ctx)

    monkeypatch.setattr(_lower_module, "build_program", spy)
    _lower(step, system, spec, IO_TILES)
    (ctx,) = contexts
    weights = {v.name: v for v in step.weights}
    for ipu, layer, width in ((0, "a", 16), (1, "b", 16), (2, "c", FEATURES)):
        mapper = ctx.mappers[ipu]
        assert mapper.tiles == (GC200.tiles - IO_TILES if ipu in (0, 2) else GC200.tiles)
        bias = mapper.variable(weights[f"{layer}/bias:0"])
        assert (bias.start, bias.total) == (0, 4 * width)
    assert ctx.mappers[2].variable(weights["d/bias:0"]).start == 4 * FEATURES // 128 == 512


def test_an_unpipelined_step_loses_its_io_tiles_the_same_way(traced) -> None:
    """Without a pipeline the one IPU has host I/O: ``io_tiles`` lowers the step exactly as
    on a system whose IPUs have ``tiles - io_tiles`` tiles, and not as on the whole chip."""
    step, _, system = traced
    single = lower(step, system, gradient_accumulation=6, io_tiles=IO_TILES)
    reduced = lower(step, compute_system(system, IO_TILES), gradient_accumulation=6)
    whole = lower(step, system, gradient_accumulation=6)
    assert single == reduced
    assert single.memory[0].budget_bytes == (GC200.tiles - IO_TILES) * GC200.sram_bytes_per_tile
    assert single.pipeline != whole.pipeline
