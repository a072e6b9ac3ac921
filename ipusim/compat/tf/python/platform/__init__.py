"""``tensorflow.python.platform``: ``test`` (TensorFlow's unit-test helpers over unittest)."""

from ipusim.compat.tf.python.platform import test

__all__ = ["test"]
