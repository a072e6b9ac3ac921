"""``tf.keras.metrics.experimental``: :class:`PyMetric`.

In Keras a ``PyMetric`` is a metric whose ``update_state``/``result`` run as Python (NumPy) code
on the host through ``tf.py_function``. Every ipusim metric already runs on the host in Python,
so a ``PyMetric`` is an ordinary :class:`~ipusim.keras.metrics.base.Metric`: subclasses define
``update_state(y_true, y_pred, sample_weight=None)``, ``result()`` and ``reset_state()``.
"""

from __future__ import annotations

from ipusim.keras.metrics.base import Metric


class PyMetric(Metric):
    """A metric written in Python/NumPy (override ``update_state``, ``result``,
    ``reset_state``)."""


__all__ = ["PyMetric"]
