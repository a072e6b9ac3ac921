"""``ipu_tensorflow_addons.keras.layers``: the Keras layers, with the IPU's recurrent layers under
the names that package gives them (``LSTM`` is ``PopnnLSTM``, ``GRU`` is ``PopnnGRU``, as in
graphcore/ipu_tensorflow_addons ``keras/layers/rnn.py``). Every other name is
:mod:`ipusim.keras.layers`' own object.
"""

from __future__ import annotations

from typing import Any

from ipusim.keras import layers as _layers
from ipusim.keras.layers.popnn import PopnnGRU, PopnnLSTM

LSTM = PopnnLSTM
GRU = PopnnGRU

__all__ = ["GRU", "LSTM", "PopnnGRU", "PopnnLSTM"]


def __getattr__(name: str) -> Any:
    try:
        return getattr(_layers, name)
    except AttributeError:
        raise AttributeError(
            f"module 'ipu_tensorflow_addons.keras.layers' has no attribute {name!r}"
        ) from None
