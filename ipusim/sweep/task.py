"""What runs for one configuration, in whichever process runs it, and the record it produces.

:func:`execute` calls the workload on one configuration and always returns a record (a plain,
JSON-ready dict); it never raises for an ordinary exception. A record is also the content of the
configuration's result file::

    {"format": "ipusim-sweep-result", "version": 1, "key": "3f2a...", "workload": "mlp_timing",
     "config": {...}, "row": {...figures...}, "oom": false, "oom_reason": "",
     "error": "", "traceback": ""}
"""

from __future__ import annotations

import json
import math
import threading
import traceback
from collections.abc import Mapping
from typing import Any

from ipusim.errors import ConfigurationError, InvalidTypeError
from ipusim.sweep.registry import Workload

__all__ = ["RECORD_FORMAT", "RECORD_VERSION", "error_record", "execute", "make_record"]

RECORD_FORMAT = "ipusim-sweep-result"
RECORD_VERSION = 1

#: Columns the runner adds to every row; a workload may set ``oom`` and ``oom_reason`` itself.
STATUS_COLUMNS = ("oom", "oom_reason", "error", "config_key")
_RUNNER_ONLY = ("error", "config_key")

# One configuration at a time per process: the IPU configuration and the Keras seed stream are
# process-wide, and a Dask worker may run several tasks in threads.
_RUN_LOCK = threading.Lock()


def make_record(
    key: str,
    workload: str,
    config: Mapping[str, Any],
    row: Mapping[str, Any] | None = None,
    oom: bool = False,
    oom_reason: str = "",
    error: str = "",
    trace_text: str = "",
) -> dict[str, Any]:
    """A result record, normalised through JSON so a fresh record equals one read from disk."""
    record = {
        "format": RECORD_FORMAT,
        "version": RECORD_VERSION,
        "key": key,
        "workload": workload,
        "config": dict(config),
        "row": dict(row or {}),
        "oom": bool(oom),
        "oom_reason": str(oom_reason),
        "error": str(error),
        "traceback": str(trace_text),
    }
    normalised: dict[str, Any] = json.loads(json.dumps(record, allow_nan=True))
    return normalised


def error_record(
    key: str, workload: str, config: Mapping[str, Any], exc: BaseException
) -> dict[str, Any]:
    """The record of a configuration whose run raised ``exc`` (not an out-of-memory error)."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return make_record(key, workload, config, error=f"{type(exc).__name__}: {exc}", trace_text=text)


def _scalar(name: str, value: Any) -> Any:
    if hasattr(value, "item") and not isinstance(value, str | bytes):
        value = value.item()  # NumPy scalars
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    raise InvalidTypeError(
        f"the workload returned {name} = {value!r} ({type(value).__name__}); every figure must "
        "be a number, str, bool or None"
    )


def _check_row(row: Any, config: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(row, Mapping):
        raise InvalidTypeError(
            f"the workload must return a dict of figures (one row); it returned {row!r}"
        )
    out = {}
    for name, value in row.items():
        if not isinstance(name, str) or not name:
            raise InvalidTypeError(
                f"the workload returned a figure named {name!r}; names must be str"
            )
        if name in config:
            raise ConfigurationError(
                f"the workload returned a figure {name!r}, which is also a configuration key; "
                "rename the figure"
            )
        if name in _RUNNER_ONLY:
            raise ConfigurationError(
                f"the workload returned a figure {name!r}, a column the sweep fills itself; "
                "rename the figure"
            )
        out[name] = _scalar(name, value)
    return out


def _is_out_of_memory(exc: BaseException) -> bool:
    from ipusim.errors import OutOfMemoryError

    return isinstance(exc, OutOfMemoryError)


def execute(fn: Workload, config: dict[str, Any], key: str, workload: str) -> dict[str, Any]:
    """Run ``fn(config)`` and return its record.

    An :class:`~ipusim.lowering.memory.OutOfMemoryError` gives a record with ``oom`` True and
    the message as ``oom_reason``; any other exception a record with ``error`` (type and
    message) and ``traceback``. ``KeyboardInterrupt`` and ``SystemExit`` propagate.

    Args:
        fn: the workload.
        config: the configuration (a copy is passed to ``fn``).
        key: the configuration's key (see :func:`ipusim.sweep.study.config_key`).
        workload: the workload's label, stored in the record.
    """
    try:
        with _RUN_LOCK:
            row = fn(json.loads(json.dumps(config)))
        row = _check_row(row, config)
    except Exception as exc:
        if _is_out_of_memory(exc):
            return make_record(key, workload, config, oom=True, oom_reason=str(exc))
        return error_record(key, workload, config, exc)
    oom = row.pop("oom", False)
    oom_reason = row.pop("oom_reason", "")
    return make_record(
        key,
        workload,
        config,
        row,
        oom=bool(oom),
        oom_reason="" if oom_reason is None else oom_reason,
    )
