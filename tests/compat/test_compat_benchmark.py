"""``ipu.dataset_benchmark``: the JSON fields, the returned (not raised) errors, the measured rate."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ipusim.compat import ipu, tf
from ipusim.compat.dataset_benchmark import OutOfRangeError, dataset_benchmark

KEYS = ["bandwidth", "elements_per_second", "elements_processed", "time_elapsed",
        "total_bytes_processed"]  # fmt: skip


def _stats(result) -> list[dict]:
    assert result.shape == (1,)
    document = json.loads(result.numpy()[0])
    assert json.loads(result[0]) == document  # `json.loads(result[0])` works too
    assert list(document) == ["epochs"]
    return document["epochs"]


def test_fields_follow_the_kernels_definitions():
    images = np.zeros((64, 28, 28), np.float32)
    labels = np.zeros(64, np.int32)
    ds = tf.data.Dataset.from_tensor_slices((images, labels)).batch(8, drop_remainder=True)
    epochs = _stats(ipu.dataset_benchmark.dataset_benchmark(ds.repeat(), 3, 5, print_stats=False))
    assert len(epochs) == 3
    element_bytes = 8 * 28 * 28 * 4 + 8 * 4  # one batch: images float32 + labels int32
    for epoch in epochs:
        assert sorted(epoch) == KEYS
        assert epoch["elements_processed"] == 5.0
        assert epoch["total_bytes_processed"] == 5.0 * element_bytes
        t = epoch["time_elapsed"]
        assert t > 0
        assert epoch["elements_per_second"] == pytest.approx(5 / t, rel=1e-12)
        assert epoch["bandwidth"] == pytest.approx(5 * element_bytes / (1e9 * t), rel=1e-12)


def test_print_stats_reports_each_epoch(capsys):
    ds = tf.data.Dataset.range(10)
    dataset_benchmark(ds, 2, 4, print_stats=True, do_memcpy=False)
    err = capsys.readouterr().err
    assert err.count("elements/second.") == 2 and err.count("GB/s.") == 2
    assert "Dataset iterator completed epoch 1." in err


def test_invalid_arguments_are_returned_not_raised():
    ds = tf.data.Dataset.range(10)
    for args, kind, name in (
        ((ds, 0, 5), ValueError, "number_of_epochs"),
        ((ds, 1, 0), ValueError, "elements_per_epochs"),
        ((ds, 1.5, 5), ValueError, "number_of_epochs"),
        (([1, 2, 3], 1, 5), TypeError, "dataset"),
    ):
        result = dataset_benchmark(*args)
        assert isinstance(result, kind), args
        assert name in str(result)


def test_running_out_of_data_raises_out_of_range():
    ds = tf.data.Dataset.range(7)
    with pytest.raises(OutOfRangeError, match="end of the dataset"):
        dataset_benchmark(ds, 2, 4, print_stats=False)
    assert tf.errors.OutOfRangeError is OutOfRangeError


def test_infeed_benchmark_rejects_what_is_not_an_infeed_queue():
    result = ipu.dataset_benchmark.infeed_benchmark(tf.data.Dataset.range(3), 1, 1)
    assert isinstance(result, TypeError) and "IPUInfeedQueue" in str(result)


def test_elements_per_second_is_the_rate_the_elements_are_made(monkeypatch):
    """The benchmark times the making of the elements it takes, each epoch on its own: on a
    clock the test moves by 0.25 ms for each element the dataset's map makes (and by nothing
    else), 40 elements an epoch take 10 ms, 4,000 elements per second (no wall-clock timing)."""
    import ipusim.compat.dataset_benchmark as module

    clock = [0.0]
    monkeypatch.setattr(module.time, "perf_counter", lambda: clock[0])

    def make(i):
        clock[0] += 0.25e-3
        return i

    ds = tf.data.Dataset.range(10**9).map(make)
    epochs = _stats(dataset_benchmark(ds, 3, 40, print_stats=False, do_memcpy=False))
    for epoch in epochs:
        assert epoch["time_elapsed"] == pytest.approx(40 * 0.25e-3, rel=1e-9)
        assert epoch["elements_per_second"] == pytest.approx(4000.0, rel=1e-9)
