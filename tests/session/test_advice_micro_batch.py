"""report.advice() tries a larger micro-batch by tracing the Keras step again: its gain is the
gain of running that configuration directly, and a micro-batch that does not fit is not offered."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

import ipusim
from ipusim.compat.runtime import loops
from ipusim.compat.runtime.feeds import IPUInfeedQueue, IPUOutfeedQueue
from ipusim.compat.runtime.function import function
from ipusim.config import reset_ipu_configuration
from ipusim.data import Dataset
from ipusim.errors import OutOfMemoryError
from ipusim.session.advice import NO_RETRACE_NOTE
from ipusim.strategy import IPUStrategy
from workloads import mnist_cnn

#: The MNIST CNN on one GC200 at 1,024 per micro-batch: 2,048 fits, 4,096 does not (the
#: lowering's own check, asserted below by running 4,096 directly).
CNN = "--timing-only --optimizer sgd --system IPU --steps-per-execution 4"


def _run(argv: str):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return mnist_cnn.main(argv.split())


def _by_change(advice, prefix):
    return [a for a in advice if a.change.startswith(prefix)]


def test_the_larger_micro_batch_gain_is_the_gain_of_running_it():
    report = _run(f"{CNN} --steps 48 --micro-batch 64")
    advice = report.advice()
    for factor, steps in ((2, 24), (4, 12)):
        (item,) = _by_change(advice, f"batch_size={64 * factor} ")
        assert f"now 64; {steps} steps per epoch (same samples)" in item.change
        direct = _run(f"{CNN} --steps {steps} --micro-batch {64 * factor}")
        gain = direct.throughput_samples_per_s / report.throughput_samples_per_s - 1
        assert item.gain == pytest.approx(gain, rel=1e-9)
        assert item.throughput == pytest.approx(direct.throughput_samples_per_s, rel=1e-9)
    assert report.what_if.notes == []


def test_a_micro_batch_that_does_not_fit_is_not_offered():
    report = _run(f"{CNN} --steps 8 --micro-batch 1024")
    what_if = report.what_if
    tried = {v[0].split()[0]: v for v in what_if.variants()}
    fits = what_if.measure(tried["batch_size=2048"])
    direct = _run(f"{CNN} --steps 4 --micro-batch 2048")
    assert fits.throughput == pytest.approx(direct.throughput_samples_per_s, rel=1e-9)
    assert what_if.measure(tried["batch_size=4096"]) is None
    assert not _by_change(report.advice(), "batch_size=4096 ")
    with pytest.raises(OutOfMemoryError):
        _run(f"{CNN} --steps 4 --micro-batch 4096")


def test_a_custom_loop_does_not_try_a_larger_micro_batch_and_says_so():
    reset_ipu_configuration()
    cfg = ipusim.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()
    try:
        infeed = IPUInfeedQueue(Dataset.from_tensors(np.ones(16, np.float32)).repeat())
        outfeed = IPUOutfeedQueue()
        strategy = IPUStrategy()
        with strategy.scope():

            def body(x):
                outfeed.enqueue(x * 2.0)

            @function(experimental_compile=True)
            def net():
                return loops.repeat(6, body, [], infeed)

            strategy.run(net)
        what_if = strategy.last_simulation.what_if
        assert not any(v[0].startswith("batch_size=") for v in what_if.variants())
        assert what_if.notes == [NO_RETRACE_NOTE]
        assert f"note: {NO_RETRACE_NOTE}" in strategy.last_simulation.summary(advice=1)
    finally:
        reset_ipu_configuration()


def _two_fits(advise: bool) -> list:
    reset_ipu_configuration()
    cfg = ipusim.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()
    x = np.random.default_rng(0).normal(size=(64, 8)).astype(np.float32)
    y = np.random.default_rng(1).integers(0, 4, 64)
    try:
        with IPUStrategy().scope():
            ipusim.keras.utils.set_random_seed(0)
            model = ipusim.keras.Sequential(
                [
                    ipusim.keras.layers.Dense(16, input_shape=(8,)),
                    ipusim.keras.layers.Dropout(0.5),
                    ipusim.keras.layers.Dense(4),
                ]
            )
            loss = ipusim.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
            model.compile("sgd", loss, steps_per_execution=4)
            model.fit(x, y, batch_size=8, epochs=1, verbose=0)
            if advise:
                changes = [a.change for a in model.last_simulation.advice()]
                assert any(c.startswith("batch_size=16 ") for c in changes)
            model.fit(x, y, batch_size=8, epochs=1, verbose=0)
            return [np.asarray(w) for w in model.get_weights()]
    finally:
        reset_ipu_configuration()


def test_tracing_the_step_again_leaves_the_training_unchanged():
    """Dropout's seeds included: training after advice() is bit for bit training without it."""
    for plain, advised in zip(_two_fits(False), _two_fits(True), strict=True):
        np.testing.assert_array_equal(plain, advised)
