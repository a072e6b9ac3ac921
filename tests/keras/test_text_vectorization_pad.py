"""TextVectorization's ``pad_to_max_tokens`` needs ``max_tokens`` (Keras' IndexLookup check)."""

import numpy as np
import pytest

from ipusim.errors import ConfigurationError
from ipusim.keras import layers as L


def test_pad_to_max_tokens_without_max_tokens_is_refused_at_construction() -> None:
    with pytest.raises(
        ConfigurationError, match="pad_to_max_tokens=True pads every output to max_tokens"
    ):
        L.TextVectorization(pad_to_max_tokens=True, output_mode="multi_hot")


def test_pad_to_max_tokens_pads_the_encoding_to_max_tokens() -> None:
    layer = L.TextVectorization(max_tokens=6, pad_to_max_tokens=True, output_mode="multi_hot")
    layer.adapt(np.array(["a b", "c"]))
    out = np.asarray(layer(np.array(["a c"])))
    assert out.shape == (1, 6)
