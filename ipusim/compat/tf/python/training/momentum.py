"""``tensorflow.python.training.momentum``: see :mod:`ipusim.compat.tf.python.training.optimizer`."""

from ipusim.compat.tf.python.training.optimizer import MomentumOptimizer

__all__ = ["MomentumOptimizer"]
