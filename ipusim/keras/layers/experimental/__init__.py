"""``keras.layers.experimental``: where TensorFlow 2.6 (the TensorFlow of IPU TensorFlow 2)
keeps EinsumDense and, in ``preprocessing``, the preprocessing layers."""

from ipusim.keras.layers.einsum_dense import EinsumDense
from ipusim.keras.layers.experimental import preprocessing

__all__ = ["EinsumDense", "preprocessing"]
