"""``keras.backend``: the settings of :mod:`ipusim.keras.backend` (``floatx``, ``epsilon``,
``clear_session``, the seed stream...) and the tensor functions Keras code calls as ``K.*``
(:mod:`ipusim.compat.runtime.ops_backend`: ``K.mean``, ``K.dot``, ``K.int_shape``...).

Settings are read from and written to :mod:`ipusim.keras.backend` itself (this module only
forwards), so ``K.set_floatx`` here is the one every ipusim layer sees.
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
    ("ipusim.keras.backend", "ipusim.compat.runtime.ops_backend"),
    ("clear_session", "epsilon", "floatx", "set_epsilon", "set_floatx"),
)
