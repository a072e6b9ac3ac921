"""``tf.config.experimental``: the device listings under their older names (the GPU memory
switches are listed as not simulated: the IPU's memory is planned before anything runs)."""

from ipusim.compat.tf.config import (
    get_visible_devices,
    list_logical_devices,
    list_physical_devices,
    set_visible_devices,
)

__all__ = [
    "get_visible_devices",
    "list_logical_devices",
    "list_physical_devices",
    "set_visible_devices",
]
