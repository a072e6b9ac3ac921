"""``tensorflow.python.training.rmsprop``: see :mod:`ipusim.compat.tf.python.training.optimizer`."""

from ipusim.compat.tf.python.training.optimizer import RMSPropOptimizer

__all__ = ["RMSPropOptimizer"]
