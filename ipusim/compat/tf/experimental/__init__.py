"""``tf.experimental``: only ``tf.experimental.numpy`` (see :mod:`ipusim.compat.tf.experimental.numpy`)."""

from ipusim.compat.tf.experimental import numpy

__all__ = ["numpy"]
