"""``tf.config``: the devices a program sees and TensorFlow's runtime switches.

Devices: the host's ``CPU:0`` and, once an ``IPUConfig`` is configured, one ``IPU`` device per
entry of ``auto_select_ipus`` / ``select_ipus`` (IPU TensorFlow makes each configured
multi-IPU device one TensorFlow device, ``/device:IPU:k``). There is no GPU. Visibility, soft
placement, thread-pool sizes and JIT switches are kept and read back; none of them changes the
simulated IPU program, which is planned whole, as Poplar compiles it.
``run_functions_eagerly(True)`` is kept too: ipusim still traces ``tf.function`` bodies that run
on the IPU (an IPU program is always compiled), with the same numbers.
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace
from typing import Any, NamedTuple

from ipusim.config import active_config
from ipusim.errors import ConfigurationError

__all__ = [
    "LogicalDevice",
    "PhysicalDevice",
    "experimental",
    "experimental_functions_run_eagerly",
    "experimental_run_functions_eagerly",
    "functions_run_eagerly",
    "get_soft_device_placement",
    "get_visible_devices",
    "list_logical_devices",
    "list_physical_devices",
    "optimizer",
    "run_functions_eagerly",
    "set_soft_device_placement",
    "set_visible_devices",
    "threading",
]

_DEVICE_TYPES = ("CPU", "GPU", "TPU", "IPU")


class PhysicalDevice(NamedTuple):
    """``tf.config.PhysicalDevice``: a device's name and type."""

    name: str
    device_type: str


class LogicalDevice(NamedTuple):
    """``tf.config.LogicalDevice``: a device's name and type."""

    name: str
    device_type: str


_SETTINGS: dict[str, Any] = {
    "run_eagerly": False,
    "soft_placement": True,
    "hidden": set(),
    "inter_op": 0,
    "intra_op": 0,
    "jit": False,
    "optimizer_options": {},
}


def _ipu_count() -> int:
    config = active_config()
    if config is None:
        return 0
    devices = config.auto_select_ipus or config.select_ipus or []
    return len(devices) if isinstance(devices, list | tuple) else 1


def _check_type(device_type: str | None) -> str | None:
    if device_type is not None and device_type.upper() not in _DEVICE_TYPES:
        raise ConfigurationError(
            f"device_type must be one of {', '.join(_DEVICE_TYPES)} (or None for all); "
            f"received {device_type!r}"
        )
    return None if device_type is None else device_type.upper()


def list_physical_devices(device_type: str | None = None) -> list[PhysicalDevice]:
    """The host CPU and the configured IPU devices (``device_type`` filters them)."""
    wanted = _check_type(device_type)
    devices = [PhysicalDevice("/physical_device:CPU:0", "CPU")]
    devices += [PhysicalDevice(f"/physical_device:IPU:{k}", "IPU") for k in range(_ipu_count())]
    return [d for d in devices if wanted is None or d.device_type == wanted]


def list_logical_devices(device_type: str | None = None) -> list[LogicalDevice]:
    """The logical devices: ``/device:CPU:0`` and ``/device:IPU:k`` per configured device."""
    return [LogicalDevice(d.name.replace("/physical_device:", "/device:"), d.device_type)
            for d in get_visible_devices(device_type)]  # fmt: skip


def get_visible_devices(device_type: str | None = None) -> list[PhysicalDevice]:
    """The physical devices the program may use: all of them but those
    :func:`set_visible_devices` left out."""
    wanted = _check_type(device_type)
    return [
        d
        for d in list_physical_devices()
        if d.name not in _SETTINGS["hidden"] and (wanted is None or d.device_type == wanted)
    ]


def set_visible_devices(devices: Any, device_type: str | None = None) -> None:
    """Make ``devices`` the visible ones of ``device_type`` (of every type when None)."""
    wanted = _check_type(device_type)
    chosen = [devices] if isinstance(devices, PhysicalDevice) else list(devices)
    known = list_physical_devices()
    unknown = [d for d in chosen if d not in known]
    if unknown:
        raise ConfigurationError(
            f"set_visible_devices: {unknown} are not devices of this machine; pick them from "
            "tf.config.list_physical_devices()"
        )
    names = {d.name for d in chosen}
    of_type = {d.name for d in known if wanted is None or d.device_type == wanted}
    # the devices of that type: the chosen ones shown, the others hidden
    _SETTINGS["hidden"] = (_SETTINGS["hidden"] - (of_type & names)) | (of_type - names)


def run_functions_eagerly(run_eagerly: bool) -> None:
    """Kept (:func:`functions_run_eagerly` reads it); IPU functions are still traced."""
    if run_eagerly:
        warnings.warn(
            "tf.config.run_functions_eagerly(True): functions placed on the IPU are still "
            "compiled (traced) and simulated, with the same numbers",
            stacklevel=2,
        )
    _SETTINGS["run_eagerly"] = bool(run_eagerly)


def functions_run_eagerly() -> bool:
    """What :func:`run_functions_eagerly` last set."""
    return bool(_SETTINGS["run_eagerly"])


experimental_run_functions_eagerly = run_functions_eagerly
experimental_functions_run_eagerly = functions_run_eagerly


def set_soft_device_placement(enabled: bool) -> None:
    """Kept; placement has no effect on the simulated IPU program."""
    _SETTINGS["soft_placement"] = bool(enabled)


def get_soft_device_placement() -> bool:
    """What :func:`set_soft_device_placement` last set (True by default, as in TensorFlow)."""
    return bool(_SETTINGS["soft_placement"])


def _setter(key: str) -> Any:
    def set_value(value: Any) -> None:
        _SETTINGS[key] = value

    return set_value


#: ``tf.config.threading``: the host's thread-pool sizes (0: TensorFlow picks), kept.
threading = SimpleNamespace(
    get_inter_op_parallelism_threads=lambda: _SETTINGS["inter_op"],
    set_inter_op_parallelism_threads=_setter("inter_op"),
    get_intra_op_parallelism_threads=lambda: _SETTINGS["intra_op"],
    set_intra_op_parallelism_threads=_setter("intra_op"),
)

#: ``tf.config.optimizer``: XLA JIT and Grappler switches, kept (Poplar compiles IPU programs).
optimizer = SimpleNamespace(
    get_jit=lambda: _SETTINGS["jit"],
    set_jit=_setter("jit"),
    get_experimental_options=lambda: dict(_SETTINGS["optimizer_options"]),
    set_experimental_options=lambda options: _SETTINGS["optimizer_options"].update(options),
)

from ipusim.compat.tf.config import experimental  # noqa: E402 - it reads the functions above
