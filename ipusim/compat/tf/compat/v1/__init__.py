"""``tf.compat.v1``: only ``train`` (the TF1 optimizers Keras ``compile`` accepts)."""

from ipusim.compat.tf.compat.v1 import train

__all__ = ["train"]
