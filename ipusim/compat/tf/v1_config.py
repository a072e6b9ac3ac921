"""``tf.compat.v1.ConfigProto`` and its ``GPUOptions`` / ``GraphOptions``: a TF1 session's
configuration, as the protocol-buffer messages behave.

Fields have protobuf's defaults; setting an unknown field raises ``ValueError``
(:class:`ConfigurationError`) and a wrongly typed scalar ``TypeError``; sub-messages exist from
the start (``config.gpu_options.allow_growth = True``); ``device_count`` is a map and the
repeated fields are lists; ``str()`` is protobuf's text format of the fields that differ from
their defaults. ipusim runs no TensorFlow runtime, so nothing reads these values: the IPU system
is configured by ``IPUConfig``. The deeper messages (``rewrite_options``, ``experimental``, ...)
keep whatever fields are set without checking their names.
S: tensorflow/core/protobuf/config.proto (``DESCRIPTOR.fields`` of TF 2.21).
"""

from __future__ import annotations

from typing import Any, ClassVar

from ipusim.errors import ConfigurationError, InvalidTypeError

__all__ = ["ConfigProto", "GPUOptions", "GraphOptions"]

_MAP, _LIST = "map", "list"


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value) if isinstance(value, float) else str(value)


class _Message:
    """A protobuf message: ``FIELDS`` maps each field, in field-number order, to its scalar type
    (``int``, ``float``, ``bool``, ``str``), a message class, ``"map"`` or ``"list"``."""

    FIELDS: ClassVar[dict[str, Any]] = {}
    _OPEN = False  # accept any field name (messages ipusim does not describe)

    def __init__(self, **fields: Any) -> None:
        for name, kind in self.FIELDS.items():
            object.__setattr__(self, name, self._default(kind))
        for name, value in fields.items():
            setattr(self, name, value)

    @staticmethod
    def _default(kind: Any) -> Any:
        return {_MAP: dict, _LIST: list}.get(kind, kind)()

    def __setattr__(self, name: str, value: Any) -> None:
        kind = self.FIELDS.get(name)
        if kind is None and not self._OPEN:
            raise ConfigurationError(
                f'Protocol message {type(self).__name__} has no "{name}" field.'
            )
        expected = None
        if kind in (int, float) and (isinstance(value, bool) or not isinstance(value, int | float)):
            expected = "a number"
        elif kind is int and isinstance(value, float):
            expected = "an integer"
        elif kind in (bool, str) and not isinstance(value, kind):
            expected = f"a {kind.__name__}"
        if expected is not None:
            raise InvalidTypeError(
                f"{type(self).__name__}.{name}: expected {expected}, received {value!r}"
            )
        if kind is float:
            value = float(value)
        object.__setattr__(self, name, value)

    def _set_fields(self) -> list[tuple[str, Any]]:
        names = list(self.FIELDS) + [n for n in vars(self) if n not in self.FIELDS]
        found = []
        for name in names:
            value = getattr(self, name)
            kind = self.FIELDS.get(name)
            empty = isinstance(value, _Message) and not value._set_fields()
            if kind is not None and (value == self._default(kind) or empty):
                continue
            found.append((name, value))
        return found

    def _lines(self, indent: str) -> list[str]:
        lines = []
        for name, value in self._set_fields():
            if isinstance(value, _Message):
                lines += [f"{indent}{name} {{", *value._lines(indent + "  "), f"{indent}}}"]
            elif isinstance(value, dict):
                for key, item in value.items():
                    lines += [f"{indent}{name} {{", f"{indent}  key: {_text(key)}"]
                    lines += [f"{indent}  value: {_text(item)}", f"{indent}}}"]
            elif isinstance(value, list):
                lines += [f"{indent}{name}: {_text(item)}" for item in value]
            else:
                lines.append(f"{indent}{name}: {_text(value)}")
        return lines

    def __str__(self) -> str:
        return "".join(line + "\n" for line in self._lines(""))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={v!r}' for n, v in self._set_fields())})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._set_fields() == other._set_fields()

    __hash__ = None  # type: ignore[assignment]  # mutable, as protobuf messages


class _OpenMessage(_Message):
    """A message whose fields ipusim does not list (kept as set, unchecked)."""

    _OPEN = True


class GPUOptions(_Message):
    """``tf.compat.v1.GPUOptions`` (there is no GPU in ipusim: kept, never read)."""

    FIELDS: ClassVar[dict[str, Any]] = {
        "per_process_gpu_memory_fraction": float,
        "allow_growth": bool,
        "allocator_type": str,
        "deferred_deletion_bytes": int,
        "visible_device_list": str,
        "polling_active_delay_usecs": int,
        "polling_inactive_delay_msecs": int,
        "force_gpu_compatible": bool,
        "experimental": _OpenMessage,
    }


class GraphOptions(_Message):
    """``tf.compat.v1.GraphOptions`` (graph optimisation switches: kept, never read)."""

    FIELDS: ClassVar[dict[str, Any]] = {
        "enable_recv_scheduling": bool,
        "optimizer_options": _OpenMessage,
        "build_cost_model": int,
        "build_cost_model_after": int,
        "infer_shapes": bool,
        "place_pruned_graph": bool,
        "enable_bfloat16_sendrecv": bool,
        "timeline_step": int,
        "rewrite_options": _OpenMessage,
    }


class ConfigProto(_Message):
    """``tf.compat.v1.ConfigProto(**fields)`` (see the module docstring)."""

    FIELDS: ClassVar[dict[str, Any]] = {
        "device_count": _MAP,
        "intra_op_parallelism_threads": int,
        "inter_op_parallelism_threads": int,
        "use_per_session_threads": bool,
        "session_inter_op_thread_pool": _LIST,
        "placement_period": int,
        "device_filters": _LIST,
        "gpu_options": GPUOptions,
        "pluggable_device_options": GPUOptions,
        "allow_soft_placement": bool,
        "log_device_placement": bool,
        "graph_options": GraphOptions,
        "operation_timeout_in_ms": int,
        "rpc_options": _OpenMessage,
        "cluster_def": _OpenMessage,
        "isolate_session_state": bool,
        "share_cluster_devices_in_session": bool,
        "experimental": _OpenMessage,
    }
