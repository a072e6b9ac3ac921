"""``tensorflow.python.training.adam``: see :mod:`ipusim.compat.tf.python.training.optimizer`."""

from ipusim.compat.tf.python.training.optimizer import AdamOptimizer

__all__ = ["AdamOptimizer"]
