"""Planning: search the configurations of a model for the one that fits and runs fastest.

So far: :mod:`ipusim.plan.partition`, pipeline stage balancing by dynamic programming.
"""

from ipusim.plan.partition import Split, best_splits

__all__ = ["Split", "best_splits"]
