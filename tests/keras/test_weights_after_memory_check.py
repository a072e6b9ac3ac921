"""Weights are allocated after the out-of-memory check, with the values eager allocation gives.

Issue 24: with numerics on, a model whose weights need many GB used to allocate them while it was
built, before fit's memory check said no. Now ipusim's initializers reserve their draws when the
weight is created and make the array on first use, after the check.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import ipusim
from ipusim import keras
from ipusim.errors import OutOfMemoryError


def _configure() -> None:
    config = ipusim.IPUConfig()
    config.auto_select_ipus = 1
    assert config.ipusim.numerics  # the case of the defect: a run that computes numbers
    config.configure_ipu_system()


def test_a_model_of_many_gigabytes_is_rejected_before_its_weights_exist() -> None:
    _configure()
    units = 50_000  # a 50,000 x 50,000 float32 kernel: 10 GB, far beyond 900 MiB of SRAM
    tracemalloc.start()
    try:
        with ipusim.IPUStrategy().scope():
            model = keras.Sequential([keras.Input((units,)), keras.layers.Dense(units)])
            model.compile(optimizer="sgd", loss="mse")
            x = np.ones((4, units), np.float32)
            with pytest.raises(OutOfMemoryError, match="IPU 0"):
                model.fit(x, x, batch_size=4, verbose=0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not any(weight.materialized for weight in model.weights)
    assert peak < 200e6  # bytes: the inputs (0.8 MB each) and bookkeeping, not the 10 GB kernel


def test_values_do_not_depend_on_which_weight_is_used_first() -> None:
    keras.backend.clear_session()
    shared = keras.initializers.GlorotUniform(seed=7)  # one object, drawn from twice
    model = keras.Sequential(
        [
            keras.Input((4,)),
            keras.layers.Dense(5, kernel_initializer=shared),
            keras.layers.Dense(3, kernel_initializer=shared),
        ]
    )
    second = model.layers[1].kernel.numpy()  # read before the first layer's kernel
    first = model.layers[0].kernel.numpy()
    reference = keras.initializers.GlorotUniform(seed=7)  # what two immediate calls give
    np.testing.assert_array_equal(first, reference((4, 5)))
    np.testing.assert_array_equal(second, reference((5, 3)))


def test_a_user_function_still_initialises_at_build_in_creation_order() -> None:
    keras.backend.clear_session()
    calls: list[tuple[int, ...]] = []

    def counting(shape: tuple[int, ...], dtype: str | None = None) -> np.ndarray:
        calls.append(tuple(shape))
        return np.full(shape, len(calls), np.float32)  # its values depend on the call order

    model = keras.Sequential(
        [
            keras.Input((2,)),
            keras.layers.Dense(3, kernel_initializer=counting),
            keras.layers.Dense(4, kernel_initializer=counting),
        ]
    )
    assert calls == [(2, 3), (3, 4)]  # both at build, before any weight is read
    assert model.layers[1].kernel.numpy()[0, 0] == 2.0
