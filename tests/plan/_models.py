"""Small Keras models the planner tests plan (importable as ``tests.plan._models:NAME``)."""

from __future__ import annotations

from ipusim import keras


def _dense_stack(features: int, width: int) -> keras.Model:
    """Three ReLU dense layers of ``width`` over ``features`` inputs and a 10-way head, compiled
    with Adam and a sparse cross-entropy."""
    inputs = keras.Input((features,))
    x = inputs
    for i in range(3):
        x = keras.layers.Dense(width, activation="relu", name=f"dense_{i}")(x)
    outputs = keras.layers.Dense(10, name="logits")(x)
    model = keras.Model(inputs, outputs)
    model.compile(
        optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    return model


def mlp() -> keras.Model:
    """Four dense layers (32 -> 64 -> 64 -> 64 -> 10)."""
    return _dense_stack(32, 64)


def uncompiled() -> keras.Model:
    inputs = keras.Input((8,))
    return keras.Model(inputs, keras.layers.Dense(2)(inputs))


def auto_named() -> keras.Model:
    """The MLP with Keras' own layer names (``dense_4`` ... differ from build to build)."""
    inputs = keras.Input((32,))
    x = inputs
    for _ in range(3):
        x = keras.layers.Dense(64, activation="relu")(x)
    model = keras.Model(inputs, keras.layers.Dense(10)(x))
    model.compile(optimizer="sgd", loss="mse")
    return model


def wide() -> keras.Model:
    """Three 4096-wide dense layers (50M weights) and a small head: its gradients' all-reduce
    dominates a small global batch, so pipelines can win."""
    return _dense_stack(4096, 4096)


def wider() -> keras.Model:
    """Three 4608-wide dense layers and a small head: on one GC200 (no Streaming Memory to
    offload Adam's state to) it fits only with recomputation checkpoints."""
    return _dense_stack(4096, 4736)
