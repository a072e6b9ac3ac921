"""``tensorflow.python.training``: TensorFlow's internal training package (``optimizer``)."""
