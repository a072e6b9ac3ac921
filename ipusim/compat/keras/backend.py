"""``keras.backend``: the settings of :mod:`ipusim.keras.backend` (``floatx``, ``epsilon``,
``clear_session``, the seed stream...) and the tensor functions Keras code calls as ``K.*``
(:mod:`ipusim.compat.runtime.ops_backend`: ``K.mean``, ``K.dot``, ``K.int_shape``...).

Settings are read from and written to :mod:`ipusim.keras.backend` itself (this module only
forwards), so ``K.set_floatx`` here is the one every ipusim layer sees. The runtime's tensor
functions come first: they also run on ``tf.Variable`` objects inside a ``tf.function`` and
return eager tensors, where :mod:`ipusim.keras.backend_ops` (the same names, for ipusim's own
Keras code) computes with NumPy outside a model. Where the two agree on the graph they build
(``K.int_shape``, ``K.ndim``, ``K.flatten``, ``K.batch_flatten``) the runtime uses
:mod:`ipusim.keras.backend_ops`; the others are the runtime's TensorFlow ops under Keras' names.
"""

from ipusim.compat._alias import runtime_getattr
from ipusim.keras.backend import (  # noqa: F401 - re-exported
    clear_session,
    epsilon,
    floatx,
    set_epsilon,
    set_floatx,
)

__getattr__ = runtime_getattr(
    __name__,
    (
        "ipusim.compat.runtime.ops_backend",
        "ipusim.compat.runtime.ops_backend_nn",
        "ipusim.keras.backend",
    ),
    ("clear_session", "epsilon", "floatx", "set_epsilon", "set_floatx"),
)
