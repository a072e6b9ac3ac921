"""The step arithmetic recurrent layers and cells share: the gates of an LSTM or GRU step (fused
gate ops when the kernels compute both activations, element-wise ops otherwise), the products of
a step's input or state with the kernels (per gate under Keras' ``implementation=1`` masks), and
LSTM's forget-gate bias initialiser."""

from __future__ import annotations

from typing import Any

import numpy as np

from ipusim.graph.ops import math as m
from ipusim.graph.ops import nn, shape
from ipusim.graph.ops import rnn as rnn_ops
from ipusim.keras import activations


def fused_names(layer: Any) -> tuple[str | None, str | None]:
    """The Keras names of ``layer``'s activation and recurrent activation when the fused gate
    kernels compute both (tanh, sigmoid, hard_sigmoid, relu, linear), else (None, None): the
    gates are then built from element-wise ops (any activation, a user's function too)."""
    names = []
    for fn in (layer.activation, layer.recurrent_activation):
        try:
            name = activations.serialize(fn)
        except ValueError:
            name = None
        names.append(name if name in rnn_ops.CELL_ACTIVATIONS else None)
    return (names[0], names[1]) if None not in names else (None, None)


def lstm_gates(layer: Any, z: Any, c_prev: Any) -> tuple[Any, Any]:
    """``(h, c)`` of an LSTM step from the pre-activations ``z`` (``layer``: LSTM or LSTMCell)."""
    if layer._act_name is not None:
        return rnn_ops.lstm_cell(
            z, c_prev, activation=layer._act_name, recurrent_activation=layer._rec_name
        )
    units = layer.units
    i, f, g, o = (shape.slice_axis(z, k * units, units, 1) for k in range(4))
    rec, act = layer.recurrent_activation, layer.activation
    c = m.add(m.multiply(rec(f), c_prev), m.multiply(rec(i), act(g)))
    return m.multiply(rec(o), act(c)), c


def forget_bias_initializer(base: Any, units: int) -> Any:
    """Keras' ``unit_forget_bias``: ``base``'s values with the forget gate's (the second
    quarter) set to 1."""

    def forget_one(shape: tuple[int, ...], dtype: Any = None) -> Any:
        values = np.asarray(base((4 * units,), dtype=dtype))
        values[units : 2 * units] = 1.0
        return values

    return forget_one


def gru_step_weights(layer: Any) -> dict[str, Any]:
    """The recurrent weights a GRU step reads (``layer``: a GRU or GRUCell)."""
    units, kernel, bias = layer.units, layer.recurrent_kernel, layer.bias
    if layer.reset_after:
        if bias is not None:
            bias = shape.reshape(shape.slice_axis(bias, 1, 1, 0), (-1,))
        return {"recurrent_kernel": kernel, "recurrent_bias": bias}
    return {
        "u_zr": shape.slice_axis(kernel, 0, 2 * units, 1),
        "u_h": shape.slice_axis(kernel, 2 * units, units, 1),
    }


def gru_step(layer: Any, x_t: Any, h_prev: Any, w: dict[str, Any]) -> Any:
    """One GRU step from ``x_t = x·W + b_input`` (``layer``: a GRU or GRUCell)."""
    h_in, units, amp = w.get("h_in"), layer.units, getattr(layer, "_amp", {})
    if layer.reset_after:
        hg = recurrent_product(h_prev, w["recurrent_kernel"], h_in, units, amp)
        if w["recurrent_bias"] is not None:
            hg = nn.bias_add(hg, w["recurrent_bias"])
        if layer._act_name is not None:
            return rnn_ops.gru_cell(
                x_t, hg, h_prev, activation=layer._act_name, recurrent_activation=layer._rec_name
            )
        units = layer.units
        x_z, x_r, x_h = (shape.slice_axis(x_t, k * units, units, 1) for k in range(3))
        h_z, h_r, h_h = (shape.slice_axis(hg, k * units, units, 1) for k in range(3))
        z = layer.recurrent_activation(m.add(x_z, h_z))
        r = layer.recurrent_activation(m.add(x_r, h_r))
        cand = layer.activation(m.add(x_h, m.multiply(r, h_h)))
        return m.add(m.multiply(z, h_prev), m.multiply(m.subtract(1.0, z), cand))
    u_zr, u_h = w["u_zr"], w["u_h"]
    x_zr = shape.slice_axis(x_t, 0, 2 * units, 1)
    x_h = shape.slice_axis(x_t, 2 * units, units, 1)
    zr = layer.recurrent_activation(m.add(x_zr, recurrent_product(h_prev, u_zr, h_in, units, amp)))
    z = shape.slice_axis(zr, 0, units, 1)
    r = shape.slice_axis(zr, units, units, 1)
    h_h = h_prev if h_in is None else h_in[-1]
    cand = layer.activation(m.add(x_h, nn.matmul(m.multiply(r, h_h), u_h, **amp)))
    return m.add(cand, m.multiply(z, m.subtract(h_prev, cand)))


def recurrent_product(
    h_prev: Any, kernel: Any, h_in: list[Any] | None, units: int, amp: dict[str, Any] | None = None
) -> Any:
    """``h_prev · kernel``, or with per-gate masked states ``h_in``, each gate's columns of the
    kernel times that gate's state (Keras ``implementation=1``), joined."""
    amp = amp or {}  # the products' own availableMemoryProportion (PopnnLSTM / PopnnGRU)
    if h_in is None:
        return nn.matmul(h_prev, kernel, **amp)
    if len(h_in) == 1:
        return nn.matmul(h_in[0], kernel, **amp)
    gates = kernel.shape[-1] // units
    return shape.concat(
        [
            nn.matmul(h_in[g], shape.slice_axis(kernel, g * units, units, 1), **amp)
            for g in range(gates)
        ],
        axis=-1,
    )
