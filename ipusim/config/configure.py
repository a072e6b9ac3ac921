"""Configuring the simulated IPU system, and the process-wide record of what is configured.

:func:`configure_ipu_system` checks an :class:`~ipusim.config.IPUConfig` as IPU TensorFlow does
at configure time, works out which physical IPUs each TensorFlow device gets, resolves the
machine (``config.ipusim.system``) with :func:`ipusim.hardware.load_system`, and records a
read-only copy of the config. The rest of ipusim asks :func:`active_config`,
:func:`active_system` and :func:`configured_num_ipus`.

ipusim simulates one TensorFlow device, ``/device:IPU:0``. When several devices are
configured (``auto_select_ipus = [2, 2]``), they all occupy IPUs of the machine but only
device 0 runs the model; :func:`configured_num_ipus` is device 0's IPU count.
"""

from __future__ import annotations

import copy
import threading
import warnings
from dataclasses import dataclass
from typing import Any

from ipusim.config._env import running_on_ipu_model
from ipusim.config.devices import (
    DEFAULT_LISTING_IPUS,
    allocate_auto_devices,
    select_ipus_device,
)
from ipusim.config.ipu_config import IPUConfig
from ipusim.config.ipusim_options import preset_for_ipus
from ipusim.errors import ConfigurationError, IncompatibleStateError, InvalidTypeError

__all__ = [
    "active_config",
    "active_device_ipus",
    "active_system",
    "configure_ipu_system",
    "configured_num_ipus",
    "get_ipu_config",
    "reset_ipu_configuration",
    "running_on_ipu_model",
]


@dataclass(frozen=True)
class _Registration:
    config: IPUConfig  # frozen deep copy
    devices: tuple[tuple[int, ...], ...]  # physical IPU ids of each /device:IPU:i
    system: Any  # ipusim.hardware.SystemSpec


_LOCK = threading.RLock()
_ACTIVE: _Registration | None = None


def _load_system(name: str) -> Any:
    """``ipusim.hardware.load_system(name)``, imported lazily (hardware is below config)."""
    from ipusim.hardware import load_system

    return load_system(name)


def _system(name: str) -> Any:
    """Resolve a preset name or TOML path, naming the option when it cannot be loaded."""
    try:
        return _load_system(name)
    except (ValueError, KeyError, OSError) as e:
        raise ConfigurationError(
            f"config.ipusim.system = {name!r} could not be loaded: {e}. Use a preset name "
            "(for example 'IPU', 'M2000', 'POD16', 'POD64') or the path of a system TOML file."
        ) from e


def _system_num_ipus(system: Any) -> int:
    """Number of IPUs of a SystemSpec (its ``num_ipus``)."""
    n = getattr(system, "num_ipus", None)
    if type(n) is not int:
        raise InvalidTypeError(
            f"Cannot tell how many IPUs the system {system!r} has: expected a SystemSpec with "
            "an int `num_ipus`."
        )
    return n


def _ipu_model_system(config: IPUConfig, system: Any) -> Any:
    """The system as the IPU Model presents it: ``ipu_model.version`` picks the chip (ipu1 = GC2,
    ipu2 = GC200) and a non-zero ``ipu_model.tiles_per_ipu`` replaces the tile count."""
    from ipusim.hardware import load_system

    overrides: dict[str, Any] = {"chip": "GC2" if config.ipu_model.version == "ipu1" else "GC200"}
    if config.ipu_model.tiles_per_ipu:
        overrides["ipu.tiles"] = config.ipu_model.tiles_per_ipu
    return load_system(system, overrides=overrides)


def _ipu_list(value: int | list[int] | tuple[int, ...]) -> list[int] | tuple[int, ...]:
    """An ``auto_select_ipus``/``select_ipus`` value as a sequence (``_validate`` lists ints)."""
    return [value] if isinstance(value, int) else value


def _resolve(config: IPUConfig) -> _Registration:
    """Devices and system of an already validated config."""
    name = config.ipusim.system
    system = _system(name) if name else None
    select_ipus = _ipu_list(config.select_ipus)
    if select_ipus:
        listing_ipus = _system_num_ipus(system) if system is not None else DEFAULT_LISTING_IPUS
        ranges = [select_ipus_device(i, listing_ipus) for i in select_ipus]
        for a in range(len(ranges)):
            for b in range(a):
                shared = sorted(set(ranges[a]) & set(ranges[b]))
                if shared:
                    raise ConfigurationError(
                        f"select_ipus indices {select_ipus[b]} and "
                        f"{select_ipus[a]} share IPU(s) {shared}; a physical IPU can "
                        "belong to only one TensorFlow device. Pick disjoint configurations."
                    )
    else:
        ranges = allocate_auto_devices(list(_ipu_list(config.auto_select_ipus)))
    needed = max((r.stop for r in ranges), default=1)
    # With multi-replica distribution the devices are one process's: the system holds every
    # process's IPUs.
    processes = int(config.experimental.multi_replica_distribution.process_count)
    per_process = f" in each of {processes} processes" if processes > 1 else ""
    needed *= max(processes, 1)
    if system is None:
        system = _system(preset_for_ipus(needed))
    available = _system_num_ipus(system)
    if available < needed:
        raise ConfigurationError(
            f"The configuration needs {needed} IPUs (devices: "
            f"{[len(r) for r in ranges] or [1]}{per_process}), but config.ipusim.system = "
            f"{name!r} has only {available}. Request fewer IPUs or choose a bigger system."
        )
    if running_on_ipu_model():
        system = _ipu_model_system(config, system)
    from ipusim.hardware.hosts import with_host

    system = with_host(system, config.ipusim.host)  # "" = the host shipped with the system
    devices = tuple(tuple(r) for r in ranges)
    frozen = copy.deepcopy(config)
    frozen._set_frozen(True)
    return _Registration(frozen, devices, system)


def configure_ipu_system(
    config: IPUConfig, device: str = "cpu", reset_configuration: bool = True
) -> None:
    """Configure the simulated IPU system.

    Validates ``config`` with IPU TensorFlow's configure-time rules plus the ``ipusim``
    category's, turns an int ``auto_select_ipus``/``select_ipus`` into a one-element list on
    ``config`` itself (as IPU TensorFlow does), resolves the machine and records a read-only
    copy of ``config`` as the active configuration.

    Args:
        config: The configuration.
        device: The CPU device local to the IPUs; accepted for compatibility, unused.
        reset_configuration: Replace an existing, different active configuration (with a
            warning). If False and a different configuration is active, raise instead.

    Raises:
        TypeError: ``config`` is not an IPUConfig, or ``device`` is not a str.
        ValueError: the configuration breaks a rule (each message names the option).
        RuntimeError: a different configuration is active and ``reset_configuration`` is
            False.
    """
    global _ACTIVE
    if not isinstance(config, IPUConfig):
        raise InvalidTypeError(
            f"configure_ipu_system() expects an ipusim.config.IPUConfig as `config`; received "
            f"a {type(config).__name__}. Build one with IPUConfig() and set its options."
        )
    if not isinstance(device, str):
        raise InvalidTypeError(
            f"configure_ipu_system(device=...) expects a device name such as 'cpu'; received "
            f"a {type(device).__name__}."
        )
    config._validate()
    registration = _resolve(config)
    with _LOCK:
        if _ACTIVE is not None and _ACTIVE.config != config:
            if not reset_configuration:
                raise IncompatibleStateError(
                    "A different IPU configuration is already active and "
                    "reset_configuration=False. Call reset_ipu_configuration() first or pass "
                    "reset_configuration=True."
                )
            warnings.warn(
                "Replacing the active IPU configuration with a new one (the old one is reset).",
                UserWarning,
                stacklevel=2,
            )
        _ACTIVE = registration


def reset_ipu_configuration() -> None:
    """Forget the active configuration (a no-op when none is active)."""
    global _ACTIVE
    with _LOCK:
        _ACTIVE = None


def get_ipu_config(session: Any = None) -> list[IPUConfig]:
    """The active configuration, once per configured TensorFlow device.

    Mirrors IPU TensorFlow, which returns one options record per device, all equal.

    Args:
        session: Accepted for compatibility; unused (there are no sessions).

    Returns:
        A list of independent copies of the active IPUConfig, one per device.

    Raises:
        RuntimeError: no configuration is active, or the active one configures no device.
    """
    reg = _ACTIVE
    if reg is None or not reg.devices:
        raise IncompatibleStateError(
            "No IPU devices are configured. Create an IPUConfig, set auto_select_ipus (for "
            "example to 1) and call configure_ipu_system(config)."
        )
    return [copy.deepcopy(reg.config) for _ in reg.devices]


def active_config() -> IPUConfig | None:
    """The active configuration (read-only), or None when none is configured.

    Assigning to it raises; copy it with ``copy.deepcopy`` to make a modifiable one.
    """
    reg = _ACTIVE
    return None if reg is None else reg.config


def active_system() -> Any:
    """The resolved :class:`ipusim.hardware.SystemSpec` of the active configuration, or None."""
    reg = _ACTIVE
    return None if reg is None else reg.system


def active_device_ipus(device_index: int = 0) -> tuple[int, ...]:
    """Physical IPU ids (in the active system) of ``/device:IPU:<device_index>``.

    With no configuration, or a configuration without devices, device 0 is a single IPU,
    ``(0,)``, as IPU TensorFlow creates a one-IPU device for an unconfigured device.

    Raises:
        ValueError: ``device_index`` names a device that is not configured.
    """
    reg = _ACTIVE
    devices = reg.devices if reg is not None and reg.devices else ((0,),)
    if type(device_index) is not int or not 0 <= device_index < len(devices):
        raise ConfigurationError(
            f"/device:IPU:{device_index} is not configured; the configured devices are "
            f"/device:IPU:0..{len(devices) - 1}."
        )
    return devices[device_index]


def configured_num_ipus() -> int:
    """IPUs of ``/device:IPU:0``, the device ipusim simulates (1 when nothing is configured)."""
    return len(active_device_ipus(0))
