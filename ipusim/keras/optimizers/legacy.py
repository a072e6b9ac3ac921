"""``keras.optimizers.legacy``: tf-keras 2.11+ keeps the Keras 2 ``optimizer_v2`` classes here.

ipusim's optimizers *are* those classes (IPU TensorFlow's Keras 2.6 has no other kind), so this
module names the same classes: ``keras.optimizers.legacy.Adam is keras.optimizers.Adam``.
"""

from ipusim.keras.optimizers.adaptive import Adadelta, Adamax, Ftrl, Nadam
from ipusim.keras.optimizers.algorithms import SGD, Adagrad, Adam, RMSprop
from ipusim.keras.optimizers.optimizer import Optimizer

__all__ = ["SGD", "Adadelta", "Adagrad", "Adam", "Adamax", "Ftrl", "Nadam", "Optimizer", "RMSprop"]
