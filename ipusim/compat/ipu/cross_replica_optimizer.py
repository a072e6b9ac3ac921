"""``ipu.cross_replica_optimizer`` (the SDK 1.x/2.x module path of the TF1 examples):
``CrossReplicaOptimizer`` from :mod:`ipusim.compat.runtime.optimizers`."""

from ipusim.compat._alias import runtime_getattr

_NAMES = ("CrossReplicaOptimizer",)

__getattr__ = runtime_getattr(__name__, "ipusim.compat.runtime.optimizers", _NAMES)

__all__ = list(_NAMES)
