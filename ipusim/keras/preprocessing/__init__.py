"""``keras.preprocessing``: sequence padding, text tokenising and image conversion (pure NumPy
with tf.keras' semantics; see each module)."""

from ipusim.keras.preprocessing import image, sequence, text

__all__ = ["image", "sequence", "text"]
