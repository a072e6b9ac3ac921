"""``tf.compat``: ``tf.compat.v1.train``'s optimizers (see :mod:`ipusim.compat.tf.compat.v1`)."""

from ipusim.compat.tf.compat import v1

__all__ = ["v1"]
