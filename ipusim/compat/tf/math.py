"""``tf.math``: tensor functions from ipusim's custom-training-loop runtime.

Every name is looked up on first use in ``ipusim.compat.runtime.ops`` (then in the runtime's
``math`` namespace), so ``tf.math`` works as soon as that runtime is installed.
"""

from ipusim.compat._alias import runtime_getattr

_DOCUMENTED = (
    "abs",
    "add",
    "argmax",
    "exp",
    "log",
    "maximum",
    "minimum",
    "multiply",
    "reduce_max",
    "reduce_mean",
    "reduce_min",
    "reduce_sum",
    "sqrt",
    "square",
)

__getattr__ = runtime_getattr(
    __name__,
    (
        "ipusim.compat.runtime.ops",
        "ipusim.compat.runtime.namespaces:math",
    ),
    _DOCUMENTED,
)
