"""``tensorflow.python.data``: TensorFlow's internal data package (only ``ops.dataset_ops``)."""
