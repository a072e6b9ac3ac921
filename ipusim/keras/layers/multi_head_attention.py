"""MultiHeadAttention (tf.keras 2): projections by EinsumDense sublayers named query, key, value
and attention_output, scaled dot-product attention per head, optional masks and dropout.

ipusim supports the default ``attention_axes``: every axis between the batch and the features
(rank-3 ``(batch, length, features)`` as transformers use, or higher ranks, whose middle axes are
flattened into one). The attention itself is two batched matmuls per head group, the projections
one matmul each.
"""

from __future__ import annotations

import math
from typing import Any

from ipusim.errors import UnsupportedError
from ipusim.graph.ops import math as m
from ipusim.graph.ops import nn
from ipusim.graph.ops import shape as s
from ipusim.graph.ops.linalg import batch_matmul
from ipusim.keras import backend, initializers
from ipusim.keras.engine.layer import Layer, config_of
from ipusim.keras.keyword_init import fields
from ipusim.keras.layers.attention import causal_mask, masked_softmax, merge_masks
from ipusim.keras.layers.core import _positive_int, no_regularizers
from ipusim.keras.layers.einsum_dense import EinsumDense


class MultiHeadAttention(Layer):
    """Multi-head attention as in "Attention Is All You Need".

    Args:
        num_heads: number of heads. key_dim: size of each head for query and key.
        value_dim: size of each head for value (default key_dim).
        dropout: dropout rate on the attention probabilities (training only).
        use_bias: projections have biases.
        output_shape: the output's last size (default: the query's last size).
        attention_axes: None, or every axis between the batch and the features (the default).

    Call: ``layer(query, value, key=None, attention_mask=None, return_attention_scores=False,
    training=None, use_causal_mask=False)``; ``attention_mask`` is a boolean
    ``(batch, target_length, source_length)`` tensor, True where attention is allowed.
    """

    def __init__(
        self,
        num_heads: int,
        key_dim: int,
        value_dim: int | None = None,
        dropout: float = 0.0,
        use_bias: bool = True,
        output_shape: Any = None,
        attention_axes: Any = None,
        kernel_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        kernel_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        kernel_constraint: Any = None,
        bias_constraint: Any = None,
        softmax_robust_masking: bool = False,
        **kwargs: Any,
    ) -> None:
        for key in ("query_shape", "key_shape", "value_shape"):
            kwargs.pop(key, None)  # saved by tf.keras' get_config; the call decides the shapes
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        no_regularizers("MultiHeadAttention", locals())
        if softmax_robust_masking:
            raise UnsupportedError(
                "MultiHeadAttention: softmax_robust_masking=True is not simulated by ipusim"
            )
        if attention_axes is not None:
            attention_axes = (
                [attention_axes] if isinstance(attention_axes, int) else list(attention_axes)
            )
        name = "MultiHeadAttention"
        self.num_heads = _positive_int(name, "num_heads", num_heads)
        self.key_dim = _positive_int(name, "key_dim", key_dim)
        self.value_dim = _positive_int(name, "value_dim", value_dim) if value_dim else self.key_dim
        self.dropout = float(dropout)
        self.use_bias = bool(use_bias)
        self.output_shape_arg = output_shape
        self.attention_axes = attention_axes
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self._op_seed = backend.next_seed()
        self._sublayers: dict[str, EinsumDense] | None = None

    def _dense(self, name: str, equation: str, shape: list[int | None], bias: str) -> EinsumDense:
        return EinsumDense(
            equation,
            output_shape=shape,
            bias_axes=bias if self.use_bias else None,
            kernel_initializer=initializers.get(initializers.serialize(self.kernel_initializer)),
            bias_initializer=initializers.get(initializers.serialize(self.bias_initializer)),
            name=f"{self.name}/{name}",
            dtype=self._dtype_policy,
        )

    def _make_sublayers(self, query_dim: int) -> dict[str, EinsumDense]:
        out = self.output_shape_arg
        out_shape = (
            [None, query_dim] if out is None else [None, *([out] if isinstance(out, int) else out)]
        )
        if len(out_shape) != 2:
            raise UnsupportedError(
                f"MultiHeadAttention: ipusim supports an int output_shape, received {out!r}"
            )
        heads, k, v = self.num_heads, self.key_dim, self.value_dim
        layers = {
            "query": self._dense("query", "abc,cde->abde", [None, heads, k], "de"),
            "key": self._dense("key", "abc,cde->abde", [None, heads, k], "de"),
            "value": self._dense("value", "abc,cde->abde", [None, heads, v], "de"),
            "attention_output": self._dense("attention_output", "abcd,cde->abe", out_shape, "e"),
        }
        # Public attributes, so the sublayers and their weights are tracked in Keras' order.
        self.query_dense, self.key_dense = layers["query"], layers["key"]
        self.value_dense, self.output_dense = layers["value"], layers["attention_output"]
        return layers

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not args and "query" in kwargs:  # mha(query=q, value=v) as Keras allows
            args = (kwargs.pop("query"),)
        return super().__call__(*args, **kwargs)

    def call(
        self,
        query: Any,
        value: Any,
        key: Any = None,
        attention_mask: Any = None,
        return_attention_scores: bool = False,
        training: bool | None = None,
        use_causal_mask: bool = False,
    ) -> Any:
        key = value if key is None else key
        ranks = {query.ndim, value.ndim, key.ndim}
        if len(ranks) != 1 or query.ndim < 3:
            raise UnsupportedError(
                "MultiHeadAttention: ipusim needs query, value and key of the same rank >= 3, "
                f"received shapes {query.shape}, {value.shape} and {key.shape}"
            )
        self._check_axes(query.ndim)
        # rank > 3: attention over every axis between batch and features, flattened into one
        attend = self._flattened if query.ndim > 3 else self._attend
        return attend(
            query, value, key, attention_mask, return_attention_scores, training, use_causal_mask
        )

    def _attend(
        self,
        query: Any,
        value: Any,
        key: Any,
        attention_mask: Any,
        scores_out: bool,
        training: bool | None,
        causal: bool,
    ) -> Any:
        """Scaled dot-product attention of rank-3 query, value and key."""
        if self._sublayers is None:
            self._sublayers = self._make_sublayers(query.shape[-1])
        q = self.query_dense(query)  # (B, T, N, H)
        k = self.key_dense(key)  # (B, S, N, H)
        v = self.value_dense(value)  # (B, S, N, Hv)
        q = m.multiply(q, 1.0 / math.sqrt(float(self.key_dim)))
        scores = batch_matmul(
            s.transpose(q, (0, 2, 1, 3)), s.transpose(k, (0, 2, 1, 3)), transpose_b=True
        )  # (B, N, T, S)
        mask = None if attention_mask is None else s.expand_dims(attention_mask, 1)
        if causal:
            mask = merge_masks(mask, causal_mask(query.shape[1], value.shape[1]))
        probs = masked_softmax(scores, mask)
        dropped = probs
        if training and self.dropout > 0:
            dropped = nn.dropout(probs, rate=self.dropout, seed=self._op_seed)
        context = batch_matmul(dropped, s.transpose(v, (0, 2, 1, 3)))  # (B, N, T, Hv)
        output = self.output_dense(s.transpose(context, (0, 2, 1, 3)))
        return (output, probs) if scores_out else output

    def _check_axes(self, rank: int) -> None:
        """ipusim attends over all the axes between the batch and the features (the default)."""
        if self.attention_axes is None:
            return
        axes = sorted(a % rank for a in self.attention_axes)
        if axes != list(range(1, rank - 1)):
            raise UnsupportedError(
                f"MultiHeadAttention: ipusim attends over every axis between the batch and the "
                f"features (attention_axes=None, i.e. {tuple(range(1, rank - 1))} here); "
                f"received attention_axes={self.attention_axes}"
            )

    def _flattened(
        self,
        query: Any,
        value: Any,
        key: Any,
        attention_mask: Any,
        scores: bool,
        training: bool | None,
        causal: bool,
    ) -> Any:
        """Rank > 3: the projections act on the last axis only, so attending over all the
        middle axes is attending over them flattened into one (Keras' default axes)."""
        if causal:
            raise UnsupportedError("MultiHeadAttention: use_causal_mask needs rank-3 inputs")

        def flat(t: Any) -> Any:
            return s.reshape(t, (-1, math.prod(t.shape[1:-1]), t.shape[-1]))

        mask = attention_mask
        if mask is not None:
            target = math.prod(query.shape[1:-1])
            mask = s.reshape(mask, (-1, target, math.prod(value.shape[1:-1])))
        out = self._attend(flat(query), flat(value), flat(key), mask, scores, training, False)
        output, probs = out if scores else (out, None)
        output = s.reshape(output, (-1, *query.shape[1:-1], output.shape[-1]))
        if not scores:
            return output
        shape = (-1, self.num_heads, *query.shape[1:-1], *value.shape[1:-1])
        return output, s.reshape(probs, shape)

    def compute_output_shape(
        self, query_shape: Any, value_shape: Any = None, key_shape: Any = None
    ) -> Any:
        """``(batch, target_length, output size)``: the output size is ``output_shape`` or the
        query's last size."""
        out = self.output_shape_arg
        size = query_shape[-1] if out is None else (out if isinstance(out, int) else out[-1])
        return (*tuple(query_shape)[:-1], size)

    def get_config(self) -> dict[str, Any]:
        config = super().get_config() | fields(self, "num_heads key_dim value_dim dropout use_bias")
        axes = {"output_shape": self.output_shape_arg, "attention_axes": self.attention_axes}
        return config | axes | config_of(self, "kernel_initializer bias_initializer")
