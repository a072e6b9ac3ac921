"""Planning: search the configurations of a model for the one that fits and runs fastest.

:mod:`ipusim.plan.partition` balances pipeline stages by dynamic programming;
:mod:`ipusim.plan.space` lists and estimates a workload's candidates; :mod:`ipusim.plan.search`
has the simulator judge them (:func:`plan`). The package itself is callable, so
``ipusim.plan("bert", "POD16", 65280)`` runs :func:`ipusim.plan.search.plan`.
"""

import sys
import types
from typing import Any

from ipusim.plan.partition import Split, best_splits
from ipusim.plan.search import PlanResult, plan

__all__ = ["PlanResult", "Split", "best_splits", "plan"]


class _CallablePackage(types.ModuleType):
    """``ipusim.plan`` is both this package and the planner (``ipusim.plan(...)``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> PlanResult:
        return plan(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
