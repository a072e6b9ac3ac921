"""The session: both front ends lower and simulate through it, the configuration picks the
engine and the trace's detail, and every report reaches the hooks."""

from __future__ import annotations

import numpy as np
import pytest

import ipusim
from ipusim import keras, session
from ipusim.compat.runtime import loops
from ipusim.compat.runtime.feeds import IPUInfeedQueue, IPUOutfeedQueue
from ipusim.compat.runtime.function import function
from ipusim.config import reset_ipu_configuration
from ipusim.data import Dataset
from ipusim.engine import simulator
from ipusim.errors import ConfigurationError
from ipusim.strategy import IPUStrategy


def _configure(**ipusim_options) -> None:
    reset_ipu_configuration()
    cfg = ipusim.IPUConfig()
    cfg.auto_select_ipus = 1
    for name, value in ipusim_options.items():
        setattr(cfg.ipusim, name, value)
    cfg.configure_ipu_system()


@pytest.fixture(autouse=True)
def _reset():
    yield
    reset_ipu_configuration()


@pytest.fixture
def long_enough(monkeypatch):
    """Every run counts as long enough for the fast path (engine="auto"'s other condition,
    AUTO_FAST_MIN_INSTANCES, is tested in tests/engine/test_engine_backends.py)."""
    monkeypatch.setattr(simulator, "AUTO_FAST_MIN_INSTANCES", 0)


def _fit(steps_per_execution: int = 4, epochs: int = 2) -> keras.Model:
    x = np.random.default_rng(0).normal(size=(64, 8)).astype(np.float32)
    y = np.random.default_rng(1).integers(0, 4, 64)
    with IPUStrategy().scope():
        keras.utils.set_random_seed(0)
        model = keras.Sequential(
            [
                keras.layers.Dense(16, input_shape=(8,), name="hidden"),
                keras.layers.Dense(4, name="logits"),
            ]
        )
        model.compile(
            optimizer="sgd",
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            steps_per_execution=steps_per_execution,
        )
        model.fit(x, y, batch_size=8, epochs=epochs, verbose=0)
    return model


def _custom_loop() -> IPUStrategy:
    dataset = Dataset.from_tensors(np.ones(16, np.float32)).repeat()
    infeed, outfeed = IPUInfeedQueue(dataset), IPUOutfeedQueue()
    strategy = IPUStrategy()
    with strategy.scope():

        def body(x):
            outfeed.enqueue(x * 2.0)

        @function(experimental_compile=True)
        def net():
            return loops.repeat(6, body, [], infeed)

        strategy.run(net)
    return strategy


def test_every_report_of_both_front_ends_reaches_the_hooks(long_enough) -> None:
    from ipusim.keras.extensions.simulation import ON_REPORT

    assert ON_REPORT is session.ON_REPORT  # one list, whichever front end registers
    seen = []
    session.ON_REPORT.append(seen.append)
    try:
        _configure()
        model = _fit()
        strategy = _custom_loop()
    finally:
        session.ON_REPORT.remove(seen.append)
    assert seen == [model.last_simulation, strategy.last_simulation]
    assert seen[0].kind == "train" and seen[1].kind == "predict"
    assert {r.extra["engine"] for r in seen} == {"fast"}  # nothing holds the IPUs back


def test_the_configuration_picks_the_engine_and_both_agree() -> None:
    reports = {}
    for engine in ("fast", "simpy"):
        _configure(engine=engine)
        reports[engine] = _fit().last_simulation
        assert reports[engine].extra["engine"] == engine
    fast, slow = reports["fast"], reports["simpy"]
    assert fast.seconds == slow.seconds
    assert fast.trace == slow.trace


def test_auto_uses_simpy_when_the_outfeed_can_hold_the_ipus_back(long_enough) -> None:
    _configure(host_outfeed_drain_s=1e-6)
    assert _fit().last_simulation.extra["engine"] == "simpy"
    _configure(host_outfeed_drain_s=1e-6, engine="fast")
    with pytest.raises(ValueError, match="host_outfeed_drain_s"):
        _fit()


def test_a_slow_input_pipeline_stays_on_the_fast_path_and_agrees_with_simpy(long_enough) -> None:
    reports = {}
    for engine in ("auto", "simpy"):
        _configure(host_dataset_rate=2000.0, engine=engine)  # far slower than the device
        reports[engine] = _fit().last_simulation
    fast, slow = reports["auto"], reports["simpy"]
    assert fast.extra["engine"] == "fast"
    assert fast.trace == slow.trace
    assert fast.bottleneck.resource == "host input pipeline"


def test_auto_runs_a_short_run_on_simpy() -> None:
    _configure()  # both short runs: far fewer block instances than AUTO_FAST_MIN_INSTANCES
    assert _fit().last_simulation.extra["engine"] == "simpy"
    assert _custom_loop().last_simulation.extra["engine"] == "simpy"


def test_the_configuration_picks_what_the_trace_keeps() -> None:
    _configure(trace_detail="full")
    full = _fit(steps_per_execution=2, epochs=3).last_simulation
    _configure(trace_detail="summary")
    summary = _fit(steps_per_execution=2, epochs=3).last_simulation
    assert len(summary.trace) == 0 and len(full.trace) > 0
    assert summary.seconds == full.seconds
    assert summary.utilisation.equals(full.utilisation)
    assert summary.bottleneck == full.bottleneck
    assert "counters only" in summary.summary()
    _configure(trace_records=len(full.trace) // 4)
    auto = _fit(steps_per_execution=2, epochs=3).last_simulation
    kept = auto.trace.detail
    assert 0 < kept.kept_executions < kept.executions
    assert f"executions 1-{kept.kept_executions} of {kept.executions}" in auto.summary()


def test_bad_engine_settings_are_rejected_when_configured() -> None:
    cfg = ipusim.IPUConfig()
    cfg.ipusim.engine = "turbo"
    with pytest.raises(ConfigurationError, match="ipusim.engine.*'auto', 'fast', 'simpy'"):
        cfg.configure_ipu_system()
    reset_ipu_configuration()
    cfg = ipusim.IPUConfig()
    cfg.ipusim.trace_detail = "everything"
    with pytest.raises(ConfigurationError, match="trace_detail"):
        cfg.configure_ipu_system()


def test_feed_options_check_the_outfeed_mode() -> None:
    with pytest.raises(ValueError, match="outfeed_mode"):
        session.FeedOptions(outfeed_mode="first")
    options = session.host_options(
        None, ipusim.hardware.load_system("M2000"), session.FeedOptions()
    )
    assert (options.prefetch_depth, options.buffer_depth) == (3, 3)  # IPU TensorFlow's
    assert options.host_queue_depth == 32 + 3
