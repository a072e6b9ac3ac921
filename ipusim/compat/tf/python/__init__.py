"""``tensorflow.python`` for ported scripts: ``from tensorflow.python import ipu`` works."""

from ipusim.compat import ipu, keras
from ipusim.compat.tf.python import training

__all__ = ["ipu", "keras", "training"]
