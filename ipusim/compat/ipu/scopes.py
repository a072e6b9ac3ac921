"""``ipu.scopes``: ``ipu_scope(device)`` and the other scopes of IPU TensorFlow's ``scopes.py``.

``ipu_jit_scope`` and ``frontend_attribute`` only label TensorFlow graph nodes for XLA: ipusim
compiles each traced function as one program and has no node attributes, so they change nothing.
``ipu_shard`` accepts shard 0 (ipusim simulates one shard; pipelining and replication are the
multi-IPU modes it models). ``outside_compilation_scope``, ``stochastic_rounding`` and
``partials_type`` are accepted but their per-operation effect is not simulated: a warning says so
once per scope kind, and the operations run and are timed as the rest of the program.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ipusim.compat.ipu.utils import _device_index
from ipusim.config import active_device_ipus
from ipusim.errors import ConfigurationError, UnsupportedError

__all__ = [
    "frontend_attribute",
    "ipu_jit_scope",
    "ipu_scope",
    "ipu_shard",
    "outside_compilation_scope",
    "partials_type",
    "stochastic_rounding",
]

log = logging.getLogger("ipusim")
_WARNED: set[str] = set()


@contextmanager
def ipu_scope(device: str) -> Iterator[None]:
    """Place the operations of the block on ``device`` (``"/device:IPU:0"``).

    ipusim runs everything on the single simulated ``/device:IPU:0`` of the active configuration,
    so the scope only checks that the device is that one and configured.

    Args:
        device: the TensorFlow device name of an IPU device.

    Raises:
        ValueError: ``device`` is not of the form ``/device:IPU:<n>`` or is not configured.
        NotImplementedError: ``device`` is a configured device other than ``/device:IPU:0``.
    """
    index = _device_index(device, "ipu_scope(device)")
    active_device_ipus(index)  # raises ValueError naming the configured devices
    if index != 0:
        raise UnsupportedError(
            f"ipu_scope({device!r}): ipusim simulates /device:IPU:0 only; configure the IPUs "
            "you need as one device (IPUConfig.auto_select_ipus = N) and use /device:IPU:0"
        )
    yield


def _warn_once(scope: str, effect: str) -> None:
    if scope not in _WARNED:
        _WARNED.add(scope)
        log.warning("ipu.scopes.%s: %s is not simulated per operation by ipusim", scope, effect)


@contextmanager
def ipu_jit_scope(ipu_scope: Any) -> Iterator[None]:
    """Group operations for one XLA compilation (no effect: a traced function is one program)."""
    del ipu_scope
    yield


@contextmanager
def frontend_attribute(
    attribute_name: str, attribute_value: str, restore_to: str | None = None
) -> Iterator[None]:
    """Set an XLA frontend attribute on the enclosed operations (no effect in ipusim)."""
    del attribute_name, attribute_value, restore_to
    yield


@contextmanager
def ipu_shard(index: Any) -> Iterator[None]:
    """Place the enclosed operations on shard ``index`` of a sharded device.

    Raises:
        UnsupportedError: a shard other than 0 (manual sharding is not simulated; pipeline the
            model with ``PipelineStage`` / ``pipelining_ops.pipeline`` instead).
    """
    shards = list(index) if hasattr(index, "__iter__") else [index]
    if any(s != 0 for s in shards):
        raise UnsupportedError(
            f"ipu_shard({index!r}): manual sharding over several IPUs is not simulated by "
            "ipusim; use pipelining (keras.ipu.PipelineStage or ipu.pipelining_ops.pipeline) to "
            "spread a model over IPUs"
        )
    yield


@contextmanager
def outside_compilation_scope(name: str = "outside") -> Iterator[None]:
    """Run the enclosed operations on the host (simulated on the IPU, with a warning)."""
    del name
    _warn_once("outside_compilation_scope", "placing operations on the host")
    yield


@contextmanager
def stochastic_rounding(override: bool) -> Iterator[None]:
    """Force stochastic rounding on or off for the enclosed operations (with a warning; the
    ``IPUConfig.floating_point_behaviour.esr`` setting applies to them)."""
    del override
    _warn_once("stochastic_rounding", "forcing stochastic rounding")
    yield


@contextmanager
def partials_type(override_type: Any) -> Iterator[None]:
    """Choose the partials type (float16 or float32) of the enclosed operations.

    Raises:
        ValueError: a type other than float16 and float32 (IPU TensorFlow's message).
    """
    dtype = np.dtype(override_type)
    if dtype not in (np.float16, np.float32):
        raise ConfigurationError(f"Only support float16, float32, provided {dtype}")
    _warn_once("partials_type", "overriding the partials type")
    yield
