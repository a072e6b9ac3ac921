"""Distributed batch norm (``norms.experimental.distributed_batch_norm_replica_group_size``): the
statistics all-reduces each training batch norm adds, against the ring formula worked by hand
from the M2000's figures; when recomputation repeats them; the group's validity.

The model: batch 4, fp32, Dense(8) -> BatchNormalization -> Dense(2), 2 replicas of one IPU on an
M2000. A group of 2 is one IPU-Link ring of 2 neighbours: an all-reduce of S bytes per replica
is a reduce-scatter and an all-gather of one step each, every step the link latency plus the
sync (on-chip sync and one 15 ns hop) and a chunk of S / 2 split over the ring's two directions.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import ipusim
from ipusim import keras
from ipusim.errors import ConfigurationError, PipelineConfigurationError
from ipusim.hardware import load_system
from ipusim.pipelining import PipelineSchedule, RecomputationMode

CHANNELS = 8


def _train(group: int, stable: bool = False, replicas: int = 2):
    keras.backend.clear_session()
    ipusim.config.reset_ipu_configuration()
    cfg = ipusim.IPUConfig()
    cfg.auto_select_ipus = replicas
    cfg.ipusim.system = "M2000"
    cfg.ipusim.numerics = False
    cfg.norms.experimental.distributed_batch_norm_replica_group_size = group
    cfg.norms.use_stable_statistics = stable
    cfg.configure_ipu_system()
    with ipusim.IPUStrategy().scope():
        model = keras.Sequential(
            [
                keras.Input((6,)),
                keras.layers.Dense(CHANNELS),
                keras.layers.BatchNormalization(),
                keras.layers.Dense(2),
            ]
        )
        model.compile(optimizer="sgd", loss="mse", steps_per_execution=2)
        model.fit(np.zeros((16, 6), np.float32), np.zeros((16, 2), np.float32), batch_size=4)
    return model.last_program


def _norm_steps(program) -> dict[str, object]:
    block = program.pipeline.stages[0].forward.supersteps
    return {s.op: s for s in block if s.op in ("batch_norm", "batch_norm_grad")}


def _all_reduce_ps(num_bytes: int) -> tuple[int, int]:
    """(latency and sync, transfer) of one all-reduce in a ring of 2 neighbours, by hand."""
    system = load_system("M2000")
    link, ipu = system.ipu_link, system.ipu
    sync_ps = round(ipu.onchip_sync_cycles * 1e12 / ipu.clock_hz) + round(
        link.sync_per_hop_s * 1e12
    )
    step_ps = round(link.latency_s * 1e12) + sync_ps
    # Two links join neighbours, each at 17.18 GB/s x 0.85 per direction.
    bandwidth = link.bandwidth_bytes_per_s * link.efficiency * 2
    chunk_ps = math.ceil(num_bytes * 1e12 / (2 * 2 * bandwidth))
    # Reduce-scatter then all-gather: (n - 1) = 1 step each.
    return 2 * step_ps, 2 * chunk_ps


@pytest.mark.parametrize("stable", [False, True])
def test_each_batch_norm_adds_its_statistics_all_reduces(stable: bool) -> None:
    alone = _norm_steps(_train(1, stable))
    shared = _norm_steps(_train(2, stable))
    # Forward: mean (activation type, fp32 here) and power (float), one multi-tensor all-reduce,
    # or one each with stable statistics; backward: the two float gradient sums in one.
    forward = [CHANNELS * 4, CHANNELS * 4] if stable else [CHANNELS * (4 + 4)]
    for op, sizes in (("batch_norm", forward), ("batch_norm_grad", [2 * CHANNELS * 4])):
        parts = [_all_reduce_ps(size) for size in sizes]
        assert shared[op].sync_ps - alone[op].sync_ps == sum(p[0] for p in parts), op
        assert shared[op].exchange_ps - alone[op].exchange_ps == sum(p[1] for p in parts), op
        assert shared[op].compute_ps == alone[op].compute_ps
        assert shared[op].exchange_bytes - alone[op].exchange_bytes == sum(sizes)


def test_the_group_must_divide_the_replicas() -> None:
    with pytest.raises(ConfigurationError, match="distributed_batch_norm_replica_group_size = 4"):
        _train(4, replicas=2)
    with pytest.raises(ConfigurationError, match="does not divide the replication factor"):
        _train(2, replicas=1)


def _pipelined(group: int, mode, device_mapping: tuple[int, ...] = (0, 0), ipus: int = 2) -> list:
    keras.backend.clear_session()
    ipusim.config.reset_ipu_configuration()
    cfg = ipusim.IPUConfig()
    cfg.auto_select_ipus = ipus  # by default 2 replicas of a 2-stage pipeline on one IPU each
    cfg.ipusim.system = "M2000"
    cfg.ipusim.numerics = False
    cfg.allow_recompute = True
    cfg.norms.experimental.distributed_batch_norm_replica_group_size = group
    cfg.configure_ipu_system()
    with ipusim.IPUStrategy().scope():
        inp = keras.Input((6,))
        with keras.ipu.PipelineStage(0):
            h = keras.layers.Dense(CHANNELS)(inp)
            h = keras.layers.BatchNormalization()(h)
            h = keras.layers.Dense(CHANNELS)(h)
        with keras.ipu.PipelineStage(1):
            out = keras.layers.Dense(2)(h)
        model = keras.Model(inp, out)
        model.set_pipelining_options(
            gradient_accumulation_steps_per_replica=4,
            pipeline_schedule=PipelineSchedule.Grouped,
            device_mapping=list(device_mapping),
            recomputation_mode=mode,
        )
        model.compile(optimizer="sgd", loss="mse", steps_per_execution=4)
        model.fit(np.zeros((32, 6), np.float32), np.zeros((32, 2), np.float32), batch_size=4)
    stage = model.last_program.pipeline.stages[0]
    forward = next(s for s in stage.forward.supersteps if s.op == "batch_norm")
    again = [s for s in stage.backward.supersteps if s.name == f"recompute {forward.name}"]
    return [forward, *again]


def test_recomputation_all_reduces_again_unless_interleaved() -> None:
    # IPU TensorFlow: the statistics are all-reduced every time the layer runs, recomputation
    # included, except under RecomputeAndBackpropagateInterleaved.
    latency, transfer = _all_reduce_ps(CHANNELS * (4 + 4))
    base = _pipelined(1, RecomputationMode.RecomputeThenBackpropagate)[0].duration_ps
    forward, recomputed = _pipelined(2, RecomputationMode.RecomputeThenBackpropagate)
    assert forward.duration_ps == recomputed.duration_ps == base + latency + transfer
    forward, recomputed = _pipelined(2, RecomputationMode.RecomputeAndBackpropagateInterleaved)
    assert forward.duration_ps == base + latency + transfer
    assert recomputed.duration_ps == base


def test_a_pipeline_over_several_ipus_refuses_distributed_batch_norm() -> None:
    # IPU TensorFlow's set_norm_options: not for pipelining across several IPUs (one IPU is fine).
    mode = RecomputationMode.RecomputeThenBackpropagate
    with pytest.raises(PipelineConfigurationError) as info:
        _pipelined(2, mode, device_mapping=(0, 1), ipus=4)  # 2 replicas of a 2-IPU pipeline
    message = str(info.value)
    assert "batch_normalization" in message and "IPUs [0, 1]" in message
    assert "distributed_batch_norm_replica_group_size = 2" in message
    assert "device_mapping=[0, 0, ...]" in message  # the fix
    assert _pipelined(1, mode, device_mapping=(0, 1), ipus=4)  # per-replica statistics run
