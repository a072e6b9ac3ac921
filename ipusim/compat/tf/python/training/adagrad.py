"""``tensorflow.python.training.adagrad``: see :mod:`ipusim.compat.tf.python.training.optimizer`."""

from ipusim.compat.tf.python.training.optimizer import AdagradOptimizer

__all__ = ["AdagradOptimizer"]
