"""``tensorflow.python.ipu.horovod.popdist_strategy`` (older SDKs): the same
:class:`~ipusim.compat.ipu.distributed.popdist_strategy.PopDistStrategy`."""

from ipusim.compat.ipu.distributed.popdist_strategy import PopDistStrategy

__all__ = ["PopDistStrategy"]
