"""The host input-pipeline cost model against real tf.data measurements and its composition."""

from __future__ import annotations

import numpy as np
import pytest

import ipusim
from ipusim import keras
from ipusim.data import AUTOTUNE, Dataset
from ipusim.data.host_cost import (
    BATCH_CALL_US,
    MAP_CALL_US,
    HostCPU,
    arrays_seconds_per_sample,
    dataset_seconds_per_sample,
)

CALIBRATION = HostCPU(cores=1, compute_scale=1.0, call_scale=1.0)  # the measuring machine


def _seed_pipeline(n: int = 2000) -> Dataset:
    """The pipeline of the IPU Keras guide (seeds/004 §19.1), as written."""
    x = np.zeros((n, 28, 28)) / 255.0  # float64 elements
    y = np.zeros(n, np.uint8)
    ds = Dataset.from_tensor_slices((x, y)).shuffle(10000).batch(32, drop_remainder=True)
    ds = ds.map(lambda d, label: (d.astype(np.float32), label.astype(np.int32)))
    return ds.repeat().prefetch(16)


def test_the_seed_pipeline_costs_what_tf_data_measured() -> None:
    # bench/tfdata (TensorFlow 2.21, process CPU time on this machine class): the seed pipeline
    # takes 432-478 us per batch of 32, measured as a whole, not from its parts.
    per_batch_us = dataset_seconds_per_sample(_seed_pipeline(), CALIBRATION) * 32e6
    assert per_batch_us == pytest.approx(455, rel=0.15)


def test_stages_add_up_and_parallel_maps_divide_over_cores() -> None:
    x = np.zeros((1000, 4), np.float32)
    plain = Dataset.from_tensor_slices(x).batch(10)
    mapped = Dataset.from_tensor_slices(x).map(lambda v: v).batch(10)
    parallel = Dataset.from_tensor_slices(x).map(lambda v: v, num_parallel_calls=4).batch(10)
    cpu = HostCPU(cores=8)
    base = dataset_seconds_per_sample(plain, cpu)
    assert dataset_seconds_per_sample(mapped, cpu) - base == pytest.approx(MAP_CALL_US * 1e-6)
    assert dataset_seconds_per_sample(parallel, cpu) - base == pytest.approx(MAP_CALL_US * 1e-6 / 4)
    auto = Dataset.from_tensor_slices(x).map(lambda v: v, num_parallel_calls=AUTOTUNE).batch(10)
    assert dataset_seconds_per_sample(auto, cpu) - base == pytest.approx(MAP_CALL_US * 1e-6 / 8)


def test_a_shard_costs_its_input_every_element_it_skips() -> None:
    x = np.zeros((1000, 4), np.float32)
    cpu = HostCPU(cores=8)
    upstream = Dataset.from_tensor_slices(x).map(lambda v: v)
    per_input_sample = dataset_seconds_per_sample(upstream, cpu)
    batch = dataset_seconds_per_sample(upstream.batch(10), cpu) - per_input_sample
    # one kept sample of shard(4, i) is four slices and maps; the batch after it costs the same
    sharded = dataset_seconds_per_sample(upstream.shard(4, 1).batch(10), cpu)
    assert sharded == pytest.approx(4 * per_input_sample + batch)


def test_prefetch_puts_the_stages_above_it_on_their_own_thread() -> None:
    x = np.zeros((1000, 4), np.float32)
    cpu = HostCPU()
    upstream = Dataset.from_tensor_slices(x).map(lambda v: v)
    joined = dataset_seconds_per_sample(upstream.batch(10), cpu)
    split = dataset_seconds_per_sample(upstream.prefetch(2).batch(10), cpu)
    # the batch's fixed cost moves to the consumer's thread; the slower thread sets the pace
    assert split == pytest.approx(joined - BATCH_CALL_US * 1e-6 / 10)


def test_faster_hosts_scale_compute_and_calls_separately() -> None:
    ds = _seed_pipeline()
    slow = dataset_seconds_per_sample(ds, HostCPU(1, 1.0, 1.0))
    fast_calls = dataset_seconds_per_sample(ds, HostCPU(1, 1.0, 0.25))
    assert 0.7 * slow < fast_calls < slow  # the seed pipeline is mostly per-element copies
    assert arrays_seconds_per_sample(64, HostCPU(128, 1.0, 0.25)) < 1e-6  # arrays: cheap


def _fit_with_pipeline(replicas: int, processes: int = 0):
    ipusim.config.reset_ipu_configuration()
    cfg = ipusim.IPUConfig()
    cfg.auto_select_ipus = replicas // max(processes, 1)  # one process's IPUs
    cfg.ipusim.numerics = False
    cfg.experimental.multi_replica_distribution.process_count = processes
    cfg.experimental.multi_replica_distribution.process_index = 0
    cfg.configure_ipu_system()
    with ipusim.IPUStrategy().scope():
        model = keras.Sequential(
            [keras.Input((28, 28)), keras.layers.Flatten(), keras.layers.Dense(10)]
        )
        model.compile(
            optimizer="sgd",
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            steps_per_execution=512,
        )
        model.fit(_seed_pipeline(32 * 512 * replicas), steps_per_epoch=512 * replicas, verbose=0)
    return model.last_simulation, ipusim.config.active_system()


def test_a_slow_pipeline_bounds_a_small_model_at_its_modelled_rate() -> None:
    report, system = _fit_with_pipeline(1)
    host = system.host
    cpu = HostCPU(host.cpu_cores, host.cpu_compute_scale, host.cpu_call_scale)
    rate = 1 / dataset_seconds_per_sample(_seed_pipeline(), cpu)
    assert report.bottleneck.resource == "host input pipeline"
    # after the first element the host delivers one batch per 32 samples' time
    assert report.throughput_samples_per_s == pytest.approx(rate, rel=0.1)


def test_one_process_feeding_several_replicas_divides_its_rate() -> None:
    one, _ = _fit_with_pipeline(1)
    four, _ = _fit_with_pipeline(4)
    spread, _ = _fit_with_pipeline(4, processes=4)
    assert four.throughput_samples_per_s == pytest.approx(one.throughput_samples_per_s, rel=0.1)
    assert spread.throughput_samples_per_s == pytest.approx(
        4 * one.throughput_samples_per_s, rel=0.1
    )
