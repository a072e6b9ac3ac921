"""``tf.optimizers``: this module *is* :mod:`ipusim.keras.optimizers` (TensorFlow 2 exports the Keras module under
both names; see :func:`ipusim.compat._alias.become`)."""

from ipusim.compat._alias import become

become(__name__, "ipusim.keras.optimizers")
