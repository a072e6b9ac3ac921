"""``tensorflow.python.training.gradient_descent``: see :mod:`ipusim.compat.tf.python.training.optimizer`."""

from ipusim.compat.tf.python.training.optimizer import GradientDescentOptimizer

__all__ = ["GradientDescentOptimizer"]
