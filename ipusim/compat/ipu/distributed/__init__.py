"""``tensorflow.python.ipu.distributed``: multi-instance training (``popdist_strategy``)."""

# popdist_strategy is ipusim.strategy, made by the import hook of ipusim.compat._alias (MODULES),
# which mypy cannot follow
from ipusim.compat.ipu.distributed import popdist_strategy  # type: ignore[attr-defined]

PopDistStrategy = popdist_strategy.PopDistStrategy

__all__ = ["PopDistStrategy", "popdist_strategy"]
