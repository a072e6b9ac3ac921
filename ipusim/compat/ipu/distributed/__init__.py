"""``tensorflow.python.ipu.distributed``: multi-instance training (``popdist_strategy``)."""

from ipusim.compat.ipu.distributed import popdist_strategy
from ipusim.compat.ipu.distributed.popdist_strategy import PopDistStrategy

__all__ = ["PopDistStrategy", "popdist_strategy"]
