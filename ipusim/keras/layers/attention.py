"""Dense attention layers of tf.keras 2: Attention (Luong, dot or concat scores) and
AdditiveAttention (Bahdanau), and the masked softmax MultiHeadAttention shares with them.

Masks are taken when passed explicitly (``mask=[query_mask, value_mask]``, boolean tensors);
ipusim has no implicit Keras mask propagation (see :mod:`ipusim.keras.layers.core_extra`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError, UnsupportedError
from ipusim.graph.ops import math as m
from ipusim.graph.ops import nn
from ipusim.graph.ops import shape as s
from ipusim.graph.ops.linalg import batch_matmul
from ipusim.keras import backend
from ipusim.keras.engine.layer import Layer
from ipusim.keras.layers.core import check_rate

#: What tf.keras adds to masked-out scores: -1e9 in float32, -65504 (float16's lowest) in float16.
#: S (tf_keras/src/layers/attention/base_dense_attention.py, activation/softmax.py)
_MASKED = {"float16": 65504.0}
_MASKED_DEFAULT = 1.0e9


def causal_mask(rows: int | None, cols: int | None) -> np.ndarray:
    """Boolean lower-triangular ``(rows, cols)`` mask: query i sees keys j <= i."""
    if rows is None or cols is None:
        raise UnsupportedError(
            "a causal mask needs the query and key lengths known when the model is built; "
            f"received lengths {rows} and {cols}"
        )
    return np.tril(np.ones((rows, cols), dtype=bool))


def masked_softmax(scores: Any, mask: Any) -> Any:
    """``softmax(scores)`` with ``scores - big * (1 - mask)`` first, as tf.keras does."""
    if mask is not None:
        big = _MASKED.get(scores.dtype, _MASKED_DEFAULT)
        padding = m.subtract(1.0, m.cast(mask, scores.dtype))
        scores = m.subtract(scores, m.multiply(padding, big))
    return nn.softmax(scores, axis=-1)


def merge_masks(a: Any, b: Any) -> Any:
    """Logical and of two optional boolean masks (as floats multiplied, then back to bool)."""
    if a is None or b is None:
        return a if b is None else b
    return m.cast(m.multiply(m.cast(a, "float32"), m.cast(b, "float32")), "bool")


class _BaseDenseAttention(Layer):
    """Shared call of Attention and AdditiveAttention (tf.keras' BaseDenseAttention)."""

    def __init__(self, dropout: float = 0.0, **kwargs: Any) -> None:
        self.causal = bool(kwargs.pop("causal", False))
        super().__init__(**kwargs)
        self.dropout = check_rate(type(self).__name__, "dropout", dropout)
        self._op_seed = backend.next_seed()

    def _calculate_scores(self, query: Any, key: Any) -> Any:
        raise NotImplementedError

    def call(
        self,
        inputs: Any,
        mask: Any = None,
        training: bool | None = None,
        return_attention_scores: bool = False,
        use_causal_mask: bool = False,
    ) -> Any:
        if not isinstance(inputs, list | tuple) or len(inputs) not in (2, 3):
            raise ConfigurationError(
                f"{type(self).__name__} expects inputs [query, value] or [query, value, key]"
            )
        q, v = inputs[0], inputs[1]
        k = inputs[2] if len(inputs) > 2 else v
        q_mask, v_mask = (mask[0], mask[1]) if mask else (None, None)
        scores = self._calculate_scores(q, k)
        scores_mask = None if v_mask is None else s.expand_dims(v_mask, -2)
        if self.causal or use_causal_mask:
            scores_mask = merge_masks(scores_mask, causal_mask(*scores.shape[-2:]))
        weights = masked_softmax(scores, scores_mask)
        if training and self.dropout > 0:
            weights = nn.dropout(weights, rate=self.dropout, seed=self._op_seed)
        result = batch_matmul(weights, v)
        if q_mask is not None:
            result = m.multiply(result, m.cast(s.expand_dims(q_mask, -1), result.dtype))
        return (result, weights) if return_attention_scores else result

    def compute_output_shape(self, input_shape: Any) -> Any:
        return tuple(input_shape[0])

    _config_names = "dropout"


class Attention(_BaseDenseAttention):
    """Dot-product attention: ``softmax(q k^T) v`` (scores optionally scaled by a learned
    scalar, ``use_scale``); ``score_mode="concat"`` scores ``sum(tanh(q + k))``."""

    def __init__(self, use_scale: bool = False, score_mode: str = "dot", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if score_mode not in ("dot", "concat"):
            raise ConfigurationError(
                f'Received: score_mode={score_mode}. Acceptable values are: ["dot", "concat"]'
            )
        self.use_scale, self.score_mode = bool(use_scale), score_mode

    def build(self, input_shape: Any) -> None:
        ones = "ones"
        self.scale = self.add_weight("scale", (), initializer=ones) if self.use_scale else None
        self.concat_score_weight = (
            self.add_weight("concat_score_weight", (), initializer=ones)
            if self.score_mode == "concat"
            else None
        )
        self.built = True

    def _calculate_scores(self, query: Any, key: Any) -> Any:
        if self.score_mode == "dot":
            scores = batch_matmul(query, key, transpose_b=True)
            return scores if self.scale is None else m.multiply(scores, self.scale)
        pairs = m.add(s.expand_dims(query, -2), s.expand_dims(key, -3))
        if self.scale is not None:
            pairs = m.multiply(self.scale, pairs)
        return m.multiply(self.concat_score_weight, m.reduce_sum(m.tanh(pairs), axis=-1))

    _config_names = "use_scale score_mode"


class AdditiveAttention(_BaseDenseAttention):
    """Bahdanau attention: scores ``sum(scale * tanh(q + k))`` with a learned ``scale`` vector
    (``use_scale``, default True)."""

    def __init__(self, use_scale: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.use_scale = bool(use_scale)

    def build(self, input_shape: Any) -> None:
        dim = input_shape[1][-1]
        if self.use_scale and dim is None:
            raise ConfigurationError("AdditiveAttention needs the value's last axis known")
        self.scale = (
            self.add_weight("scale", (dim,), initializer="glorot_uniform")
            if self.use_scale
            else None
        )
        self.built = True

    def _calculate_scores(self, query: Any, key: Any) -> Any:
        tanh = m.tanh(m.add(s.expand_dims(query, -2), s.expand_dims(key, -3)))
        if self.scale is not None:
            tanh = m.multiply(self.scale, tanh)
        return m.reduce_sum(tanh, axis=-1)

    _config_names = "use_scale"
