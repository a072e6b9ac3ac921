"""Run IPU TensorFlow 2 scripts on ipusim by changing only their imports.

The porting rule is mechanical::

    import tensorflow as tf                  ->  from ipusim.compat import tf
    from tensorflow.python import ipu        ->  from ipusim.compat import ipu
    import keras / from tensorflow import keras  ->  from ipusim.compat import keras
    from keras.datasets import mnist         ->  from ipusim.compat.keras.datasets import mnist

``tf.keras is keras``. ``ipusim run SCRIPT.py`` runs an unmodified script with those imports
redirected for that process only (:mod:`ipusim.compat.runner`); nothing here installs a module
named ``tensorflow`` or ``keras`` anywhere else.
"""

# The finder of the alias modules (compat.keras.layers is ipusim.keras.layers...) comes first.
from ipusim.compat import _alias  # noqa: F401, I001
from ipusim.compat import keras  # noqa: I001  (keras before ipu and tf, which use it)
from ipusim.compat import ipu
from ipusim.compat import tf
from ipusim.compat._missing import guard_loaded

# A name these namespaces lack raises ipusim's NotSimulatedError naming it (see docs/api.md).
guard_loaded("ipusim.compat")

__all__ = ["ipu", "keras", "tf"]
