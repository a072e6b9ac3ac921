"""The host is a per-process resource: replicas fed by one host process share its input
pipeline (IPU TensorFlow's replicated infeed: one dataset feeds every replica, pulled by one
infeed thread) and its stream-copy threads; host presets rescale the host's figures."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import ipusim
from ipusim import keras
from ipusim.config import reset_ipu_configuration
from ipusim.data import Dataset
from ipusim.data.host_cost import HostCPU, loader_seconds_per_sample
from ipusim.errors import ConfigurationError
from ipusim.hardware import load_system
from ipusim.hardware.hosts import default_host, list_hosts, load_host, plausible_hosts, with_host
from ipusim.session.options import host_link


@pytest.fixture(autouse=True)
def _fresh():
    reset_ipu_configuration()
    yield
    reset_ipu_configuration()


def _pipeline(n: int) -> Dataset:
    x = np.zeros((n, 28, 28, 1), np.float32)
    y = np.zeros(n, np.int32)
    return Dataset.from_tensor_slices((x, y)).batch(32, drop_remainder=True).repeat()


def _fit(replicas: int, processes: int = 0, host: str = ""):
    cfg = ipusim.IPUConfig()
    cfg.auto_select_ipus = replicas // max(processes, 1)
    cfg.ipusim.system = "M2000"
    cfg.ipusim.host = host
    cfg.ipusim.numerics = False
    cfg.experimental.multi_replica_distribution.process_count = processes
    cfg.configure_ipu_system()
    with ipusim.IPUStrategy().scope():
        model = keras.Sequential(
            [
                keras.Input((28, 28, 1)),
                keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
                keras.layers.GlobalAveragePooling2D(),
                keras.layers.Dense(10),
            ]
        )
        model.compile(
            optimizer="sgd",
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            steps_per_execution=64,
        )
        model.fit(_pipeline(32 * 64), steps_per_epoch=64 * 8, verbose=0)
    report = model.last_simulation
    reset_ipu_configuration()
    return report


def _per_sample(compute: float, call: float) -> float:
    """By hand: the pipeline's one infeed thread slices each 3,140-byte element (1.3 us +
    0.81 ns/B, compute), pays batch(32)'s fixed call (20.7 us / 32, call) and repeat's 1.55 us
    per element (here a batch of 32, compute) (ipusim.data.host_cost's measured figures)."""
    element = 28 * 28 * 4 + 4
    return ((1.3 + 0.00081 * element + 1.55 / 32) * compute + 20.7 / 32 * call) * 1e-6


def test_replicas_of_one_process_share_its_input_pipeline() -> None:
    rate = 1 / _per_sample(1.0, 0.25)  # the M2000's shipped host: EPYC-7742 (1.0, 0.25)
    runs = {r: _fit(r) for r in (1, 2, 4)}
    got = {r: runs[r].throughput_samples_per_s for r in runs}
    # One dataset feeds every replica: however many there are, the job cannot outrun the one
    # pipeline of its one process.
    for r in runs:
        assert got[r] <= rate * 1.01
    assert runs[4].bottleneck.resource == "host input pipeline"
    assert got[4] == pytest.approx(rate, rel=0.05)
    # 4x the IPUs gives far less than 4x the samples.
    assert got[4] / got[1] < 2.0
    # Four processes run four pipelines (on a quarter of the cores each): the host no longer
    # bounds the same four replicas.
    four = _fit(4, processes=4)
    assert four.throughput_samples_per_s > 1.5 * rate
    assert four.bottleneck.resource != "host input pipeline"


def test_a_slower_host_preset_lowers_the_host_bound() -> None:
    xeon = load_host("Xeon-8168")
    rate = 1 / _per_sample(xeon.compute_scale, xeon.call_scale)
    got = _fit(4, host="Xeon-8168").throughput_samples_per_s
    assert got == pytest.approx(rate, rel=0.05)
    assert got < _fit(4).throughput_samples_per_s


def test_stream_copy_threads_of_one_process_are_shared_by_its_replicas(monkeypatch) -> None:
    system = with_host(load_system("POD16"))
    program = SimpleNamespace(replicas=16, ipus_per_replica=1)  # what host_link reads
    stream = system.host.stream_bandwidth_bytes_per_s  # 2.14 GB/s per copy thread
    nic = system.host.h2d_bandwidth_bytes_per_s / 4  # one 100 GbE NIC per M2000, 4 IPUs each
    monkeypatch.setenv(
        "POPLAR_ENGINE_OPTIONS",
        json.dumps(
            {
                "streamCallbacks.multiThreadMode": "collaborative",
                "streamCallbacks.numWorkerThreads": "2",
            }
        ),
    )
    # One process, 16 replicas, 2 copy threads: each replica gets 2/16 of a thread's rate.
    assert host_link(system, program).h2d_bytes_per_s == pytest.approx(stream * 2 / 16)
    monkeypatch.setenv(
        "POPLAR_ENGINE_OPTIONS", json.dumps({"streamCallbacks.multiThreadMode": "none"})
    )
    assert host_link(system, program).h2d_bytes_per_s == pytest.approx(stream / 16)
    monkeypatch.delenv("POPLAR_ENGINE_OPTIONS")
    # "auto": a thread per core of the host (128): the NIC's share, then the per-IPU stream
    # rate, bound each replica as before.
    assert host_link(system, program).h2d_bytes_per_s == pytest.approx(min(nic, stream))


def test_host_presets_rescale_the_reference_figures() -> None:
    assert {"EPYC-7742", "EPYC-7763", "Xeon-8168"} <= set(list_hosts())
    c2, pod = load_system("C2"), load_system("POD16")
    assert default_host(c2) == "Xeon-8168" and default_host(pod) == "EPYC-7742"
    assert plausible_hosts(pod)[0] == "EPYC-7742"
    ref, xeon = load_host("EPYC-7742"), load_host("dss8440")
    on_xeon = with_host(pod, "Xeon-8168").host
    assert on_xeon.cpu_cores == 48
    assert on_xeon.per_execution_overhead_s == pytest.approx(
        pod.host.per_execution_overhead_s * xeon.round_trip_scale / ref.round_trip_scale
    )
    assert on_xeon.stream_bandwidth_bytes_per_s == pytest.approx(
        pod.host.stream_bandwidth_bytes_per_s * ref.compute_scale / xeon.compute_scale
    )
    # The reference host leaves the system's fitted figures as they are.
    assert with_host(pod).host.per_execution_overhead_s == pod.host.per_execution_overhead_s


def test_unknown_host_preset_is_a_configuration_error() -> None:
    cfg = ipusim.IPUConfig()
    cfg.ipusim.host = "Pentium-4"
    with pytest.raises(ConfigurationError, match="ipusim.host"):
        cfg.configure_ipu_system()


def test_jpeg_loader_workers_share_the_process_cores() -> None:
    # The measured figure: bench/host/measure_host.py's best run on the calibration machine.
    measured = json.loads(
        (Path(__file__).parents[2] / "bench/host/results/this_machine.json").read_text()
    )
    per_image = measured["jpeg_ms_best"] * 1e-3
    assert loader_seconds_per_sample(14, HostCPU(128, 1.0, 0.25)) == pytest.approx(per_image / 14)
    # 8 cores for 14 workers: 8 images at a time; a 1.15x slower core.
    assert loader_seconds_per_sample(14, HostCPU(8, 1.15, 0.4)) == pytest.approx(
        per_image * 1.15 / 8
    )
    with pytest.raises(ValueError, match="workers"):
        loader_seconds_per_sample(0, HostCPU())


def test_host_range_of_a_host_bound_run_spans_the_presets_hand_computed_limits() -> None:
    from ipusim.session.uncertainty import host_range

    report = _fit(4)
    spread = host_range(report)
    assert spread.host == "EPYC-7742"
    assert set(spread.predictions) == {"EPYC-7742", "EPYC-7763", "Xeon-8168"}
    # Each preset's run is bound by the one pipeline of its one process, at that preset's
    # hand-computed rate.
    for name, got in spread.predictions.items():
        preset = load_host(name)
        assert got == pytest.approx(
            1 / _per_sample(preset.compute_scale, preset.call_scale), rel=0.05
        )
    assert spread.low == spread.predictions["Xeon-8168"]
    assert any("compute_scale (E)" in figure for figure in spread.depends_on)
    assert "host-bound" in str(spread)
    # The summary with advice states the same range (the report says what the answer rests on).
    low, high = f"{spread.low:,.0f}", f"{spread.high:,.0f}"
    assert f"host-bound: {low}-{high} samples/s" in report.summary(advice=1)


def test_one_thread_drains_the_outfeed_of_every_replica_of_its_process() -> None:
    from ipusim.session.options import FeedOptions, host_options

    system = with_host(load_system("POD16"))
    for processes, per_element in ((0, 4 * 1e-4), (4, 1e-4)):
        cfg = ipusim.IPUConfig()
        cfg.ipusim.host_outfeed_drain_s = 1e-4
        cfg.experimental.multi_replica_distribution.process_count = processes
        options = host_options(cfg, system, FeedOptions(), replicas=4)
        assert options.outfeed_drain_ps == round(per_element * 1e12)
