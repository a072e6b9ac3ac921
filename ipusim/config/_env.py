"""Environment switches read by the configuration (mirrors IPU TensorFlow's env handling)."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Iterator
from typing import Any

from ipusim.errors import ConfigurationError

__all__ = [
    "SETTINGS",
    "running_on_ipu_model",
    "settings_restored",
    "tf_config",
    "using_synthetic_data",
]

#: The environment variables ipusim reads as settings of a run (workload scripts set them for
#: their process).
SETTINGS = ("TF_POPLAR_FLAGS", "IPUSIM_TIMING_ONLY")


def running_on_ipu_model() -> bool:
    """Whether the IPU Model (Poplar's software IPU) is selected.

    True when the ``TF_POPLAR_FLAGS`` environment variable contains ``--use_ipu_model``, as in
    IPU TensorFlow. The ``ipu_model.*`` options and the IPU-Model-only checks of
    :func:`~ipusim.config.configure_ipu_system` apply only then. ipusim simulates the same
    machine either way.
    """
    return "--use_ipu_model" in os.environ.get("TF_POPLAR_FLAGS", "")


def using_synthetic_data() -> bool:
    """Whether host I/O is replaced by synthetic data on the device.

    True when ``TF_POPLAR_FLAGS`` contains ``--use_synthetic_data``, IPU TensorFlow's switch
    that removes every infeed and outfeed stream copy, so a run measures the device alone (the
    numbers computed on the host are unchanged in ipusim; only the simulated host I/O goes).
    """
    return "--use_synthetic_data" in os.environ.get("TF_POPLAR_FLAGS", "").split()


@contextlib.contextmanager
def settings_restored(names: Iterable[str] = SETTINGS) -> Iterator[None]:
    """Restore the environment variables ``names`` (default: :data:`SETTINGS`) to their values
    on entry when the block ends, set or unset, for code that runs a workload's ``main`` (or
    starts workers) in a process that goes on to run other things."""
    saved = {name: os.environ.get(name) for name in names}
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def tf_config() -> dict[str, Any] | None:
    """The ``TF_CONFIG`` environment variable, parsed (None when it is unset).

    Raises:
        ConfigurationError: it is not a JSON object.
    """
    text = os.environ.get("TF_CONFIG", "")
    if not text:
        return None
    try:
        parsed = json.loads(text)
    except ValueError as error:
        parsed = error
    if not isinstance(parsed, dict):
        raise ConfigurationError(
            f"TF_CONFIG is not a JSON object ({parsed}); it should look like "
            '{"cluster": {"worker": ["host0:2222", "host1:2222"]}, "task": '
            '{"type": "worker", "index": 0}}.'
        )
    return parsed
