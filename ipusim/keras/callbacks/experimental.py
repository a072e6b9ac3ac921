"""``tf.keras.callbacks.experimental``: the experimental alias of :class:`BackupAndRestore`."""

from ipusim.keras.callbacks.checkpoint import BackupAndRestore

__all__ = ["BackupAndRestore"]
