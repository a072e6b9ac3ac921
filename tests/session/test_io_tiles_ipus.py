"""I/O tiles only on the IPUs that hold host I/O: in a pipeline, stage 0's IPU (it dequeues the
infeed) and the last stage's IPU (it enqueues the outfeed) lose ``num_io_tiles`` tiles; every
other IPU keeps all its tiles for compute (graphcore/tensorflow ``tests/io_tiles_test.py``,
``testIoTilesOnlyCreatedOnDevicesWithIoInstructions``).

A Sequential of three ReLUs, one per stage, predicts: each stage runs one ReLU over the whole
micro-batch, spread linearly over its IPU's compute tiles, so its tile count and memory budget
are closed forms of the IPU's tiles (1,472 on a GC200) and the 32 I/O tiles."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ipusim
from ipusim import keras
from ipusim.hardware import load_system

BATCH, FEATURES = 8, 128_000  # 1,024,000 fp32 elements a micro-batch, as test_io_tiles.py
GC200 = load_system("M2000").ipu
IO_TILES = 32


def _predict(io_tiles: int, mapping: list[int] | None):
    """Three ReLU stages predicting on four IPUs (``mapping``: the stages' IPUs)."""
    ipusim.config.reset_ipu_configuration()
    cfg = ipusim.IPUConfig()
    cfg.auto_select_ipus = 4
    if io_tiles:
        cfg.io_tiles.num_io_tiles = io_tiles
    cfg.configure_ipu_system()
    x = np.ones((6 * BATCH, FEATURES), np.float32)
    try:
        with ipusim.IPUStrategy().scope():
            model = keras.Sequential(
                [keras.Input((FEATURES,))]
                + [keras.layers.Activation("relu", name=f"act{i}") for i in range(3)]
            )
            model.set_pipeline_stage_assignment([0, 1, 2])
            options = {"device_mapping": mapping} if mapping is not None else {}
            model.set_pipelining_options(gradient_accumulation_steps_per_replica=6, **options)
            model.compile(steps_per_execution=6)
            model.predict(x, batch_size=BATCH, verbose=0)
    finally:
        ipusim.config.reset_ipu_configuration()
    return model.last_program


def _relu(program, stage: int):
    (step,) = program.pipeline.stages[stage].forward.supersteps
    return step


def _relu_ps(tiles: int) -> int:
    """popops 1-D fp32 vertex over ``BATCH * FEATURES`` elements on ``tiles`` tiles: 6 x 29
    prologue + 11 supervisor + 6 workers' vectors of 2 floats at 0.5 cycles per element
    (ipusim.cost.vector's table, restated as in test_io_tiles.py), at the GC200's clock."""
    vectors = math.ceil(math.ceil(math.ceil(BATCH * FEATURES / tiles) / 6) / 2)
    return math.ceil((6 * 29 + 11 + math.ceil(6 * vectors * 2 * 0.5)) * 1e12 / GC200.clock_hz)


def _budgets(program) -> dict[int, int]:
    return {m.ipu: m.budget_bytes for m in program.memory}


@pytest.mark.parametrize(
    ("mapping", "io_ipus"), [(None, {0, 2}), ([0, 1, 0], {0})], ids=["0-1-2", "0-1-0"]
)
def test_only_the_host_io_ipus_lose_the_io_tiles(mapping, io_ipus) -> None:
    plain = _predict(0, mapping)
    with_io = _predict(IO_TILES, mapping)
    ipus = [s.ipu for s in with_io.pipeline.stages]
    assert ipus == (mapping or [0, 1, 2])
    for stage, ipu in enumerate(ipus):
        tiles = GC200.tiles - IO_TILES if ipu in io_ipus else GC200.tiles  # 1440 or 1472
        assert _relu(with_io, stage).tiles == tiles
        assert _relu(with_io, stage).compute_ps == _relu_ps(tiles)
        assert _budgets(with_io)[ipu] == tiles * GC200.sram_bytes_per_tile
        assert _relu(plain, stage).tiles == GC200.tiles
    # IPU 1 holds no host I/O: its stage costs and its budget are the run without I/O tiles'.
    assert _relu(with_io, 1) == _relu(plain, 1)
    assert _budgets(with_io)[1] == _budgets(plain)[1] == GC200.tiles * GC200.sram_bytes_per_tile
    assert _relu_ps(GC200.tiles - IO_TILES) > _relu_ps(GC200.tiles)  # 545 > 533 cycles
