"""``tensorflow.python.training.optimizer``: where TensorFlow defines the TF1 ``Optimizer``.

Its names are read from ``tf.compat.v1.train`` of ipusim's ``tf`` when asked for (a name that
is not there raises ipusim's NotSimulatedError).
"""

from ipusim.compat._alias import forward_getattr

__getattr__ = forward_getattr(__name__, "ipusim.compat.tf:compat.v1.train")
