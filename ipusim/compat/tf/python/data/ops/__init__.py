"""``tensorflow.python.data.ops``: TensorFlow's internal data ops (only ``dataset_ops``)."""
