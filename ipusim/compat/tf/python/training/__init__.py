"""``tensorflow.python.training``: the TF1 optimizers' modules, as scripts import them."""

from ipusim.compat.tf.python.training import (
    adagrad,
    adam,
    gradient_descent,
    momentum,
    optimizer,
    rmsprop,
)

__all__ = ["adagrad", "adam", "gradient_descent", "momentum", "optimizer", "rmsprop"]
