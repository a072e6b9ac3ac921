"""``tf.device`` and ``tf.DeviceSpec`` for ported scripts.

IPU TensorFlow programs use ``tf.device`` for two things: ``"/device:CPU:0"`` around host code
(input pipelines, variable initialisation, metrics) and device strings inside the IPU program,
which the IPU compiler overrides. In ipusim neither changes what is simulated: host code already
runs on the host (NumPy, as TensorFlow runs it on the CPU), and the IPU program is placed by
ipusim's own tile mapping and pipeline stages, exactly as IPU TensorFlow places it regardless of
the scope. So ``tf.device`` parses the device string as TensorFlow does (rejecting what TensorFlow
rejects, with TensorFlow's ``ValueError`` / ``RuntimeError``), keeps it as the current device
(:func:`current_device`) and otherwise has no effect.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ipusim.errors import ConfigurationError, IPUSimError

__all__ = ["DeviceSpec", "current_device", "device"]

#: Device types TensorFlow accepts in the short form ``"cpu:0"`` (tensorflow/python/framework/
#: device_spec.py, _VALID_DEVICE_TYPES); other types need the ``/device:TYPE:N`` form.
_SHORT_FORM_TYPES = frozenset({"CPU", "GPU", "TPU", "CUSTOM", "EPU"})

_STACK: list[DeviceSpec] = []


class DeviceFunctionError(IPUSimError, RuntimeError):
    """A device function was passed to ``tf.device`` (TensorFlow 2 refuses them too)."""


def _index(value: str, spec: str) -> int | None:
    if value == "*":
        return None
    try:
        return int(value)
    except ValueError:
        raise ConfigurationError(
            f"tf.device: invalid device index {value!r} in the device spec {spec!r}; expected "
            "an integer (e.g. '/device:CPU:0')"
        ) from None


@dataclass(frozen=True)
class DeviceSpec:
    """A parsed device string (``tf.DeviceSpec``): job, replica, task, device type and index."""

    job: str | None = None
    replica: int | None = None
    task: int | None = None
    device_type: str | None = None
    device_index: int | None = None

    @classmethod
    def from_string(cls, spec: str | None) -> DeviceSpec:
        """Parse ``spec`` with TensorFlow's rules (``/job:x/replica:0/task:0/device:CPU:0``,
        ``/cpu:0``, ``gpu``...).

        Raises:
            ConfigurationError: an unknown attribute, several device types or a bad index (a
                ``ValueError``, as in TensorFlow).
        """
        fields: dict[str, Any] = {}
        for part in (spec or "").split("/"):
            pieces = part.split(":")
            n, head = len(pieces), pieces[0]
            if n == 2 and head in ("job", "replica", "task"):
                fields[head] = pieces[1] if head == "job" else _index(pieces[1], spec or "")
            elif n in (1, 2) and head.upper() in _SHORT_FORM_TYPES or (n == 3 and head == "device"):
                if "device_type" in fields:
                    raise ConfigurationError(
                        f"Multiple device types are not allowed while parsing the device spec: "
                        f"{spec}."
                    )
                kind, index = (head.upper(), pieces[1:]) if n < 3 else (pieces[1], pieces[2:])
                fields["device_type"] = kind
                fields["device_index"] = _index(index[0], spec or "") if index else None
            elif head:
                raise ConfigurationError(
                    f"Unknown attribute '{head}' is encountered while parsing the device spec: "
                    f"'{spec}'."
                )
        return cls(**fields)

    def to_string(self) -> str:
        """The canonical string (``/job:localhost/replica:0/task:0/device:CPU:0`` form)."""
        fields = (("job", self.job), ("replica", self.replica), ("task", self.task))
        out = "".join(f"/{key}:{value}" for key, value in fields if value is not None)
        if self.device_type is not None:
            index = "*" if self.device_index is None else self.device_index
            out += f"/device:{self.device_type}:{index}"
        return out


@contextlib.contextmanager
def device(device_name: str | None) -> Iterator[None]:
    """``tf.device``: a placement scope; parsed and recorded, without effect on the simulation.

    Raises:
        DeviceFunctionError: a function instead of a string (TensorFlow 2's ``RuntimeError``).
        ConfigurationError: a malformed device string (TensorFlow's ``ValueError``).
    """
    if callable(device_name):
        raise DeviceFunctionError("tf.device does not support functions.")
    if device_name is not None and not isinstance(device_name, str):
        raise ConfigurationError(
            f"Expecting a string device name. Got {type(device_name)}({device_name})"
        )
    _STACK.append(DeviceSpec.from_string(device_name))
    try:
        yield
    finally:
        _STACK.pop()


def current_device() -> str:
    """The device string of the innermost ``tf.device`` scope ("" outside any)."""
    return _STACK[-1].to_string() if _STACK else ""
