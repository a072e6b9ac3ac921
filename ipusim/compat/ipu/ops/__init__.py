"""``ipu.ops``: the IPU op modules ported scripts use (``ipu.ops.pipelining_ops``; ``nn_ops``,
``embedding_ops`` and ``rand_ops`` load the custom-loop runtime on first use)."""

import importlib

from ipusim.compat.ipu.ops import pipelining_ops

__all__ = ["embedding_ops", "nn_ops", "pipelining_ops", "rand_ops"]

_LAZY = ("embedding_ops", "nn_ops", "rand_ops")


def __getattr__(name: str) -> object:
    if name in _LAZY:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
