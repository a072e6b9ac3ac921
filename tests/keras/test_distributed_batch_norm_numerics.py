"""Distributed batch norm in the numerics: a group of replicas normalises with the statistics
of all its micro-batches, so 2 replicas in a group of 2 train exactly as one replica on their
two micro-batches end to end (the defining property: shared statistics, gradients of the
statistics all-reduced, replicas' gradients averaged over equal micro-batches)."""

from __future__ import annotations

import numpy as np
import pytest

import ipusim
from ipusim import keras
from ipusim.errors import ConfigurationError


def _train(replicas: int, group: int, batch_size: int, epochs: int = 1):
    keras.backend.clear_session()
    ipusim.config.reset_ipu_configuration()
    cfg = ipusim.IPUConfig()
    cfg.auto_select_ipus = replicas
    cfg.ipusim.system = "M2000"
    cfg.norms.experimental.distributed_batch_norm_replica_group_size = group
    cfg.configure_ipu_system()
    rng = np.random.default_rng(3)
    x = rng.normal(size=(16, 5)).astype(np.float32)
    y = rng.normal(size=(16, 1)).astype(np.float32)
    with ipusim.IPUStrategy().scope():
        keras.utils.set_random_seed(7)
        model = keras.Sequential(
            [
                keras.Input((5,)),
                keras.layers.Dense(6),
                keras.layers.BatchNormalization(),
                keras.layers.Dense(1),
            ]
        )
        model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse", steps_per_execution=1)
        model.fit(x, y, batch_size=batch_size, epochs=epochs, shuffle=False, verbose=0)
    return [np.array(w) for w in model.get_weights()]


def test_a_group_of_two_replicas_trains_as_one_replica_on_both_micro_batches() -> None:
    # Replica 0 takes samples 0-3 and replica 1 samples 4-7 of each step: one replica with
    # batches of 8 sees the same samples per step.
    shared = _train(replicas=2, group=2, batch_size=4, epochs=2)
    joined = _train(replicas=1, group=1, batch_size=8, epochs=2)
    per_replica = _train(replicas=2, group=1, batch_size=4, epochs=2)
    for a, b in zip(shared, joined):  # kernels, BN gamma/beta/moving stats, biases
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6)
    # Per-replica statistics train differently (the test can tell the two apart).
    assert max(np.max(np.abs(a - b)) for a, b in zip(per_replica, joined)) > 1e-3


def test_a_group_that_does_not_divide_the_replicas_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="does not divide the replication factor"):
        _train(replicas=2, group=4, batch_size=4)
