"""``tensorflow.python.data.ops.dataset_ops``: where TensorFlow defines ``tf.data.Dataset``.

IPU programs import ``Dataset`` from here; it is :class:`ipusim.data.Dataset`, as ``tf.data``'s.
"""

from ipusim.data import AUTOTUNE, Dataset

#: TensorFlow 2's name of the class behind ``tf.data.Dataset``.
DatasetV2 = Dataset

__all__ = ["AUTOTUNE", "Dataset", "DatasetV2"]
