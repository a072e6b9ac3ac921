"""``tf.nn``: tensor functions from ipusim's custom-training-loop runtime.

Every name is looked up on first use in ``ipusim.compat.runtime.ops`` (its ``nn`` namespace
first, then the module itself), so ``tf.nn`` works as soon as that runtime is installed.
"""

from ipusim.compat._alias import runtime_getattr

_DOCUMENTED = (
    "relu",
    "sigmoid",
    "softmax",
    "log_softmax",
    "tanh",
    "sparse_softmax_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits",
)

__getattr__ = runtime_getattr(
    __name__,
    (
        "ipusim.compat.runtime.ops:nn",
        "ipusim.compat.runtime.ops",
        "ipusim.compat.runtime.namespaces:nn",
    ),
    _DOCUMENTED,
)
