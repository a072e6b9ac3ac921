"""Small Keras models the planner tests plan (importable as ``tests.plan._models:NAME``)."""

from __future__ import annotations

from ipusim import keras


def mlp() -> keras.Model:
    """Four dense layers, compiled with Adam and a sparse cross-entropy."""
    inputs = keras.Input((32,))
    x = inputs
    for i in range(3):
        x = keras.layers.Dense(64, activation="relu", name=f"dense_{i}")(x)
    outputs = keras.layers.Dense(10, name="logits")(x)
    model = keras.Model(inputs, outputs)
    model.compile(
        optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    return model


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
    """Three 4096-wide dense layers (50M weights) and a small head, compiled with Adam: its
    gradients' all-reduce dominates a small global batch, so pipelines can win."""
    inputs = keras.Input((4096,))
    x = inputs
    for i in range(3):
        x = keras.layers.Dense(4096, activation="relu", name=f"dense_{i}")(x)
    outputs = keras.layers.Dense(10, name="logits")(x)
    model = keras.Model(inputs, outputs)
    model.compile(
        optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    return model
