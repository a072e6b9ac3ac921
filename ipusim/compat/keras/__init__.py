"""``keras`` / ``tf.keras`` for ported IPU scripts: ipusim's Keras under the Keras names.

``from ipusim.compat import keras`` replaces ``import keras`` and ``from tensorflow import
keras``; ``tf.keras`` is this same module. It holds every name of :mod:`ipusim.keras`
(``Sequential``, ``Model``, ``Input``, ``layers``, ``losses``, ``optimizers``, ``metrics``,
``callbacks``, ``models``, ``utils``, ``backend``, ...), the SDK 3 IPU names under ``keras.ipu``
(``keras.ipu.PipelineStage``), and ``keras.datasets.mnist`` whose ``load_data()`` falls back to the
test split when only that is on disk (see :mod:`ipusim.compat.keras.datasets.mnist`).

The submodules are importable by name (``from ipusim.compat.keras.layers import Dense``); all but
``datasets`` are the very modules of :mod:`ipusim.keras`.
"""

from ipusim.compat.keras import (  # type: ignore[attr-defined]
    # all but backend and datasets are ipusim.keras' own modules, made by the import hook of
    # ipusim.compat._alias (MODULES), which mypy cannot follow
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
    optimizers,
    utils,
)
from ipusim.keras import preprocessing
from ipusim.keras.engine.input_layer import Input
from ipusim.keras.engine.model import Model
from ipusim.keras.engine.sequential import Sequential

#: The Keras version whose API this mirrors (tf.keras of TensorFlow 2.6), marked as ipusim's.
__version__ = "2.6.0-ipusim"

__all__ = [
    "Input",
    "Model",
    "Sequential",
    "__version__",
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
    "optimizers",
    "preprocessing",
    "utils",
]
