"""``ipu.functional_ops`` (also ``ipu.outlined_function``): outlined functions.

On the IPU an outlined function is compiled once and called wherever it is used, trading the
cost of passing its arguments for code memory. ipusim traces the function at each call instead
(inlined): the numbers are the same; the code-memory saving and the call overhead of outlining
are not modelled (the memory report's code estimate is ipusim's own, see docs/).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ipusim.errors import InvalidTypeError

__all__ = ["outlined_function"]


def outlined_function(
    func: Callable[..., Any] | None = None,
    unique_sharding: bool = False,
    keep_input_layouts: bool | None = None,
    name: str | None = None,
) -> Any:
    """Mark ``func`` as an outlined function; usable as ``@outlined_function`` or
    ``@outlined_function(name=...)``.

    Args:
        func: the function (its arguments and results are tensors).
        unique_sharding: accepted for compatibility (one shard in ipusim).
        keep_input_layouts: accepted for compatibility (tensor layouts are not simulated).
        name: accepted for compatibility.

    Raises:
        TypeError: ``func`` is not callable.
    """
    del unique_sharding, keep_input_layouts, name

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(fn):
            raise InvalidTypeError(f"outlined_function expects a function, received {fn!r}")

        @functools.wraps(fn)
        def outlined(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **kwargs)

        outlined._ipusim_outlined = True  # type: ignore[attr-defined]
        return outlined

    return decorate if func is None else decorate(func)
