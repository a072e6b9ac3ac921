"""``tensorflow.python`` for ported scripts: ``from tensorflow.python import ipu`` works;
``platform.test`` and ``training`` are the internal modules scripts import."""

from ipusim.compat import ipu, keras
from ipusim.compat.tf.python import platform, training

__all__ = ["ipu", "keras", "platform", "training"]
