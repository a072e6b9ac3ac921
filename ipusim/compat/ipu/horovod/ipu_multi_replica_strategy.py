"""``tensorflow.python.ipu.horovod.ipu_multi_replica_strategy`` (SDK 2.x): its
``IPUMultiReplicaStrategy`` is the strategy later SDKs call ``PopDistStrategy``."""

from ipusim.compat.ipu.distributed.popdist_strategy import PopDistStrategy

IPUMultiReplicaStrategy = PopDistStrategy

__all__ = ["IPUMultiReplicaStrategy"]
