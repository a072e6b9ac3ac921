"""``tensorflow.python.ipu.distributed``: multi-instance training (``popdist_strategy``)."""

from ipusim.compat.ipu.distributed import popdist_strategy

PopDistStrategy = popdist_strategy.PopDistStrategy

__all__ = ["PopDistStrategy", "popdist_strategy"]
