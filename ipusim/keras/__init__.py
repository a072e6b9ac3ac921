"""ipusim's Keras: the tf.keras API (2.x semantics) on ipusim's graph IR and Numba kernels.

``from ipusim import keras`` then write the model code you would write for IPU TensorFlow 2.
"""

from ipusim.keras import (
    activations,
    applications,
    backend,
    callbacks,
    datasets,
    initializers,
    ipu,
    layers,
    losses,
    metrics,
    mixed_precision,
    models,
    ops,
    optimizers,
    preprocessing,
    utils,
)
from ipusim.keras.engine.input_layer import Input
from ipusim.keras.engine.model import Model
from ipusim.keras.engine.sequential import Sequential

__all__ = [
    "Input",
    "Model",
    "Sequential",
    "activations",
    "applications",
    "backend",
    "callbacks",
    "datasets",
    "initializers",
    "ipu",
    "layers",
    "losses",
    "metrics",
    "mixed_precision",
    "models",
    "ops",
    "optimizers",
    "preprocessing",
    "utils",
]
