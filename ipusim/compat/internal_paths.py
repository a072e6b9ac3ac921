"""TensorFlow's and Keras' internal module paths that public IPU programs import.

Programs reach past the public API (``from tensorflow.python.ops import math_ops``,
``from keras.utils import tf_inspect``). Under ``ipusim run`` each path of :data:`INTERNAL`
is a module made on first import whose names are read from the public ipusim namespaces that
hold them (searched in order); a name none holds raises ipusim's NotSimulatedError naming it.
``tensorflow.python.keras.X`` and ``keras.X`` are the same path.
"""

from __future__ import annotations

import sys
from types import ModuleType

from ipusim.compat._alias import forward_getattr
from ipusim.compat._missing import guard
from ipusim.compat.not_simulated import public_name

__all__ = ["INTERNAL", "internal_module"]

_TF, _MATH, _NN = "ipusim.compat.tf", "ipusim.compat.tf.math", "ipusim.compat.tf.nn"

#: internal path -> the modules (or ``module:attribute``) its names are read from, in order.
INTERNAL: dict[str, tuple[str, ...]] = {
    "tensorflow.python.ops": (_TF,),
    "tensorflow.python.ops.math_ops": (_TF, _MATH),
    "tensorflow.python.ops.array_ops": (_TF,),
    "tensorflow.python.ops.nn": (_NN,),
    "tensorflow.python.ops.nn_ops": (_NN,),
    "tensorflow.python.ops.random_ops": ("ipusim.compat.tf.random",),
    "tensorflow.python.ops.control_flow_ops": (_TF,),
    "tensorflow.python.ops.variables": (_TF,),
    "tensorflow.python.framework": (_TF,),
    "tensorflow.python.framework.ops": (_TF,),
    "tensorflow.python.framework.dtypes": (_TF,),
    "tensorflow.python.framework.constant_op": (_TF,),
    "tensorflow.python.framework.tensor_spec": (_TF,),
    "tensorflow.python.framework.tensor_shape": (_TF,),
    "tensorflow.python.framework.errors": (f"{_TF}:errors",),
    "tensorflow.python.framework.errors_impl": (f"{_TF}:errors",),
    "tensorflow.python.eager": (_TF,),
    "tensorflow.python.eager.def_function": (_TF,),
    "tensorflow.python.eager.backprop": (_TF,),
    "tensorflow.python.distribute": (f"{_TF}:distribute",),
    "tensorflow.python.distribute.reduce_util": (f"{_TF}:distribute",),
    "tensorflow.python.distribute.distribution_strategy_context": (f"{_TF}:distribute",),
    "keras.utils.tf_inspect": ("inspect",),
    "keras.utils.layer_utils": ("ipusim.keras.utils",),
    "keras.engine.base_layer": ("ipusim.keras.engine.layer",),
    "keras.engine.input_spec": ("ipusim.keras.engine.layer", "ipusim.keras.layers"),
}

_PACKAGE = "ipusim.compat._internal"


def _canonical(fullname: str) -> str:
    for prefix in ("tensorflow.python.keras.", "tensorflow.keras."):
        if fullname.startswith(prefix):
            return "keras." + fullname[len(prefix) :]
    return fullname


def internal_module(fullname: str) -> str | None:
    """The ipusim module standing for the internal path ``fullname`` (made on first use and
    registered in ``sys.modules``), or None when :data:`INTERNAL` does not list it."""
    path = _canonical(fullname)
    sources = INTERNAL.get(path)
    if sources is None:
        return None
    module_name = f"{_PACKAGE}.{path}"
    if module_name not in sys.modules:
        module = ModuleType(module_name, f"``{path}`` under ipusim run (reads {sources}).")
        module.__path__ = []  # a package: its listed subpaths import beneath it
        module.__getattr__ = forward_getattr(module_name, sources)  # type: ignore[method-assign]
        guard(module, public_name(path))
        sys.modules[module_name] = module
    return module_name
