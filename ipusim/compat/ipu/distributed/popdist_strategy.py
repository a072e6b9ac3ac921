"""``ipu.distributed.popdist_strategy``: this module *is* :mod:`ipusim.strategy`, whose ``PopDistStrategy`` it provides
(see :func:`ipusim.compat._alias.become`)."""

from ipusim.compat._alias import become

become(__name__, "ipusim.strategy")
