"""The stack of active ``IPUStrategy`` scopes (per thread).

It lives apart from :mod:`ipusim.strategy` so that the custom-loop runtime (which ``strategy.run``
calls) can ask for the current strategy without importing the strategy module back.
"""

from __future__ import annotations

import threading
from typing import Any

_state = threading.local()


def scope_stack() -> list[Any]:
    """This thread's active strategies, innermost last."""
    if not hasattr(_state, "stack"):
        _state.stack = []
    stack: list[Any] = _state.stack
    return stack


def current_strategy() -> Any:
    """The innermost active IPUStrategy scope, or None."""
    stack = scope_stack()
    return stack[-1] if stack else None
