"""A Keras model whose wide layers are not spread evenly by layer count (importable as
``tests.plan._hourglass:hourglass``): recomputation checkpoints split evenly by layers put
both wide activations in one stage."""

from __future__ import annotations

from ipusim import keras

#: Units of its dense layers: two 16384-wide activations among narrow ones.
WIDTHS = (16384, 16, 16384, 16, 16, 10)


def hourglass() -> keras.Model:
    """Six dense layers over 16 inputs (:data:`WIDTHS`), compiled with SGD and a sparse
    cross-entropy."""
    inputs = keras.Input((16,))
    x = inputs
    for i, width in enumerate(WIDTHS):
        x = keras.layers.Dense(width, activation="relu" if i < 5 else None, name=f"d{i}")(x)
    model = keras.Model(inputs, x)
    model.compile(
        optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    return model
