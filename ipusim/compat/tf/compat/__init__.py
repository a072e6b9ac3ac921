"""``tf.compat``: ``tf.compat.v1`` (the TF1 names IPU estimator programs use) and
``tf.compat.v2`` (this ``tf`` itself)."""

import sys

from ipusim.compat.tf.compat import v1

v2 = sys.modules["ipusim.compat.tf"]

__all__ = ["v1", "v2"]
