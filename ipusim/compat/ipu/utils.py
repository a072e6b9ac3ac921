"""``ipu.utils``: configuration re-exports and small device helpers (IPU TensorFlow 2.5)."""

from __future__ import annotations

import os
from collections.abc import Callable
from enum import Enum
from typing import Any

from ipusim.config import (
    DeviceConnectionType,
    ExecutionProfileType,
    IPUConfig,
    MergeRemoteBuffersBehaviour,
    SchedulingAlgorithm,
    SelectionOrder,
    active_device_ipus,
    configure_ipu_system,
    get_ipu_config,
    reset_ipu_configuration,
    running_on_ipu_model,
)
from ipusim.config._env import using_synthetic_data
from ipusim.errors import ConfigurationError, InvalidTypeError, UnsupportedError
from ipusim.keras.backend import set_random_seed

__all__ = [
    "DeviceConnectionType",
    "ExecutionProfileType",
    "IPUConfig",
    "MergeRemoteBuffersBehaviour",
    "SchedulingAlgorithm",
    "SelectionOrder",
    "SyntheticDataCategory",
    "configure_ipu_system",
    "export_dataset_to_file",
    "export_inputs_to_file",
    "export_variables_from_live_model",
    "export_variables_from_live_session",
    "get_ipu_config",
    "get_num_of_ipus_in_device",
    "import_data_in_live_model",
    "import_data_in_live_session",
    "move_variable_initialization_to_cpu",
    "reset_ipu_configuration",
    "reset_ipu_seed",
    "running_on_ipu_model",
    "use_synthetic_data_for",
]


def _device_index(ipu_device: str, argument: str) -> int:
    prefix = "/device:IPU:"
    tail = ipu_device[len(prefix) :] if isinstance(ipu_device, str) else ""
    if not isinstance(ipu_device, str) or not ipu_device.startswith(prefix) or not tail.isdigit():
        raise ConfigurationError(
            f"`{argument}` must name an IPU device such as '/device:IPU:0', received {ipu_device!r}"
        )
    return int(tail)


def get_num_of_ipus_in_device(ipu_device: str, device: str = "cpu") -> int:
    """Number of IPUs in the TensorFlow device ``ipu_device`` of the active configuration.

    With no configuration, ``/device:IPU:0`` is one IPU (as IPU TensorFlow creates a one-IPU
    device when none was configured).

    Args:
        ipu_device: the device name, e.g. ``"/device:IPU:0"``.
        device: the host device; accepted for compatibility, unused.

    Raises:
        ValueError: ``ipu_device`` is malformed or not configured.
    """
    return len(active_device_ipus(_device_index(ipu_device, "ipu_device")))


def reset_ipu_seed(
    seed: int,
    device: str = "/device:IPU:0",
    cpu_device: str = "cpu",
    experimental_identical_replicas: bool = False,
) -> None:
    """Restart the random streams from ``seed`` (weights, dropout masks, shuffles).

    ipusim has one seed stream for the whole process (see ``keras.utils.set_random_seed``);
    resetting it makes the following work repeat exactly. Replicas are always identical.

    Args:
        seed: the new seed, a non-negative int.
        device: the IPU device; must be a configured device name.
        cpu_device: accepted for compatibility, unused.
        experimental_identical_replicas: accepted for compatibility (replicas always agree).

    Raises:
        ValueError: ``seed`` is not a non-negative int, or ``device`` is not a configured device.
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ConfigurationError(
            f"reset_ipu_seed: `seed` must be a non-negative int, received {seed!r}"
        )
    active_device_ipus(_device_index(device, "device"))
    set_random_seed(seed)


def move_variable_initialization_to_cpu(graph: Any = None) -> None:
    """Place the variables' initialisers on the host (IPU TensorFlow's TF1-style helper).

    ipusim always initialises variables on the host (NumPy, from the seed stream) and copies
    the values to the device, so the device program never contains initialisers: this is
    already the behaviour the function asks for, and calling it changes nothing.

    Args:
        graph: the TF1 graph to rearrange; accepted for compatibility (ipusim has no TF1 graph).
    """
    del graph


class SyntheticDataCategory(Enum):
    """The data whose host transfer ``--synthetic_data_categories`` can replace."""

    Seed = 0
    Infeed = 1
    Outfeed = 2
    HostEmbedding = 3
    Parameters = 4


def use_synthetic_data_for(synthetic_data_category: SyntheticDataCategory) -> bool:
    """Whether synthetic data replaces the host transfers of ``synthetic_data_category``.

    As the Poplar flags do: ``TF_POPLAR_FLAGS=--use_synthetic_data`` covers every category;
    ``--synthetic_data_categories=infeed,outfeed`` (comma-separated names, any case) only
    those named (E: the flag's value format as Graphcore's documentation writes it).

    Raises:
        TypeError: the category is not a :class:`SyntheticDataCategory`.
    """
    if not isinstance(synthetic_data_category, SyntheticDataCategory):
        raise InvalidTypeError(
            "use_synthetic_data_for expects a utils.SyntheticDataCategory (e.g. "
            f"SyntheticDataCategory.Infeed), received {synthetic_data_category!r}"
        )
    if using_synthetic_data():
        return True
    for flag in os.environ.get("TF_POPLAR_FLAGS", "").split():
        name, _, value = flag.partition("=")
        if name == "--synthetic_data_categories":
            chosen = {c.strip().strip("'\"").lower() for c in value.split(",")}
            return synthetic_data_category.name.lower() in chosen
    return False


def _not_simulated(name: str, reason: str) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise UnsupportedError(f"ipu.utils.{name} is not simulated by ipusim: {reason}")

    refuse.__name__ = name
    refuse.__doc__ = f"Not simulated: raises UnsupportedError ({reason})."
    return refuse


_BINARY = (
    "it writes Poplar's binary feed files for standalone executables, which ipusim does not "
    "produce; save the arrays with numpy.save instead"
)
_SESSION = "it works on TF1 sessions, which ipusim does not have; use model.save_weights instead"
export_dataset_to_file = _not_simulated("export_dataset_to_file", _BINARY)
export_inputs_to_file = _not_simulated("export_inputs_to_file", _BINARY)
export_variables_from_live_session = _not_simulated("export_variables_from_live_session", _SESSION)
export_variables_from_live_model = _not_simulated("export_variables_from_live_model", _SESSION)
import_data_in_live_session = _not_simulated("import_data_in_live_session", _SESSION)
import_data_in_live_model = _not_simulated("import_data_in_live_model", _SESSION)
