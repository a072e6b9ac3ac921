"""``ipu.gradient_accumulation_optimizer`` (the SDK 1.x/2.x module path): the accumulation
wrappers from :mod:`ipusim.compat.runtime.optimizers`."""

from ipusim.compat._alias import runtime_getattr

_NAMES = (
    "CrossReplicaGradientAccumulationOptimizer",
    "CrossReplicaGradientAccumulationOptimizerV2",
    "GradientAccumulationOptimizer",
    "GradientAccumulationOptimizerV2",
)

__getattr__ = runtime_getattr(__name__, "ipusim.compat.runtime.optimizers", _NAMES)

__all__ = list(_NAMES)
