"""I/O tiles (``IPUConfig.io_tiles``) are taken away from the compute graph: the compute ops run
on ``tiles - num_io_tiles`` tiles (their cost, tile mapping and memory budget with them), and
the step's stream buffers must fit on the I/O tiles or IPU TensorFlow places nothing there
(graphcore/tensorflow ``poplar_compiler.cc`` ``PartitionTiles``, ``io_tiles_placer.cc``).

The expectations are closed forms of the cost model's formulas (``ipusim.cost.vector``:
a ReLU over ``n`` fp32 elements spread linearly over ``T`` tiles) worked out here by hand."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ipusim
from ipusim import keras
from ipusim.errors import ConfigurationError, IPUSimError
from ipusim.hardware import load_system
from ipusim.session.plan import reserved_io_tiles

BATCH, FEATURES = 8, 128_000  # 1,024,000 fp32 elements (32,000 grains of 128 bytes) a step
GC200 = load_system("M2000").ipu


def _predict(io_tiles: int = 0, proportion: float = 0.9, place: bool = True):
    """A ReLU over a (BATCH, FEATURES) fp32 batch, two steps of predict on one IPU."""
    ipusim.config.reset_ipu_configuration()
    cfg = ipusim.IPUConfig()
    cfg.auto_select_ipus = 1
    if io_tiles:
        cfg.io_tiles.num_io_tiles = io_tiles
        cfg.io_tiles.place_ops_on_io_tiles = place
        cfg.io_tiles.available_memory_proportion = proportion
    cfg.configure_ipu_system()
    x = np.ones((2 * BATCH, FEATURES), np.float32)
    try:
        with ipusim.IPUStrategy().scope():
            model = keras.Sequential(
                [keras.Input((FEATURES,)), keras.layers.Activation("relu", name="act")]
            )
            model.compile(steps_per_execution=2)
            model.predict(x, batch_size=BATCH, verbose=0)
    finally:
        ipusim.config.reset_ipu_configuration()
    return model


def _relu(model):
    (step,) = [s for s in model.last_program.pipeline.stages[0].forward.supersteps]
    return step


def _relu_cycles(tiles: int) -> int:
    """popops/popnn 1-D fp32 vertex: 6 x 29 prologue + 11 supervisor + 6 workers' vectors of 2
    floats at 0.5 cycles per element (ipusim.cost.vector's table, restated)."""
    per_tile = math.ceil(BATCH * FEATURES / tiles)
    vectors = math.ceil(math.ceil(per_tile / 6) / 2)
    return 6 * 29 + 11 + math.ceil(6 * vectors * 2 * 0.5)


def _busiest_tile(tiles: int) -> int:
    """The batch mapped linearly in 128-byte grains from tile 0, plus one compute set's code
    (256 bytes on each tile it runs on)."""
    grains = math.ceil(BATCH * FEATURES * 4 / 128)
    return math.ceil(grains / tiles) * 128 + 256


@pytest.mark.parametrize("io_tiles", [0, 32])
def test_compute_runs_on_the_tiles_left_after_the_io_tiles(io_tiles: int) -> None:
    model = _predict(io_tiles)
    compute = GC200.tiles - io_tiles  # 1472 or 1440
    relu = _relu(model)
    assert relu.tiles == compute
    cycles = _relu_cycles(compute)
    assert cycles == (533 if io_tiles == 0 else 545)  # the hand sums, for the record
    assert relu.compute_ps == math.ceil(cycles * 1e12 / GC200.clock_hz)
    memory = model.last_program.memory[0]
    assert memory.budget_bytes == compute * GC200.sram_bytes_per_tile
    assert len(memory.tile_bytes) == compute
    assert max(memory.tile_bytes) == _busiest_tile(compute)  # 3072 B, or 3200 B on fewer tiles
    code = next(i for i in memory.items if i.category == "code")
    assert code.bytes == 256 * compute


def _buffers() -> int:
    """One infeed element and one outfeed element of the step (fp32 in, fp32 out)."""
    return 2 * BATCH * FEATURES * 4


def _on_ipu_infeed_copies(model) -> int:
    df = model.last_simulation.trace.to_dataframe()
    return int(((df.ipu == 0) & (df.name == "infeed copy")).sum())


def test_stream_buffers_that_fit_go_on_the_io_tiles() -> None:
    room = 32 * GC200.sram_bytes_per_tile
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = _predict(32, (_buffers() + 20_000) / room)
    assert _relu(model).tiles == GC200.tiles - 32
    assert _on_ipu_infeed_copies(model) == 0  # the I/O tiles take the copies off the IPU


def test_stream_buffers_that_do_not_fit_leave_every_tile_to_compute() -> None:
    """IPU TensorFlow logs that the computation is too large for the I/O tiles, places nothing
    on them and gives them back to the compute graph; ipusim warns and does the same."""
    room = 32 * GC200.sram_bytes_per_tile
    with pytest.warns(UserWarning, match=r"8192000 bytes.*do not fit on the 32 I/O tiles"):
        model = _predict(32, (_buffers() - 20_000) / room)
    assert _relu(model).tiles == GC200.tiles
    assert model.last_program.memory[0].budget_bytes == GC200.tiles * GC200.sram_bytes_per_tile
    assert _on_ipu_infeed_copies(model) == 2  # the IPU copies each step's input itself


def test_io_tiles_without_placing_ops_on_them_are_reserved_and_idle() -> None:
    """Without ``place_ops_on_io_tiles`` IPU TensorFlow's placer does nothing (its ``Run``
    returns at once), yet the tiles stay out of the compute graph: only the cost remains, and
    no warning, however large the buffers."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        idle = _predict(32, 0.01, place=False)
    assert _relu(idle).tiles == GC200.tiles - 32
    assert _on_ipu_infeed_copies(idle) == 2  # the IPU still copies each step's input itself
    assert idle.last_simulation.seconds > _predict(0).last_simulation.seconds


def test_io_tile_counts_as_ipu_tensorflow_reserves_them() -> None:
    assert reserved_io_tiles(31, 1472) == 32  # rounded up to even
    assert reserved_io_tiles(192, 1472) == 192
    for requested, tiles in ((193, 1472), (4, 4)):
        with pytest.raises(ConfigurationError) as caught:
            reserved_io_tiles(requested, tiles)
        assert isinstance(caught.value, IPUSimError) and isinstance(caught.value, ValueError)
        assert "io_tiles.num_io_tiles" in str(caught.value)


def test_io_tiles_are_deterministic() -> None:
    first, second = _predict(32), _predict(32)
    assert first.last_program.memory[0].tile_bytes == second.last_program.memory[0].tile_bytes
    assert _relu(first) == _relu(second)
    assert first.last_simulation.seconds == second.last_simulation.seconds
